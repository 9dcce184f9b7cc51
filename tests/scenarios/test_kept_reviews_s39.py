"""Reviews kept with --goal, as a user types them, on both backends (session 39, "kept reviews").

A review kept into an archived goal appended its inputs and said nothing, where ingest and import-loopx say that the
goal, and with it what they appended, stays hidden from `goals` and the report's index: the review says it too (and
the same review again, which appends nothing, does not); so does baseline-failure-gate --execute.

A review's inputs are kept through the storage guard, which judges each stored column beside the payload. The
``schema_version`` column copies the document's own ``$.schema_version``, so a secret there was refused twice in
one line ("preflight.json: schema_version holds a secret …; preflight.json: $.schema_version of this preflight
holds a secret …"): it is said once, at its JSON path; the column's width is still the column's to refuse.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"

SECRET_RULE = "holds a secret of LoopX's filter (bearer …, access_key=…, sk-…, token=…) [loopx-secret]"
REFUSED = "nothing was written (what the ledger refuses: docs/privacy.md)"


def test_a_secret_schema_version_is_refused_once(migrated_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "preflight.json").write_text(json.dumps({"schema_version": "token=aaaaaaaaaaaa", "ready": True}))
    before = row_counts(migrated_url)

    review = invoke(migrated_url, "benchmark", "lifecycle-state", "--preflight-json", "preflight.json", "--goal", "g1", "--format", "json")
    assert (review.exit_code, review.stdout) == (1, "")
    assert review.stderr == f"benchledger: preflight.json: $.schema_version of this preflight {SECRET_RULE}; {REFUSED}\n"

    ingest = invoke(migrated_url, "ingest", "--goal", "g1", "--kind", "preflight", "preflight.json")
    assert ingest.exit_code == 1
    assert [line for line in ingest.stderr.splitlines() if line.startswith("error:")] == [
        f"error: preflight.json: $.schema_version of this preflight {SECRET_RULE}"
    ]
    assert row_counts(migrated_url) == before


def test_a_schema_version_wider_than_its_column_is_still_refused(migrated_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "launch.json").write_text(json.dumps({"schema_version": "a" * 200}))
    before = row_counts(migrated_url)

    review = invoke(migrated_url, "benchmark", "lifecycle-state", "--launch-json", "launch.json", "--goal", "g1", "--format", "json")
    assert (review.exit_code, review.stdout) == (1, "")
    assert review.stderr == f"benchledger: launch.json: schema_version is 200 characters, longer than the 128 the ledger stores; {REFUSED}\n"
    assert row_counts(migrated_url) == before


def test_a_review_kept_into_an_archived_goal_says_the_goal_is_archived(migrated_url):
    baseline, treatment = str(DEMO / "04-run-baseline.json"), str(DEMO / "05-run-treatment.json")
    assert invoke(migrated_url, "benchmark", "review-verifier-attribution", "--benchmark-run-json", baseline, "--goal", "exp-1").exit_code == 0
    assert invoke(migrated_url, "goals", "archive", "exp-1").exit_code == 0
    review = ["benchmark", "review-verifier-attribution", "--benchmark-run-json", baseline, "--benchmark-run-json", treatment]
    stateless = invoke(migrated_url, *review, "--format", "json")

    kept = invoke(migrated_url, *review, "--goal", "exp-1", "--format", "json")
    assert (kept.exit_code, kept.stdout) == (stateless.exit_code, stateless.stdout)
    assert kept.stderr == (
        "benchledger: note: goal 'exp-1' is archived: `goals` and the report's index (its pass rates and comparisons) "
        "leave it out, and with it what this benchmark review-verifier-attribution appended (`goals --include-archived` "
        "and `report --include-archived` show it; `goals unarchive exp-1` lists it again)\n"
    )
    shown = json.loads(invoke(migrated_url, "show", "--goal", "exp-1", "--projection", "review-verifier-attribution", "--format", "json").stdout)
    assert shown["projections"]["review-verifier-attribution"][-1]["payload"] == json.loads(stateless.stdout)

    before = row_counts(migrated_url)
    again = invoke(migrated_url, *review, "--goal", "exp-1", "--format", "json")
    assert (again.exit_code, again.stdout, again.stderr) == (stateless.exit_code, stateless.stdout, "")
    assert row_counts(migrated_url) == before


def test_a_gate_executed_into_an_archived_goal_says_the_goal_is_archived(migrated_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "baseline.json").write_bytes((DEMO / "04-run-baseline.json").read_bytes())
    gate = ["benchmark", "baseline-failure-gate", "--benchmark-id", "terminal-bench@2.0", "--baseline-result-json", "baseline.json",
            "--failure-phase", "writeback", "--no-global-sync", "--execute", "--goal", "exp-1"]
    assert invoke(migrated_url, "ingest", "--goal", "exp-1", str(DEMO / "01-preflight.json")).exit_code == 0
    assert invoke(migrated_url, "goals", "archive", "exp-1").exit_code == 0

    executed = invoke(migrated_url, *gate, "--format", "json")
    assert executed.exit_code == 0 and json.loads(executed.stdout)["appended"] is True
    assert executed.stderr == (
        "benchledger: note: goal 'exp-1' is archived: `goals` and the report's index (its pass rates and comparisons) "
        "leave it out, and with it what this baseline-failure-gate --execute appended (`goals --include-archived` "
        "and `report --include-archived` show it; `goals unarchive exp-1` lists it again)\n"
    )
    before = row_counts(migrated_url)
    again = invoke(migrated_url, *gate, "--format", "json")
    assert (again.exit_code, again.stderr) == (0, "")
    assert row_counts(migrated_url) == before
