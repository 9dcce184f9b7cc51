"""A file ingested again, alone or regrouped, changes nothing (the lead's walk of a newcomer's mistakes).

Found by hand: after the demo's runs and comparison were ingested as one
batch, ingesting ``06-comparison.json`` again recorded a batch of one
comparison, whose claim review (derived without the runs) became the goal's
latest and changed its claim strength. A batch whose artifacts are all stored
and already grouped together is now not recorded again; a new grouping still is.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
BASELINE, TREATMENT, COMPARISON = (str(DEMO / name) for name in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json"))


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _summary(url: str) -> dict:
    (goal,) = _json(invoke(url, "goals", "--format", "json"))["goals"]
    return goal


def test_a_repeated_comparison_file_changes_nothing(migrated_url):
    first = _json(invoke(migrated_url, "ingest", "--goal", "g", BASELINE, TREATMENT, COMPARISON, "--format", "json"))
    before, counts = _summary(migrated_url), row_counts(migrated_url)

    again = _json(invoke(migrated_url, "ingest", "--goal", "g", COMPARISON, "--format", "json"))
    assert (again["appended_count"], again["duplicate_count"]) == (0, 1)
    assert again["batch_status"] == "duplicate" and again["batch_event_id"] == first["batch_event_id"]
    assert row_counts(migrated_url) == counts
    assert _summary(migrated_url) == before

    text = invoke(migrated_url, "ingest", "--goal", "g", COMPARISON, BASELINE)
    assert text.exit_code == 0 and "nothing new" in text.output
    assert row_counts(migrated_url) == counts
    assert "clean" in invoke(migrated_url, "audit").output


def test_a_dry_run_of_a_repeated_file_says_it_would_add_nothing(migrated_url):
    invoke(migrated_url, "ingest", "--goal", "g", BASELINE, TREATMENT, COMPARISON)
    counts = row_counts(migrated_url)
    report = _json(invoke(migrated_url, "ingest", "--goal", "g", "--dry-run", TREATMENT, "--format", "json"))
    assert report["batch_status"] == "duplicate" and report["appended_count"] == 0
    assert row_counts(migrated_url) == counts


def test_stored_artifacts_grouped_anew_are_a_new_batch(migrated_url):
    # Runs and comparison ingested one by one, then together: the grouping is new evidence
    # (it is what links the runs to the comparison), so it is recorded and reviewed.
    for path in (BASELINE, TREATMENT, COMPARISON):
        invoke(migrated_url, "ingest", "--goal", "g", path)
    alone = _summary(migrated_url)
    together = _json(invoke(migrated_url, "ingest", "--goal", "g", BASELINE, TREATMENT, COMPARISON, "--format", "json"))
    assert together["batch_status"] == "appended" and together["appended_count"] == 0
    assert _summary(migrated_url)["claim_strength"] != alone["claim_strength"]


def test_ingest_batches_does_not_record_a_regrouping_it_already_holds(migrated_url, tmp_path):
    documents = [json.loads(Path(p).read_text()) for p in (BASELINE, TREATMENT, COMPARISON)]
    lines = [{"goal_id": "g", "kind": None, "artifacts": documents}, {"goal_id": "g", "kind": None, "artifacts": documents[2:]}]
    path = tmp_path / "batches.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))
    assert (report["batches"], report["batches_appended"], report["appended"], report["duplicates"]) == (2, 1, 3, 1)
    assert _summary(migrated_url)["event_count"] == 4


def test_a_regenerated_comparison_ingested_alone_says_its_review_reads_no_run(migrated_url, tmp_path):
    # A re-generated file (new bytes, same content) is a new observation and a batch of its own: its claim
    # review is the one LoopX gives a comparison without runs, and it becomes the goal's latest. That is
    # the linking rule, so the ingest says so rather than let the claim strength change silently.
    invoke(migrated_url, "ingest", "--goal", "g", BASELINE, TREATMENT, COMPARISON)
    regenerated = tmp_path / "comparison.json"
    regenerated.write_text(json.dumps(json.loads(Path(COMPARISON).read_text()), indent=1))
    alone = invoke(migrated_url, "ingest", "--goal", "g", str(regenerated))
    assert alone.exit_code == 0, alone.output
    assert "- note: this batch holds a comparison and no run" in alone.output
    regenerated.write_text(json.dumps(json.loads(Path(COMPARISON).read_text()), indent=3))
    together = _json(invoke(migrated_url, "ingest", "--goal", "g", BASELINE, TREATMENT, str(regenerated), "--format", "json"))
    assert together["batch_status"] == "appended" and "notes" not in together
