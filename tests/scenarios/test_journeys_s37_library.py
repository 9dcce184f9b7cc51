"""The walk of session 37: ``jobs`` as a notebook user types it, on both backends.

``Ledger.replay(jobs="2")``, ``audit(jobs=2.5)`` and ``ingest_batch_file(path, jobs=None)`` raised the comparison's
raw ``TypeError`` (docs/python-api.md promises a ``BenchledgerError`` for every error a caller can cause),
``replay(jobs=0)`` and ``audit(jobs=0)`` ran as if 1 was meant while ``ingest_batch_file(jobs=0)`` refused it, and
``jobs=True`` was taken for one worker. One check serves the three now.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchledger
from benchledger.errors import InvalidInput

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
RUNS = [str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
WRONG = ["2", 2.5, 0, -1, None, True]


@pytest.mark.parametrize("jobs", WRONG, ids=repr)
def test_a_wrong_jobs_is_refused_by_replay_audit_and_ingest_batch_file_alike_and_nothing_is_written(migrated_url, tmp_path, jobs):
    batches = tmp_path / "batches.ndjson"
    batches.write_text(json.dumps({"goal_id": "goal-jobs", "kind": None, "artifacts": [json.loads(Path(r).read_text()) for r in RUNS]}) + "\n")
    with benchledger.open(migrated_url) as ledger:
        assert ledger.ingest("demo-goal", RUNS).ok
        events = ledger.event_count()
        calls = (
            lambda: ledger.replay(jobs=jobs),
            lambda: ledger.audit(jobs=jobs),
            lambda: ledger.ingest_batch_file(str(batches), jobs=jobs),
        )
        for call in calls:
            with pytest.raises(InvalidInput, match=rf"jobs must be a whole number of worker processes, 1 or more .*not {jobs!r}"):
                call()
        assert ledger.event_count() == events, "a refused ingest_batch_file wrote nothing"


def test_a_right_jobs_still_works_for_the_three(migrated_url, tmp_path):
    batches = tmp_path / "batches.ndjson"
    batches.write_text(json.dumps({"goal_id": "goal-jobs", "kind": None, "artifacts": [json.loads(Path(r).read_text()) for r in RUNS]}) + "\n")
    with benchledger.open(migrated_url) as ledger:
        assert ledger.ingest_batch_file(str(batches), jobs=2).appended == 3
        assert ledger.replay(jobs=1).rows_changed == 0
        assert ledger.audit(jobs=2).ok
