"""Immutability and tamper evidence, on every backend.

1. With the immutability triggers in place the database itself refuses to
   change an event: an UPDATE of any column, a DELETE, SQLite's
   INSERT OR REPLACE and REPLACE INTO, an upsert, PostgreSQL's TRUNCATE.
2. With the triggers removed (as an attacker with the database file could),
   ``benchledger audit`` catches every single-field modification of every
   event, every deletion, every swap of two events, every truncation, and
   edits of stream heads and stored projection rows, naming the right problem
   kind and position. A forger who rewrites the whole chain consistently, or
   truncates and then repairs heads and projections, is caught by
   ``audit --expect-digest`` with the digest saved earlier. An untouched
   ledger audits clean.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections import Counter

import pytest
from click.testing import CliRunner
from sqlalchemy import insert, select, text, update
from sqlalchemy.exc import DatabaseError

from benchledger.cli.main import cli
from benchledger.ledger.read import views
from benchledger.ledger.service.ingest import ingest
from benchledger.ledger.service.maintenance import audit, replay
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.schema import drop_immutability_ddl, events, projection_rows, stream_heads
from benchledger.projections.artifacts import Artifact
from benchledger.projections.artifacts.kinds import normalize
from tests.conformance.cases import CORPUS

FIXTURE = CORPUS / "cases" / "review-claim" / "claim-review-01"
COLUMNS = [c.name for c in events.c]


def _batch(tag: str) -> list[Artifact]:
    comparison = json.loads((FIXTURE / "comparison.json").read_text())
    comparison["comparison_id"] = f"cmp-{tag}"
    artifacts = [Artifact("comparison", normalize("comparison", comparison))]
    for i, name in enumerate(("run-1.json", "run-2.json")):
        run = json.loads((FIXTURE / name).read_text())
        run["job_name"] = f"job-{tag}-{i}"
        artifacts.append(Artifact("run", normalize("run", run)))
    return artifacts


@pytest.fixture
def filled(ledger):
    """Goals a and b interleaved: positions 1-4 (a), 5-8 (b), 9-12 (a), 13-16 (b)."""
    for tag, goal in (("one", "a"), ("two", "b"), ("three", "a"), ("four", "b")):
        ingest(ledger, goal, _batch(tag), source="cli ingest")
    assert ledger.event_count() == 16
    return ledger


def _execute(ledger, statement, params=None) -> None:
    with ledger.engine.begin() as connection:
        connection.execute(statement if not isinstance(statement, str) else text(statement), params or {})


def _unprotect(ledger) -> None:
    for statement in drop_immutability_ddl(ledger.dialect):
        _execute(ledger, statement)


def _rows(ledger) -> list[dict]:
    with ledger.engine.connect() as connection:
        return [dict(r._mapping) for r in connection.execute(select(events).order_by(events.c.position))]


def _problems(ledger, **kwargs) -> set[tuple[str, int | None]]:
    report = audit(ledger, **kwargs)
    assert report["ok"] is (not report["problems"])
    return {(p["kind"], p["position"]) for p in report["problems"]}


def _cli_audit(ledger, *args) -> tuple[int, dict]:
    url = ledger.engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(cli, ["--database-url", url, "audit", "--format", "json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


# -- 1. the database refuses -------------------------------------------------------------


def _forged(column: str, value):
    return {
        "position": 1000,
        "stream_version": 1000,
        "payload": '{"forged":true}',
        "recorded_at": "2000-01-01T00:00:00.000000Z",
        "schema_version": "forged_v0",
    }.get(column, "0" * 36 if column == "event_id" else "f" * 64 if "hash" in column or "sha" in column else "forged")


def test_the_database_refuses_to_update_any_column_delete_or_upsert(filled):
    before = _rows(filled)
    statements = [update(events).where(events.c.position == 6).values({c: _forged(c, None)}) for c in COLUMNS]
    statements += [
        text("DELETE FROM events WHERE position = 16"),
        text("DELETE FROM events"),
        text("INSERT INTO events SELECT * FROM events WHERE position = 6 ON CONFLICT (position) DO UPDATE SET kind = 'forged'"),
    ]
    for statement in statements:
        with pytest.raises(DatabaseError, match="immutable"):
            _execute(filled, statement)
    assert _rows(filled) == before


@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
def test_sqlite_refuses_replace_over_a_stored_event(filled):
    """REPLACE deletes the conflicting row without firing DELETE triggers (revision 0002 guards it)."""
    before = _rows(filled)
    names = ", ".join(f'"{c}"' for c in COLUMNS)
    values = ", ".join(f":{c}" for c in COLUMNS)
    for verb in ("INSERT OR REPLACE INTO", "REPLACE INTO"):
        for conflict in ("position", "event_id", "goal_version"):
            forged = dict(before[5], kind="forged")
            if conflict != "position":
                forged["position"] = 1000
            if conflict == "goal_version":
                forged["event_id"] = str(uuid.uuid4())
            with pytest.raises(DatabaseError, match="immutable"):
                _execute(filled, f"{verb} events ({names}) VALUES ({values})", forged)
    assert _rows(filled) == before


@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
def test_postgresql_refuses_truncate_even_cascading(filled):
    with pytest.raises(DatabaseError, match="immutable"):
        _execute(filled, "TRUNCATE events, stream_heads, projection_rows")
    assert filled.event_count() == 16


# -- 2. audit catches what a tamperer without triggers does ------------------------------------


def test_an_untouched_ledger_audits_clean_through_the_cli(filled):
    code, report = _cli_audit(filled)
    assert code == 0 and report["ok"] and report["problems"] == []
    assert report["events_checked"] == 16 and report["goals_checked"] == 2
    assert report["digest"].startswith("16:")
    code, again = _cli_audit(filled, "--expect-digest", report["digest"])
    assert code == 0 and again["ok"]


# What a modification of each column of the event at position P must be reported as
# (beyond it, later links of the chain may be reported too).
FIELD_PROBLEM = {
    "event_id": "event_id",
    "goal_id": "event_id",
    "stream_version": "version_gap",
    "kind": "event_id",
    "schema_version": "chain_hash",
    "payload": "payload_hash",
    "payload_sha256": "payload_hash",
    "source_sha256": "chain_hash",
    "prev_hash": "chain_link",
    "chain_hash": "chain_hash",
    "recorded_at": "chain_hash",
    "source": "chain_hash",
}


def _modified(row: dict, column: str):
    value = row[column]
    if column == "position":
        return 1000
    if column == "stream_version":
        return value + 100
    if column == "goal_id":
        return "z"
    if column == "payload":
        document = json.loads(value)
        document["tampered"] = True
        return canonical.canonical_json(document)
    if column == "recorded_at":
        return value[:-2] + ("1Z" if value[-2] != "1" else "2Z")  # one microsecond off
    if column == "schema_version" and value is None:
        return "forged_v0"
    if column == "source_sha256" and value is None:
        return "0" * 64
    if column == "event_id":
        return str(uuid.uuid4())
    # hashes and labels: flip the last character
    return value[:-1] + ("0" if value[-1] != "0" else "1")


def _expected_position_problem(position: int, last: int) -> tuple[str, int]:
    """Moving the event at ``position`` to 1000 leaves a gap after its predecessor."""
    return ("position_gap", position + 1) if position < last else ("position_gap", 1000)


def test_every_single_field_modification_is_caught(filled):
    _unprotect(filled)
    original = _rows(filled)
    assert _problems(filled) == set()
    for column, row in ((c, r) for c in COLUMNS for r in original):
        position = row["position"]
        changed = _modified(row, column)
        assert changed != row[column]
        _execute(filled, update(events).where(events.c.position == position).values({column: changed}))
        found = _problems(filled)
        if column == "position":
            expected = _expected_position_problem(position, len(original))
        else:
            expected = (FIELD_PROBLEM[column], position)
        assert expected in found, f"{column} of position {position} changed: {sorted(found)}"
        # restore and prove the restoration (the next iteration starts from a clean ledger)
        where = events.c.position == (changed if column == "position" else position)
        _execute(filled, update(events).where(where).values({column: row[column]}))
    assert _rows(filled) == original
    assert _problems(filled) == set()


def test_a_modification_is_reported_by_the_cli_with_kind_and_position(filled):
    _unprotect(filled)
    _execute(filled, "UPDATE events SET payload = replace(payload, 'cmp-two', 'cmp-TWO') WHERE position = 5")
    code, report = _cli_audit(filled)
    assert code == 1 and not report["ok"]
    assert {"kind": "payload_hash", "goal_id": "b", "position": 5} in [
        {k: p[k] for k in ("kind", "goal_id", "position")} for p in report["problems"]
    ]


def test_every_deletion_is_caught(filled):
    _unprotect(filled)
    original = _rows(filled)
    for row in original:
        position = row["position"]
        _execute(filled, events.delete().where(events.c.position == position))
        found = _problems(filled)
        if position < len(original):
            assert ("position_gap", position + 1) in found, (position, found)
        else:  # the last event: its goal's head still names it
            assert ("head_mismatch", 15) in found, found
        _execute(filled, insert(events).values(row))
    assert _rows(filled) == original and _problems(filled) == set()


def _swap(ledger, first: int, second: int) -> None:
    with ledger.engine.begin() as connection:
        connection.execute(update(events).where(events.c.position == first).values(position=-1))
        connection.execute(update(events).where(events.c.position == second).values(position=first))
        connection.execute(update(events).where(events.c.position == -1).values(position=second))


# Every adjacent pair (in one batch, across batches, across goals) and distant ones.
SWAPS = [(p, p + 1) for p in range(1, 16)] + [(1, 16), (2, 10), (4, 9), (5, 13), (6, 7), (1, 5), (8, 16)]


def test_every_reordering_of_two_events_is_caught(filled):
    _unprotect(filled)
    original = _rows(filled)
    digest = audit(filled)["digest"]
    for first, second in SWAPS:
        _swap(filled, first, second)
        found = _problems(filled)
        # the chains and clocks notice on their own ...
        assert found, f"swap of {first} and {second} went unnoticed"
        assert min(p for _, p in found if p is not None) >= first
        # ... and the saved digest pins the order exactly
        assert ("digest_mismatch", 16) in _problems(filled, expect_digest=digest)
        _swap(filled, first, second)
    assert _rows(filled) == original and _problems(filled) == set()


def test_swapping_events_of_one_goal_is_a_version_gap_at_the_first(filled):
    _unprotect(filled)
    _swap(filled, 2, 3)
    code, report = _cli_audit(filled)
    assert code == 1
    assert ("version_gap", 2) in {(p["kind"], p["position"]) for p in report["problems"]}


def test_every_truncation_is_caught(filled):
    _unprotect(filled)
    original = _rows(filled)
    digest = audit(filled)["digest"]
    for keep in range(16):
        _execute(filled, events.delete().where(events.c.position > keep))
        found = _problems(filled)
        # the goal(s) whose tail was cut: their head still names the lost events
        kinds = {kind for kind, _ in found}
        assert kinds & {"head_mismatch", "missing_events"}, (keep, found)
        assert ("digest_mismatch", None) in _problems(filled, expect_digest=digest)
        _execute(filled, insert(events), [r for r in original if r["position"] > keep])
    assert _problems(filled) == set()


def test_a_truncation_covered_up_is_caught_by_the_saved_digest(filled):
    """Cut the tail, then repair heads and projections: only the digest saved earlier can tell."""
    _unprotect(filled)
    digest = audit(filled)["digest"]
    _execute(filled, events.delete().where(events.c.position > 12))
    _execute(filled, update(stream_heads).where(stream_heads.c.goal_id == "b").values(
        last_version=4, last_position=8, last_chain_hash=_rows(filled)[7]["chain_hash"], last_recorded_at=_rows(filled)[7]["recorded_at"]
    ))
    replay(filled)
    assert _problems(filled) == set()  # internally consistent ...
    code, report = _cli_audit(filled, "--expect-digest", digest)
    assert code == 1  # ... but not the history that was saved
    assert [(p["kind"], p["position"]) for p in report["problems"]] == [("digest_mismatch", None)]
    assert "truncated" in report["problems"][0]["detail"]


def test_a_consistently_rewritten_chain_is_caught_by_the_saved_digest(filled):
    """A forger who edits a payload and recomputes every hash after it (ids, chains, heads, projections)."""
    _unprotect(filled)
    digest = audit(filled)["digest"]
    rows = _rows(filled)
    forged_rows = copy.deepcopy(rows)
    target = forged_rows[5]  # position 6, goal b
    document = json.loads(target["payload"])
    document["job_name"] = "job-forged"
    target["payload"] = canonical.canonical_json(document)
    tails: dict[str, str] = {}
    renamed: dict[str, str] = {}
    for row in forged_rows:
        if row["kind"] == "ingest_batch":  # the manifest names its members by event id: follow the renames
            manifest = json.loads(row["payload"])
            for member in manifest["members"]:
                member["event_id"] = renamed.get(member["event_id"], member["event_id"])
            row["payload"] = canonical.canonical_json(manifest)
        old_id = row["event_id"]
        row["payload_sha256"] = canonical.sha256_hex(row["payload"])
        row["event_id"] = renamed[old_id] = canonical.event_id_for(row["goal_id"], row["kind"], row["payload_sha256"])
        row["prev_hash"] = tails.get(row["goal_id"], canonical.GENESIS_HASH)
        row["chain_hash"] = tails[row["goal_id"]] = canonical.chain_hash(
            row["prev_hash"],
            **{k: row[k] for k in ("goal_id", "stream_version", "kind", "schema_version", "payload_sha256",
                                   "event_id", "recorded_at", "source", "source_sha256")},
        )
    with filled.engine.begin() as connection:
        connection.execute(events.delete())
        connection.execute(insert(events), forged_rows)
        for goal, chain in tails.items():
            connection.execute(update(stream_heads).where(stream_heads.c.goal_id == goal).values(last_chain_hash=chain))
    replay(filled)
    assert _problems(filled) == set()  # internally consistent ...
    code, report = _cli_audit(filled, "--expect-digest", digest)
    assert code == 1  # ... but not the history that was saved
    assert [(p["kind"], p["position"]) for p in report["problems"]] == [("digest_mismatch", 16)]


def test_stream_head_edits_are_caught(filled):
    _unprotect(filled)
    _execute(filled, update(stream_heads).where(stream_heads.c.goal_id == "a").values(last_version=3))
    assert ("head_mismatch", 12) in _problems(filled)
    _execute(filled, update(stream_heads).where(stream_heads.c.goal_id == "a").values(last_version=8))
    _execute(filled, stream_heads.delete().where(stream_heads.c.goal_id == "b"))
    assert ("head_missing", 16) in _problems(filled)


# (rows deleted or added beside their stored count also make the count wrong: audit names it too)
COUNT_OF_A = ("projection_count_mismatch", "a", None)


@pytest.mark.parametrize(
    "edit, kind, more",
    [
        ("UPDATE projection_rows SET payload = replace(payload, 'true', 'false') WHERE projection = 'review-claim' AND goal_id = 'a'", "projection_mismatch", set()),
        ("UPDATE projection_rows SET status = 'faulted' WHERE projection = 'review-claim' AND goal_id = 'a'", "projection_mismatch", set()),
        ("UPDATE projection_rows SET projection_version = projection_version + 1 WHERE projection = 'review-claim' AND goal_id = 'a'", "projection_mismatch", set()),
        ("DELETE FROM projection_rows WHERE projection = 'review-claim' AND goal_id = 'a'", "projection_missing", {COUNT_OF_A}),
    ],
)
def test_projection_row_edits_are_caught_at_the_row_position(filled, edit, kind, more):
    # projection rows are not events: no trigger guards them, the audit does
    rows = filled.projection_rows(goal_id="a", projection="review-claim")
    assert len(rows) == 2
    _execute(filled, edit)
    code, report = _cli_audit(filled)
    assert code == 1
    found = {(p["kind"], p["goal_id"], p["position"]) for p in report["problems"]}
    assert found == {(kind, "a", row["position"]) for row in rows} | more


def test_an_invented_projection_row_is_caught(filled):
    row = dict(filled.projection_rows(goal_id="b", projection="review-claim")[0], key="00000000-forged")
    _execute(filled, insert(projection_rows).values(row))
    code, report = _cli_audit(filled)
    assert code == 1
    assert [(p["kind"], p["goal_id"], p["position"]) for p in report["problems"]] == [
        ("projection_extra", "b", row["position"]),
        ("projection_count_mismatch", "b", None),
    ]


@pytest.mark.parametrize(
    "edit, detail",
    [
        ("UPDATE projection_counts SET row_count = 7 WHERE goal_id = 'a' AND projection = 'review-claim'", "review-claim holds 2 row(s), its stored count says 7"),
        ("DELETE FROM projection_counts WHERE goal_id = 'a' AND projection = 'review-claim'", "review-claim holds 2 row(s), its stored count says 0"),
        ("INSERT INTO projection_counts (goal_id, projection, row_count) VALUES ('a', 'forged', 1)", "forged holds 0 row(s), its stored count says 1"),
    ],
)
def test_a_tampered_row_count_is_named_by_audit_and_rebuilt_by_replay(filled, edit, detail):
    # `show` prints the stored counts without counting the rows: the audit checks them against the rows
    _execute(filled, edit)
    assert views.show(filled, "a")["counts"] == filled.projection_counts("a")  # shown as stored (a count without rows too)
    code, report = _cli_audit(filled)
    assert code == 1
    assert [(p["kind"], p["goal_id"], p["detail"]) for p in report["problems"]] == [("projection_count_mismatch", "a", detail)]
    rebuilt = replay(filled)
    assert (rebuilt["rows_changed"], rebuilt["counts_repaired"]) == (0, 1)  # the rows were right: only the count is rebuilt
    code, report = _cli_audit(filled)
    assert code == 0 and report["ok"]
    rows = filled.projection_rows(goal_id="a")
    assert views.show(filled, "a")["counts"] == dict(sorted(Counter(r["projection"] for r in rows).items()))


def test_a_payload_tampered_into_invalid_json_is_a_clear_error_not_a_traceback(filled):
    _unprotect(filled)
    _execute(filled, "UPDATE events SET payload = '{not json' WHERE position = 2")
    url = filled.engine.url.render_as_string(hide_password=False)
    before = filled.projection_rows()
    for command in (["replay"], ["history", "a"], ["show", "a", "--as-of", "4"]):
        result = CliRunner().invoke(cli, ["--database-url", url, *command])
        assert result.exit_code == 2, (command, result.output)
        assert isinstance(result.exception, SystemExit), (command, result.exception)
        assert "event 2 of goal 'a' does not hold JSON" in result.output and "benchledger audit" in result.output
    assert filled.projection_rows() == before  # the refused replay wrote nothing
    assert ("replay_failed", None) in _problems(filled)


def _insert_rows_and_counts(ledger, rows) -> None:
    """Rows inserted beside their counts, as a tamperer who knows the schema would (the counts agree with the rows)."""
    _execute(ledger, insert(projection_rows), rows)
    for projection, goal in {(r["projection"], r["goal_id"]) for r in rows}:
        held = len(ledger.projection_rows(goal_id=goal, projection=projection))
        _execute(ledger, "DELETE FROM projection_counts WHERE goal_id = :g AND projection = :p", {"g": goal, "p": projection})
        _execute(ledger, "INSERT INTO projection_counts (goal_id, projection, row_count) VALUES (:g, :p, :n)", {"g": goal, "p": projection, "n": held})


@pytest.mark.parametrize("jobs", [1, 2])
def test_rows_of_a_goal_without_events_are_named_by_audit_and_deleted_by_replay(filled, jobs):
    """Every stored row is compared with a replay's, not only those of the goals the heads name (issue 30, item 4)."""
    before = filled.projection_rows()
    stored = filled.projection_rows(goal_id="b", projection="review-claim")
    ghosts = [dict(row, goal_id="ghost") for row in stored]
    _insert_rows_and_counts(filled, ghosts)
    _execute(filled, "INSERT INTO projection_counts (goal_id, projection, row_count) VALUES ('counted-ghost', 'review-claim', 3)")
    code, report = _cli_audit(filled, "--jobs", str(jobs))
    assert code == 1
    assert sorted((p["kind"], p["goal_id"], p["position"]) for p in report["problems"]) == sorted(
        [("projection_extra", "ghost", row["position"]) for row in ghosts]
        + [("projection_count_mismatch", "counted-ghost", None)]
    )
    assert report["goals_checked"] == 2  # (the ledger's goals: the rows' goal is none)
    rebuilt = replay(filled, jobs=jobs)
    assert (rebuilt["goals"], rebuilt["rows_changed"], rebuilt["counts_repaired"]) == (2, len(ghosts), 2)
    assert filled.projection_rows() == before
    assert filled.projection_counts("ghost") == {} and filled.projection_counts("counted-ghost") == {}
    assert _problems(filled) == set()


