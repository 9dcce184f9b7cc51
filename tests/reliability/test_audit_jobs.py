"""``audit --jobs N`` says what ``audit --jobs 1`` says, byte for byte, on every backend (issue 31, item 3).

The workers compare their goals' rows with the stored rows and check the events
and the Merkle log beside the folds (``ledger.service.fold_jobs``), so each
tampering ``test_tamper`` proves ``--jobs 1`` finds is made again here and
audited with ``--jobs 1`` and ``--jobs 2``: the same JSON, naming it. A step is
one goal here (``GOALS_PER_STEP = 1``): with the default a ledger this small is
one step, which is folded in the caller whatever ``--jobs`` says.

What a worker reads must be the audit's own snapshot: a write that commits
after the audit's snapshot began, before the workers read (a replay that
repairs a tampered row, an ingest into a goal), must change nothing of what
the audit says (PostgreSQL: the workers read the exported snapshot; SQLite:
the fence sends the comparison back to the caller).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.ledger.service import fold_jobs, folding
from benchledger.ledger.service.ingest import ingest
from benchledger.ledger.service.maintenance import audit, replay
from tests.reliability import test_tamper
from tests.reliability.test_tamper import _batch, _execute, _unprotect

filled = test_tamper.filled  # (the fixture: goals a and b, 16 events)

ZEROS = "0" * 64

# Each tampering, and a problem the audit must name for it: (kind, goal_id, position).
TAMPERINGS = {
    "untouched": ([], None),
    "event payload": (["UPDATE events SET payload = replace(payload, 'cmp-two', 'cmp-TWO') WHERE position = 5"], ("payload_hash", "b", 5)),
    "event chain hash": ([f"UPDATE events SET chain_hash = '{ZEROS}' WHERE position = 10"], ("chain_hash", "a", 10)),
    "event deleted": (["DELETE FROM events WHERE position = 7"], ("position_gap", "b", 8)),
    "head deleted": (["DELETE FROM stream_heads WHERE goal_id = 'b'"], ("head_missing", "b", 16)),
    "merkle node": ([f"UPDATE merkle_nodes SET hash = '{ZEROS}' WHERE level = 1 AND node_index = 2"], ("log_node", None, None)),
    "merkle node invented": ([f"INSERT INTO merkle_nodes (level, node_index, hash) VALUES (0, 16, '{ZEROS}')"], ("log_node", None, None)),
    "row payload": (
        ["UPDATE projection_rows SET payload = replace(payload, 'true', 'false') WHERE projection = 'review-claim' AND goal_id = 'b'"],
        ("projection_mismatch", "b", None),
    ),
    "row deleted": (["DELETE FROM projection_rows WHERE projection = 'review-claim' AND goal_id = 'a'"], ("projection_missing", "a", None)),
    "row count": (["UPDATE projection_counts SET row_count = 7 WHERE goal_id = 'b' AND projection = 'review-claim'"], ("projection_count_mismatch", "b", None)),
    "rows of no goal": (
        ["INSERT INTO projection_counts (goal_id, projection, row_count) VALUES ('counted-ghost', 'review-claim', 3)"],
        ("projection_count_mismatch", "counted-ghost", None),
    ),
    "invalid JSON": (["UPDATE events SET payload = '{not json' WHERE position = 2"], ("replay_failed", "a", None)),
}


@pytest.fixture
def one_goal_a_step(monkeypatch):
    """Every goal a step of its own, so that ``--jobs 2`` hands the steps of a small ledger to workers."""
    monkeypatch.setattr(folding, "GOALS_PER_STEP", 1)


def _audit_json(ledger, *args) -> tuple[int, str]:
    url = ledger.engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(cli, ["--database-url", url, "audit", "--format", "json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout


def _found(report: dict) -> set[tuple]:
    return {(p["kind"], p["goal_id"], p["position"]) for p in report["problems"]}


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_audit_jobs_2_prints_what_jobs_1_prints(filled, one_goal_a_step, tampering):
    statements, problem = TAMPERINGS[tampering]
    _unprotect(filled)
    for statement in statements:
        _execute(filled, statement)
    steps = fold_jobs.steps_of(filled.heads(), jobs=2)
    assert len(steps) == 2 or tampering == "head deleted"  # (the workers fold: more than one step)
    one, printed_one = _audit_json(filled, "--jobs", "1")
    two, printed_two = _audit_json(filled, "--jobs", "2")
    assert printed_two == printed_one
    assert one == two == (0 if problem is None else 1)
    report = audit(filled, jobs=2)
    if problem is None:
        assert report["ok"] and report["events_checked"] == 16
    else:
        kind, goal, position = problem
        assert any(p["kind"] == kind and p["goal_id"] == goal and position in (None, p["position"]) for p in report["problems"]), report["problems"]


def _write_once_the_audit_reads(monkeypatch, write) -> None:
    """Run ``write`` (in its own transactions) after the audit's snapshot began, before its workers read anything."""
    folded_steps = fold_jobs.folded_steps
    written = []

    def after_write(*args, **kwargs):
        if not written:  # (once: a replay written meanwhile folds its steps through here too)
            written.append(True)
            write()
        yield from folded_steps(*args, **kwargs)

    monkeypatch.setattr(fold_jobs, "folded_steps", after_write)


def test_a_replay_committed_during_the_audit_does_not_hide_what_its_snapshot_holds(filled, one_goal_a_step, monkeypatch):
    _execute(filled, "UPDATE projection_rows SET payload = replace(payload, 'true', 'false') WHERE projection = 'review-claim' AND goal_id = 'b'")
    _execute(filled, "UPDATE projection_counts SET row_count = 7 WHERE goal_id = 'a' AND projection = 'review-claim'")
    before = audit(filled, jobs=1)
    assert {kind for kind, _, _ in _found(before)} == {"projection_mismatch", "projection_count_mismatch"}
    repaired = []
    _write_once_the_audit_reads(monkeypatch, lambda: repaired.append(replay(filled)))
    during = audit(filled, jobs=2)
    assert repaired[0]["rows_changed"] == 2 and repaired[0]["counts_repaired"] == 1  # (the replay did repair them, meanwhile)
    assert during == before
    monkeypatch.undo()
    assert audit(filled, jobs=2)["ok"]  # (and an audit after it sees the repair)


def test_an_ingest_committed_during_the_audit_is_not_audited(filled, one_goal_a_step, monkeypatch):
    before = audit(filled, jobs=1)
    _write_once_the_audit_reads(monkeypatch, lambda: ingest(filled, "a", _batch("five"), source="cli ingest"))
    during = audit(filled, jobs=2)
    assert during == before and during["ok"] and during["events_checked"] == 16
    monkeypatch.undo()
    after = audit(filled, jobs=2)
    assert after["ok"] and after["events_checked"] > 16 and after["digest"] != before["digest"]


def test_an_audit_inside_a_snapshot_taken_before_is_that_snapshot(filled, one_goal_a_step):
    """(SQLite cannot fence a snapshot that began before the audit: the workers send their rows to be compared here.)"""
    _execute(filled, "UPDATE projection_rows SET payload = replace(payload, 'true', 'false') WHERE projection = 'review-claim' AND goal_id = 'a'")
    before = audit(filled, jobs=1)
    with filled.snapshot() as view:
        assert view.event_count() == 16  # (PostgreSQL takes the snapshot at its first read)
        replay(filled)
        assert audit(view, jobs=2) == before
    assert audit(filled, jobs=2)["ok"]
