"""The event store's contract, on every backend."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DatabaseError

from benchledger.errors import InvalidEvent, InvalidGoalId, VersionConflict
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.append import guard_receipt
from benchledger.ledger.storage.event_records import NewEvent, StreamAppend
from benchledger.ledger.storage.guard import UnstorableContent
from benchledger.ledger.storage.store import Store
from benchledger.ledger.storage.verification import verify_events


def run_events(n, start=0):
    return [NewEvent("run", {"schema_version": "benchmark_run_v0", "task_id": f"t{i}"}, "benchmark_run_v0") for i in range(start, start + n)]


def test_append_assigns_contiguous_versions_and_positions(ledger):
    first = ledger.append("goal-a", run_events(3), source="test")
    second = ledger.append("goal-b", run_events(2), source="test")
    third = ledger.append("goal-a", run_events(1, start=10), source="test")
    assert [a.event.stream_version for a in first + third] == [1, 2, 3, 4]
    assert [a.event.stream_version for a in second] == [1, 2]
    assert [e.position for e in ledger.read_all()] == [1, 2, 3, 4, 5, 6]
    assert [e.stream_version for e in ledger.read_goal("goal-a")] == [1, 2, 3, 4]
    assert ledger.head("goal-a")["last_version"] == 4


def test_payload_round_trips_through_canonical_json(ledger):
    payload = {"b": [1, 1.0, True, None], "a": "…ü", "nested": {"z": 0.5, "y": -3}}
    (appended,) = ledger.append("g", [NewEvent("comparison", payload)], source="test")
    (stored,) = ledger.read_goal("g")
    assert stored.payload == payload
    assert [type(v) for v in stored.payload["b"]] == [int, float, bool, type(None)]
    assert stored.payload_text == '{"a":"…ü","b":[1,1.0,true,null],"nested":{"y":-3,"z":0.5}}'
    assert stored.payload_sha256 == canonical.sha256_hex(stored.payload_text.encode("utf-8"))
    assert appended.event == stored


def test_reappending_same_content_returns_existing_event_and_writes_nothing(ledger):
    (original,) = ledger.append("g", run_events(1), source="test")
    count = ledger.event_count()
    (again,) = ledger.append("g", run_events(1), source="later")
    assert again.status == "duplicate"
    assert again.event == original.event
    assert ledger.event_count() == count
    # the same content in another goal is a different event
    (other,) = ledger.append("other", run_events(1), source="test")
    assert other.status == "appended" and other.event.event_id != original.event.event_id


def test_duplicates_within_one_call_are_reported_not_written(ledger):
    outcome = ledger.append("g", run_events(1) + run_events(1), source="test")
    assert [a.status for a in outcome] == ["appended", "duplicate"]
    assert outcome[0].event == outcome[1].event
    assert ledger.event_count() == 1


def test_expected_version_conflict_is_typed_and_writes_nothing(ledger):
    ledger.append("g", run_events(2), source="test")
    with pytest.raises(VersionConflict) as info:
        ledger.append("g", run_events(1, start=5), source="test", expected_version=1)
    assert (info.value.expected, info.value.actual) == (1, 2)
    assert ledger.event_count() == 2
    ledger.append("g", run_events(1, start=5), source="test", expected_version=2)
    assert ledger.head("g")["last_version"] == 3


def test_a_failure_inside_the_transaction_writes_nothing(ledger):
    def explode(tx, outcome):
        raise RuntimeError("projection failed")

    with pytest.raises(RuntimeError):
        ledger.append("g", run_events(3), source="test", within=explode)
    assert ledger.event_count() == 0
    assert ledger.head("g") is None


@pytest.mark.parametrize("goal_id", ["", "-leading-dash", "has space", "a/b", "x" * 122, "ünï"])
def test_invalid_goal_ids_are_refused(ledger, goal_id):
    with pytest.raises(InvalidGoalId):
        ledger.append(goal_id, run_events(1), source="test")
    assert ledger.event_count() == 0


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET kind = 'tampered'",
        "UPDATE events SET payload = '{}' WHERE position = 1",
        "DELETE FROM events",
        "DELETE FROM events WHERE position = 1",
    ],
)
def test_database_refuses_update_and_delete_of_events(ledger, statement):
    ledger.append("g", run_events(2), source="test")
    with pytest.raises(DatabaseError, match="immutable"):
        with ledger.engine.begin() as connection:
            connection.execute(text(statement))
    assert [e.kind for e in ledger.read_all()] == ["run", "run"]


@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
def test_postgresql_refuses_truncate(ledger):
    ledger.append("g", run_events(1), source="test")
    with pytest.raises(DatabaseError, match="immutable"):
        with ledger.engine.begin() as connection:
            connection.execute(text("TRUNCATE events"))
    assert ledger.event_count() == 1


def test_chain_verifies_and_links_each_goal(ledger):
    ledger.append("a", run_events(3), source="test")
    ledger.append("b", run_events(2), source="test")
    ledger.append("a", run_events(2, start=7), source="test")
    report = verify_events(ledger.read_all(), ledger.heads())
    assert report.problems == []
    assert report.events_checked == 7
    a_events = ledger.read_goal("a")
    assert a_events[0].prev_hash == canonical.GENESIS_HASH
    assert all(later.prev_hash == earlier.chain_hash for earlier, later in zip(a_events, a_events[1:]))


WRITER = textwrap.dedent(
    """
    import sys
    from benchledger.ledger.storage.store import Store
    from benchledger.ledger.storage.event_records import NewEvent
    url, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ledger = Store.open(url)
    for i in range(count):
        ledger.append("shared-goal", [NewEvent("run", {"worker": worker, "i": i})], source="test")
    """
)


def test_concurrent_processes_append_to_one_goal_without_gaps(ledger, ledger_url):
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, ledger_url, str(w), "50"]) for w in range(8)
    ]
    assert [w.wait(timeout=300) for w in writers] == [0] * 8
    stored = ledger.read_goal("shared-goal")
    assert [e.stream_version for e in stored] == list(range(1, 401))
    assert sorted(e.position for e in stored) == list(range(1, 401))
    assert len({(e.payload["worker"], e.payload["i"]) for e in stored}) == 400
    assert verify_events(ledger.read_all(), ledger.heads()).problems == []


def test_append_streams_equals_the_appends_made_one_by_one(ledger):
    outcomes = ledger.append_streams(
        [StreamAppend("a", run_events(2)), StreamAppend("b", run_events(1)), StreamAppend("a", run_events(2, start=1))],
        source="test",
    )
    assert [[(o.status, o.event.stream_version) for o in outcome] for outcome in outcomes] == [
        [("appended", 1), ("appended", 2)],
        [("appended", 1)],
        [("duplicate", 2), ("appended", 3)],  # t1 was appended to "a" earlier in the same call
    ]
    assert [(e.goal_id, e.position) for e in ledger.read_all()] == [("a", 1), ("a", 2), ("b", 3), ("a", 4)]
    assert {h["goal_id"]: (h["last_version"], h["last_position"]) for h in ledger.heads()} == {"a": (3, 4), "b": (1, 3)}
    report = verify_events(ledger.read_all(), ledger.heads())
    assert report.problems == [] and report.events_checked == 4


def test_append_streams_is_all_or_nothing_across_goals(ledger):
    ledger.append("b", run_events(1), source="test")
    with pytest.raises(VersionConflict):
        ledger.append_streams([StreamAppend("a", run_events(2)), StreamAppend("b", run_events(1, start=5), expected_version=0)], source="test")
    assert ledger.event_count() == 1 and [h["goal_id"] for h in ledger.heads()] == ["b"]


def test_a_persistent_ledger_refuses_nan_and_infinity_and_writes_nothing(ledger):
    payload = {"schema_version": "benchmark_run_v0", "scores": [1.0, float("inf")], "note": "NaN in a string is fine"}
    with pytest.raises(InvalidEvent, match=r"\$\.scores\[1\] of this run is NaN or infinite"):
        ledger.append("g", [*run_events(1), NewEvent("run", payload)], source="test")
    assert ledger.event_count() == 0
    ledger.append("g", [NewEvent("run", {**payload, "scores": [1.0]})], source="test")  # the token inside a string is not a number
    throwaway = Store.in_memory()  # a stateless review reads what LoopX reads
    try:
        assert throwaway.append("g", [NewEvent("run", payload)], source="test")[0].status == "appended"
    finally:
        throwaway.close()


def test_a_guard_receipt_lets_through_only_the_content_it_was_made_for(ledger):
    """A receipt (ingest-batches' validation pass) spares the guard a second pass over exactly that content; anything else is judged."""
    clean = StreamAppend("g", run_events(2))
    problems, receipt = guard_receipt(clean, source="test")
    assert problems == [] and receipt is not None
    secret = StreamAppend("g", [NewEvent("run", {"schema_version": "benchmark_run_v0", "task_id": "postgresql://admin:pw@db/x"}, "benchmark_run_v0")])
    problems, none = guard_receipt(secret, source="test")
    assert problems and none is None

    token_goal = StreamAppend("ghp_" + "a1B2c3D4e5" * 4, run_events(2))  # the same events, in a goal whose id is a GitHub token
    for append, source in ((secret, "test"), (token_goal, "test"), (clean, "/home/alice/labels")):
        with pytest.raises(UnstorableContent):
            ledger.append_streams([append], source=source, receipts={receipt})
    assert ledger.event_count() == 0
    ledger.append_streams([clean], source="test", receipts={receipt})
    assert ledger.event_count() == 2


@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
def test_dropping_projection_rows_looks_each_key_up_instead_of_scanning_the_table(ledger):
    # A replay or retraction that drops a few rows must not pay for every row of the ledger: SQLite
    # answers a row-value IN list with a scan of the whole table, a primary-key equality with a lookup.
    from benchledger.ledger.storage import transaction

    statement = transaction._DELETE_PROJECTION_ROW.compile(dialect=ledger.engine.dialect)
    with ledger.engine.connect() as connection:
        plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", ("review-claim", "g", "current")).fetchall()
    details = [row[-1] for row in plan]
    assert details and all(detail.startswith("SEARCH projection_rows USING") for detail in details), details



@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
def test_reading_a_goals_events_of_one_kind_is_one_range_of_the_goal_kind_index(ledger):
    """An ingest reads the resumed goals' retractions: its cost must follow their number, not the goal's past.

    Ordered by (goal_id, stream_version), SQLite walked the goal's whole range of
    the primary-key index (every event of the goal) to find its few retractions.
    """
    from benchledger.ledger.storage import transaction
    from benchledger.ledger.storage.schema import events

    statement = transaction._EVENTS_OF_GOALS_UNORDERED.where(events.c.kind == "retraction").params(goal_ids=["g"])
    sql = str(statement.compile(dialect=ledger.engine.dialect, compile_kwargs={"literal_binds": True, "render_postcompile": True}))
    with ledger.engine.connect() as connection:
        plan = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql).fetchall()
    assert [row[-1] for row in plan] == ["SEARCH events USING INDEX ix_events_goal_kind (goal_id=? AND kind=?)"]