def test_a_row_no_fold_makes_is_deleted_by_replay_with_its_count(filled):
    before = filled.projection_rows()
    row = dict(filled.projection_rows(goal_id="a", projection="review-claim")[0], projection="forged-projection", key="forged")
    _insert_rows_and_counts(filled, [row])
    code, report = _cli_audit(filled)
    assert code == 1
    assert [(p["kind"], p["goal_id"], p["position"]) for p in report["problems"]] == [("projection_extra", "a", row["position"])]
    assert replay(filled)["rows_changed"] == 1
    assert filled.projection_rows() == before and "forged-projection" not in filled.projection_counts("a")
    assert _problems(filled) == set()


def _batch_files(folder, tag: str):
    """_batch(tag) as the files a user ingests."""
    folder.mkdir()
    comparison = json.loads((FIXTURE / "comparison.json").read_text())
    comparison["comparison_id"] = f"cmp-{tag}"
    (folder / "comparison.json").write_text(json.dumps(comparison))
    for i, name in enumerate(("run-1.json", "run-2.json")):
        run = json.loads((FIXTURE / name).read_text())
        run["job_name"] = f"job-{tag}-{i}"
        (folder / name).write_text(json.dumps(run))
    return folder


@pytest.mark.parametrize(
    "edit",
    [
        {"last_chain_hash": "f" * 64},
        {"last_version": 3},
        {"last_version": 5},
        {"last_position": 11},
        {"last_recorded_at": "2001-01-01T00:00:00.000000Z"},
        None,  # the head deleted
    ],
    ids=["chain-hash", "version-back", "version-ahead", "position", "recorded-at", "deleted"],
)
def test_an_ingest_refuses_a_goal_whose_head_is_not_its_last_event_and_replay_rebuilds_it(filled, tmp_path, edit):
    """The next append would build its version and chain link on the tampered head: refused, nothing written
    (issue 30, items 5 and 9); replay rebuilds the head from the events, and the ingest then goes through."""
    head = filled.head("a")
    where = stream_heads.c.goal_id == "a"
    _execute(filled, stream_heads.delete().where(where) if edit is None else update(stream_heads).where(where).values(edit))
    assert _problems(filled) == {("head_missing" if edit is None else "head_mismatch", 12)}  # (audit names what the ingest refuses)
    before = _rows(filled)
    url = filled.engine.url.render_as_string(hide_password=False)
    result = CliRunner().invoke(cli, ["--database-url", url, "ingest", "--goal", "a", str(_batch_files(tmp_path / "five", "five"))])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    [line] = result.stderr.splitlines()
    assert "goal 'a'" in line and "benchledger replay" in line and "nothing was written" in line
    assert _rows(filled) == before
    assert replay(filled)["heads_repaired"] == 1
    assert filled.head("a") == head and _problems(filled) == set()
    result = CliRunner().invoke(cli, ["--database-url", url, "ingest", "--goal", "a", str(tmp_path / "five")])
    assert result.exit_code == 0, result.output
    assert filled.event_count() == 20 and _problems(filled) == set()


