"""Which goals are archived is read from the archive events alone (schema revision 0007), on both backends: the
listings agree with the rule of ``projections.goal_archive`` and find the archived goals through their partial index,
not a range of the (goal_id, kind) index per goal of the ledger (0.2 s at 23,000 goals: benchmarks/team_ledger.py)."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, text

from benchledger.ledger.read import report_views, views
from benchledger.ledger.storage.event_records import NewEvent
from benchledger.ledger.storage.schema import stream_heads
from benchledger.projections import goal_archive

LEDGERS = itertools.count()
# Per goal, its events in stream order: None an ordinary event, True an archive, False an unarchive.
MARKS = st.lists(st.lists(st.sampled_from([None, True, False]), min_size=1, max_size=6), min_size=1, max_size=5)


def _kind(mark: bool | None) -> str:
    return "note" if mark is None else goal_archive.kind_of(mark)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(MARKS)
def test_the_goals_listed_as_archived_are_those_whose_last_mark_is_an_archive(ledger, goals):
    prefix = f"archive-{next(LEDGERS)}"
    want = {}
    for g, marks in enumerate(goals):
        goal = f"{prefix}-{g}"
        payloads = [goal_archive.archive_payload(m, v) if m is not None else {"note": v} for v, m in enumerate(marks)]
        ledger.append(goal, [NewEvent(_kind(m), p) for m, p in zip(marks, payloads)], source="test")
        want[goal] = goal_archive.is_archived(_kind(m) for m in marks)
    listed = {g["goal_id"]: g["archived"] for g in views.goals(ledger, include_archived=True) if g["goal_id"].startswith(prefix + "-")}
    assert listed == want
    shown = {g["goal_id"] for g in views.goals(ledger) if g["goal_id"].startswith(prefix + "-")}
    assert shown == {goal for goal, archived in want.items() if not archived}
    everyone = views.goals(ledger)  # (earlier examples' goals are in the same ledger)
    assert report_views.goal_index(ledger, limit=1, pass_rates=False)["total"] == len(everyone)


def test_the_archived_goals_are_read_through_the_archive_events_index(ledger):
    ledger.append("kept", [NewEvent("note", {"n": 1})], source="test")
    ledger.append("shelved", [NewEvent(goal_archive.ARCHIVE, goal_archive.archive_payload(True, 0))], source="test")
    count = select(func.count()).select_from(stream_heads).where(~views.archived_column(stream_heads.c.goal_id))
    with ledger.reading() as connection:
        if ledger.dialect == "postgresql":
            # (a two-row table is read whole whatever the indexes: forbid that to see which index the plan can use)
            connection.execute(text("SET LOCAL enable_seqscan = off"))
            compiled = count.compile(connection, compile_kwargs={"literal_binds": True})
            plan = "\n".join(connection.exec_driver_sql(f"EXPLAIN {compiled}").scalars())
        else:
            compiled = count.compile(connection, compile_kwargs={"literal_binds": True})
            plan = "\n".join(row[-1] for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}"))
        assert connection.execute(count).scalar_one() == 1
    assert "ix_events_goal_archive" in plan and "ix_events_goal_kind" not in plan, plan
