"""Journeys the lead walked after the newcomer's afternoon, as a user types them (both backends)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import edit_in_sql, invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"



def test_a_folder_copied_from_a_mac_ingests_without_its_hidden_files(migrated_url, tmp_path):
    # A Mac leaves an AppleDouble `._name` beside every file it copies (binary, not JSON); editors and
    # git leave hidden files and folders too. A shell glob passes them over; so does a folder ingest.
    folder = tmp_path / "jobs"
    shutil.copytree(DEMO, folder)
    (folder / "._04-run-baseline.json").write_bytes(b"\x00\x05\x16\x07Mac OS X        \x00\x02")
    (folder / ".git").mkdir()
    (folder / ".git" / "config.json").write_text("not json")
    result = invoke(migrated_url, "ingest", "--goal", "g", str(folder), "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["appended_count"] == 6
    assert all("/." not in event["source"] for event in report["events"] if event["source"])


def test_history_since_after_until_is_refused_not_an_empty_table(migrated_url):
    assert invoke(migrated_url, "ingest", "--goal", "g", str(DEMO)).exit_code == 0
    counts = row_counts(migrated_url)
    for since, until in (("10", "5"), ("2026-12-02T10:00:00Z", "2026-12-01T10:00:00Z")):
        result = invoke(migrated_url, "history", "--goal", "g", "--since", since, "--until", until)
        assert result.exit_code == 2
        assert f"--since '{since}' is after --until '{until}'" in result.output
    assert invoke(migrated_url, "history", "--goal", "g", "--since", "3", "--until", "3", "--format", "json").exit_code == 0
    assert row_counts(migrated_url) == counts


def test_replay_says_it_repaired_a_stored_count_instead_of_reporting_nothing_changed(migrated_url):
    # A count edited in SQL: audit names it, and the replay that mends it says so (it used to print
    # "0 of them changed", as if the replay had found the ledger healthy).
    assert invoke(migrated_url, "ingest", "--goal", "g", str(DEMO)).exit_code == 0
    edit_in_sql(migrated_url, "UPDATE projection_counts SET row_count = row_count + 1 WHERE goal_id = 'g' AND projection = 'review-claim'")
    assert invoke(migrated_url, "audit").exit_code == 1
    result = invoke(migrated_url, "replay")
    assert result.exit_code == 0 and "(0 of them changed; 1 stored row count(s) repaired)" in result.stdout
    assert json.loads(invoke(migrated_url, "replay", "--format", "json").stdout)["counts_repaired"] == 0
    assert "repaired" not in invoke(migrated_url, "replay").stdout
    assert invoke(migrated_url, "audit").exit_code == 0


def test_replay_says_it_rebuilt_a_tampered_stream_head(migrated_url):
    # A head edited in SQL: audit names it (an ingest would refuse the goal), and the replay that rebuilds it says so
    # instead of "0 of them changed" (the rows were right; the head was not).
    assert invoke(migrated_url, "ingest", "--goal", "g", str(DEMO)).exit_code == 0
    edit_in_sql(migrated_url, "UPDATE stream_heads SET last_version = 99 WHERE goal_id = 'g'")
    assert invoke(migrated_url, "audit").exit_code == 1
    result = invoke(migrated_url, "replay")
    assert result.exit_code == 0 and "(0 of them changed; 1 stream head(s) repaired)" in result.stdout
    assert "repaired" not in invoke(migrated_url, "replay").stdout
    assert invoke(migrated_url, "audit").exit_code == 0