def test_replay_deletes_a_head_without_events_and_builds_a_missing_one(filled):
    _execute(filled, insert(stream_heads).values(dict(filled.head("b"), goal_id="invented")))
    _execute(filled, stream_heads.delete().where(stream_heads.c.goal_id == "b"))
    assert _problems(filled) == {("missing_events", None), ("head_missing", 16)}
    rebuilt = replay(filled)
    assert rebuilt["heads_repaired"] == 2 and rebuilt["goals"] == 2
    assert [h["goal_id"] for h in filled.heads()] == ["a", "b"] and _problems(filled) == set()
    assert replay(filled)["heads_repaired"] == 0  # a healthy ledger: nothing written


def test_an_edited_last_activity_is_named_by_audit(filled):
    """`goals` and the report show the head's last_recorded_at as the goal's last activity (issue 30, item 15)."""
    _execute(filled, update(stream_heads).where(stream_heads.c.goal_id == "b").values(last_recorded_at="2099-01-01T00:00:00.000000Z"))
    code, report = _cli_audit(filled)
    assert code == 1
    [problem] = report["problems"]
    assert (problem["kind"], problem["goal_id"], problem["position"]) == ("head_mismatch", "b", 16)
    assert "recorded 2099-01-01T00:00:00.000000Z" in problem["detail"]


