"""Session 39's journeys walked again as a new user on a fresh clone (after ``bash examples/quickstart.sh``), on both backends.

A folder holding a run and a byte-identical copy of it, the same folder again, a re-generated file of the same run,
the typical mistakes (an unknown goal, a wrong ``--kind``, a local path in a field, a broken URL, a file's name where
the goal's goes), and the events table refusing raw ``UPDATE``/``DELETE`` after all of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import sqlalchemy

from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
BASELINE, TREATMENT = DEMO / "04-run-baseline.json", DEMO / "05-run-treatment.json"
BROKEN_URL = "postgresql://nobody@127.0.0.1:1/x"


def _folder_with_a_copy(tmp_path: Path) -> Path:
    """``runs/``: the baseline as ``a.json``, its byte-identical copy ``b.json``, and the treatment."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(BASELINE, runs / "a.json")
    shutil.copy(BASELINE, runs / "b.json")
    shutil.copy(TREATMENT, runs / "05-run-treatment.json")
    return runs


def _reviewed_run_counts(url: str, goal: str) -> list[int]:
    show = invoke(url, "show", "--goal", goal, "--format", "json")
    assert show.exit_code == 0, show.output
    return [
        row["payload"]["reviewed_run_count"]
        for row in json.loads(show.stdout)["projections"]["review-verifier-attribution"]
    ]


def test_a_folder_with_a_copy_of_a_run_takes_it_once_and_the_ledger_stays_consistent(migrated_url, tmp_path):
    runs = _folder_with_a_copy(tmp_path)
    done = invoke(migrated_url, "ingest", "--goal", "fresh", str(runs))
    assert done.exit_code == 0, done.output
    assert f"- taken once: {runs / 'b.json'}: the same document as {runs / 'a.json'} in this batch\n" in done.stdout, (
        done.stdout
    )
    assert "- appended: 2 event(s); duplicates: 0" in done.stdout, done.stdout
    assert _reviewed_run_counts(migrated_url, "fresh") == [2]  # (the copy is not a third run)

    replay = invoke(migrated_url, "replay")
    assert replay.exit_code == 0 and "(0 of them changed)" in replay.stdout, replay.output
    audit = invoke(migrated_url, "audit")
    assert audit.exit_code == 0 and "# Audit: clean" in audit.stdout, audit.output


def test_the_same_folder_again_is_all_duplicates_and_appends_nothing(migrated_url, tmp_path):
    runs = _folder_with_a_copy(tmp_path)
    assert invoke(migrated_url, "ingest", "--goal", "fresh", str(runs)).exit_code == 0
    before = row_counts(migrated_url)
    again = invoke(migrated_url, "ingest", "--goal", "fresh", str(runs))
    assert again.exit_code == 0, again.output
    assert "- appended: 0 event(s); duplicates: 2\n" in again.stdout, again.stdout
    assert "- nothing new: every artifact is stored and this batch already groups them" in again.stdout
    assert "- appended " not in again.stdout
    assert row_counts(migrated_url) == before
    assert _reviewed_run_counts(migrated_url, "fresh") == [2]


def test_a_regenerated_file_of_the_same_run_in_a_later_ingest_is_a_new_observation(migrated_url, tmp_path):
    """docs/cli.md: "A re-generated file (new bytes, same content) is a new observation" (hash-chain.md §2: the same
    file is the SHA-256 of its bytes)."""
    runs = _folder_with_a_copy(tmp_path)
    assert invoke(migrated_url, "ingest", "--goal", "fresh", str(runs)).exit_code == 0
    document = json.loads(BASELINE.read_text())
    regenerated = tmp_path / "regenerated.json"
    regenerated.write_text(json.dumps(dict(reversed(list(document.items()))), indent=4))
    assert regenerated.read_bytes() != BASELINE.read_bytes() and json.loads(regenerated.read_text()) == document
    before = row_counts(migrated_url)
    done = invoke(migrated_url, "ingest", "--goal", "fresh", str(regenerated))
    assert done.exit_code == 0, done.output
    assert "- appended: 1 event(s); duplicates: 0 (artifacts; +1 ingest_batch event(s) grouping them)" in done.stdout, (
        done.stdout
    )
    appended = [line.split() for line in done.stdout.splitlines() if line.startswith("- appended ")]
    assert [(words[2], words[-1]) for words in appended] == [("run", str(regenerated))], done.stdout
    assert row_counts(migrated_url)["events"] == before["events"] + 2  # (the run and its batch)


def _mistakes(tmp_path: Path) -> dict[str, tuple[str, list[str], int, str]]:
    """Each mistake: (URL to use, arguments, exit code, words the one line on stderr holds)."""
    leak = tmp_path / "leak.json"
    leak.write_text(json.dumps({**json.loads(BASELINE.read_text()), "job_name": "/home/alice/secret.txt"}))
    shutil.copy(BASELINE, tmp_path / "run.json")
    return {
        "unknown goal": ("", ["history", "--goal", "nosuch"], 2, "no goal 'nosuch' in this ledger"),
        "wrong kind": ("", ["ingest", "--goal", "g", "--kind", "comparison", str(BASELINE)], 2, "--kind comparison"),
        "local path": ("", ["ingest", "--goal", "g", str(leak)], 1, "$.job_name of this run holds a local path"),
        "broken url": (
            BROKEN_URL,
            ["history", "--goal", "g"],
            2,
            "cannot use the ledger at postgresql://nobody@127.0.0.1:1/x",
        ),
        "goal is a file's name": (
            "",
            ["ingest", "--goal", "run.json", "run.json"],
            2,
            "its name is that of a file here",
        ),
    }


@pytest.mark.parametrize("mistake", ["unknown goal", "wrong kind", "local path", "broken url", "goal is a file's name"])
def test_a_typical_mistake_is_one_line_on_stderr_and_writes_nothing(migrated_url, tmp_path, monkeypatch, mistake):
    assert invoke(migrated_url, "ingest", "--goal", "fresh", str(BASELINE)).exit_code == 0
    monkeypatch.chdir(tmp_path)
    url, args, code, says = _mistakes(tmp_path)[mistake]
    before = row_counts(migrated_url)
    done = invoke(url or migrated_url, *args)
    assert done.exit_code == code, done.output
    assert len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr
    assert "Traceback" not in done.output
    assert "secret.txt" not in done.output  # (the rule is named, never the text)
    assert row_counts(migrated_url) == before


def test_after_the_journeys_events_refuse_update_and_delete(migrated_url, tmp_path):
    runs = _folder_with_a_copy(tmp_path)
    assert invoke(migrated_url, "ingest", "--goal", "fresh", str(runs)).exit_code == 0
    assert invoke(migrated_url, "ingest", "--goal", "fresh", str(runs)).exit_code == 0
    before = row_counts(migrated_url)
    engine = sqlalchemy.create_engine(migrated_url)
    try:
        for statement in ("UPDATE events SET kind = 'x'", "DELETE FROM events"):
            with pytest.raises(sqlalchemy.exc.DatabaseError, match="immutable"), engine.begin() as connection:
                connection.execute(sqlalchemy.text(statement))
    finally:
        engine.dispose()
    assert row_counts(migrated_url) == before
    audit = invoke(migrated_url, "audit")
    assert audit.exit_code == 0 and "# Audit: clean" in audit.stdout, audit.output