@pytest.mark.parametrize("retracted", [[], ["00000000-0000-0000-0000-000000000000"]], ids=["emptied", "invented"])
def test_an_ingest_does_not_resume_from_a_checkpoint_whose_retracted_ids_were_edited(filled, retracted):
    """A checkpoint is resumed from only if its retracted ids are those of the goal's retractions (issue 30, item 5):
    resumed, the edited list would carry on into every later checkpoint and row."""
    from benchledger.ledger.service.retract import retract

    run = next(e for e in filled.read_goal("a") if e.kind == "run")
    retract(filled, [run.event_id], "a flaky run", goal_id="a")
    [checkpoint] = filled.projection_rows(goal_id="a", projection="projector-checkpoint")
    payload = json.loads(checkpoint["payload"])
    assert payload["retracted"] == [run.event_id]
    edited = canonical.canonical_json({**payload, "retracted": retracted})
    _execute(filled, update(projection_rows).where(
        projection_rows.c.goal_id == "a", projection_rows.c.projection == "projector-checkpoint"
    ).values(payload=edited))
    ingest(filled, "a", _batch("five"), source="cli ingest")
    assert _problems(filled) == set()  # the goal was folded from its first event: its rows are a replay's
    [checkpoint] = filled.projection_rows(goal_id="a", projection="projector-checkpoint")
    assert json.loads(checkpoint["payload"])["retracted"] == [run.event_id]


# -- a history-only audit (`audit --history-only`, the one `report` shows by default) -----------


def _history_problems(report: dict) -> set[tuple[str, int | None]]:
    return {(p["kind"], p["position"]) for p in report["problems"] if not p["kind"].startswith("projection_") and p["kind"] != "replay_failed"}


def test_a_history_only_audit_proves_what_a_full_one_does_of_the_history_and_says_it_left_the_projections(filled):
    code, full = _cli_audit(filled)
    code_h, history = _cli_audit(filled, "--history-only")
    assert (code, code_h) == (0, 0) and history["ok"]
    assert (history["events_checked"], history["goals_checked"], history["digest"]) == (full["events_checked"], full["goals_checked"], full["digest"])
    assert (full["projections"], full["projections_checked"]) == ("checked", full["projections_checked"]) and full["projections_checked"] > 0
    assert (history["projections"], history["projections_checked"]) == ("not checked", 0)
    goal_full, goal_history = audit(filled, goal_id="a"), audit(filled, goal_id="a", projections=False)
    assert goal_history["digest"] == goal_full["digest"] and goal_history["events_checked"] == 8 and goal_history["goals_checked"] == 1
    assert _cli_audit(filled, "--history-only", "--expect-digest", full["digest"])[1]["expected_digest_verified"] is True
    markdown = CliRunner().invoke(cli, ["--database-url", filled.engine.url.render_as_string(hide_password=False), "audit", "--history-only"])
    assert "- projections checked: not checked (--history-only" in markdown.output


def test_a_history_only_audit_catches_every_history_change_a_full_one_does_and_no_projection_edit(filled):
    _unprotect(filled)
    original = _rows(filled)
    digest = audit(filled)["digest"]
    for column, row in ((c, r) for c in COLUMNS for r in original[::5]):
        changed = _modified(row, column)
        _execute(filled, update(events).where(events.c.position == row["position"]).values({column: changed}))
        history = audit(filled, projections=False, expect_digest=digest)
        assert history["problems"] and _history_problems(history) == _history_problems(audit(filled, expect_digest=digest)), column
        where = events.c.position == (changed if column == "position" else row["position"])
        _execute(filled, update(events).where(where).values({column: row[column]}))
    _execute(filled, update(stream_heads).where(stream_heads.c.goal_id == "a").values(last_version=3))
    assert ("head_mismatch", 12) in _problems(filled, projections=False)
    _execute(filled, update(stream_heads).where(stream_heads.c.goal_id == "a").values(last_version=8))
    # what it does not check, it does not claim: a projection row edited is the full audit's to find
    _execute(filled, "UPDATE projection_rows SET payload = replace(payload, 'true', 'false') WHERE projection = 'review-claim' AND goal_id = 'a'")
    assert _problems(filled, projections=False) == set()
    assert {kind for kind, _ in _problems(filled)} == {"projection_mismatch"}
