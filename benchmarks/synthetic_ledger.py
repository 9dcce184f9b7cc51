"""The 10^4..10^6-event ledgers of the history/show measurements.

Ingesting a million events through the CLI would take hours, so real goals
are ingested once (templates) and cloned under new goal ids and positions.
Each clone's rows are built by the store's own record builder
(:func:`benchledger.ledger.storage.event_records.chained_record`: event ids, batch
manifests naming the clone's events, the hash chain over every stored field),
so a built ledger audits clean and its goals equal ordinary ingests."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, insert, text

from benchledger.ledger.service.folding import row_record
from benchledger.ledger.service.ingest import ingest
from benchledger.ledger.service.intake.artifacts import to_artifact
from benchledger.ledger.service.intake.files import parse_document
from benchledger.ledger.storage import canonical, merkle_log
from benchledger.ledger.storage.event_records import NewEvent, StoredEvent, chained_record, head_record
from benchledger.ledger.storage.schema import events as events_table
from benchledger.ledger.storage.schema import projection_rows as projection_table
from benchledger.ledger.storage.schema import stream_heads
from benchledger.ledger.storage.store import Store
from benchledger.projections.batch_manifest import BATCH_KIND
from benchledger.projections.catalog import ATTEMPT_EVIDENCE, CHECKPOINT, COMPARISON_INDEX, STEP, step_key
from benchledger.projections.projector import project_goal
from benchmarks import workload as wl
from benchmarks.harness import SOURCE

# Rows whose payload names events by id (cloned with the ids renamed); no other payload may.
NAMES_EVENTS = (CHECKPOINT, COMPARISON_INDEX, ATTEMPT_EVIDENCE)

# ---------------------------------------------------------------------------------------------
# 4. history / show latency on 10^4..10^6-event ledgers
# ---------------------------------------------------------------------------------------------


@dataclass
class TemplateGoal:
    """One real goal, ingested through the real path once; cloned under other goal ids."""

    events: list[StoredEvent]  # stream order
    rows: list[dict[str, Any]]  # projection rows as stored (row_record)
    batch_members: dict[int, list[int]]  # index of a batch event -> indexes of the events it lists


def build_templates(templates: wl.Templates, count: int, seed: int) -> list[TemplateGoal]:
    ledger = Store.in_memory()
    goals = wl.make_workload(templates, count, seed, prefix="tpl")
    out = []
    for goal in goals:
        for batch in goal.batches:
            arts = [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents]
            ingest(ledger, goal.goal_id, arts, source=SOURCE)
        events = ledger.read_goal(goal.goal_id)
        index = {e.event_id: i for i, e in enumerate(events)}
        members = {
            i: [index[m["event_id"]] for m in e.payload["members"]] for i, e in enumerate(events) if e.kind == BATCH_KIND
        }
        rows = ledger.projection_rows(goal_id=goal.goal_id)
        for row in rows:  # cloning is only exact if no payload but those of NAMES_EVENTS (renamed by clone_goal) mentions an event id
            if row["projection"] not in NAMES_EVENTS and row["payload"] and any(e.event_id in row["payload"] for e in events):
                raise RuntimeError(f"projection {row['projection']} embeds an event id; cloning would be wrong")
        out.append(TemplateGoal(events, rows, members))
    ledger.close()
    return out


def clone_goal(tpl: TemplateGoal, goal_id: str, positions: list[int], stamps: list[str]) -> tuple[list[dict], list[dict], dict]:
    """The events, projection rows and stream head ``tpl`` would have had as ``goal_id`` at ``positions``.

    Built as ``Store.append`` builds them: event ids from (goal, kind, payload hash, source hash), batch manifests
    naming the clone's event ids, and the store's own :func:`chained_record` for the hash chain.
    """
    new_ids: list[str] = []
    records: list[dict] = []
    prev = canonical.GENESIS_HASH
    position_map: dict[int, int] = {}
    for i, (event, position, stamp) in enumerate(zip(tpl.events, positions, stamps)):
        if event.kind == BATCH_KIND:
            manifest = json.loads(event.payload_text)
            for member, j in zip(manifest["members"], tpl.batch_members[i]):
                member["event_id"] = new_ids[j]
            body, digest = NewEvent(event.kind, manifest).canonical
        else:
            body, digest = event.payload_text, event.payload_sha256
        # An artifact is keyed on its source hash as well (docs/hash-chain.md §2); keep the template's form.
        keyed = event.source_sha256 and event.event_id == canonical.event_id_for(
            event.goal_id, event.kind, event.payload_sha256, event.source_sha256
        )
        event_id = canonical.event_id_for(goal_id, event.kind, digest, event.source_sha256 if keyed else None)
        new_ids.append(event_id)
        record = chained_record(
            prev, position=position, event_id=event_id, goal_id=goal_id, stream_version=i + 1, kind=event.kind,
            schema_version=event.schema_version, payload=body, payload_sha256=digest,
            source_sha256=event.source_sha256, recorded_at=stamp, source=SOURCE,
        )
        records.append(record)
        prev = record["chain_hash"]
        position_map[event.position] = position
    id_map = {old.event_id: new for old, new in zip(tpl.events, new_ids)}
    rows = []
    for row in tpl.rows:
        new_position = position_map[row["position"]]
        # (a lifecycle step is keyed by its event's position, every other row by an event id or `current`)
        key = step_key(new_position) if row["projection"] == STEP else id_map.get(row["key"], row["key"])
        cloned = {**row, "goal_id": goal_id, "key": key, "position": new_position}
        if row["projection"] in NAMES_EVENTS:  # they name the goal's events by id
            cloned["payload"] = canonical.canonical_json(_renamed_ids(json.loads(row["payload"]), id_map))
        rows.append(cloned)
    return records, rows, head_record(records[-1])


def _renamed_ids(value: Any, id_map: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _renamed_ids(v, id_map) for k, v in value.items()}
    return id_map.get(value, value) if isinstance(value, str) else value


def build_big_ledger(ledger: Store, tpls: list[TemplateGoal], target_events: int, measured_template: int, window: int = 100) -> tuple[str, int]:
    """Fill ``ledger`` with ordinary goals (clones of real goals) until it holds ``target_events``.

    Goals arrive in waves of ``window`` that progress together (their batches
    interleave), over a three-year timeline. Returns the id of the measured goal (an
    ordinary goal in the middle of the ledger) and the number of events written.
    """
    plan: list[tuple[str, TemplateGoal]] = []
    total = 0
    i = 0
    while total < target_events:
        tpl = tpls[i % len(tpls)]
        plan.append((f"goal-{i:07d}", tpl))
        total += len(tpl.events)
        i += 1
    middle = len(plan) // 2
    while middle < len(plan) and (middle % len(tpls)) != measured_template:
        middle += 1
    if middle >= len(plan):
        middle = measured_template
    measured = plan[middle][0]
    # arrival order: waves of `window` goals, round-robin over their batches
    slots: dict[str, list[int]] = {g: [] for g, _ in plan}
    position = 0
    for w in range(0, len(plan), window):
        wave = plan[w : w + window]
        cursors = {g: 0 for g, _ in wave}
        active = True
        while active:
            active = False
            for g, tpl in wave:
                c = cursors[g]
                if c >= len(tpl.events):
                    continue
                active = True
                # one batch: the members and the batch event that follows them
                end = c
                while tpl.events[end].kind != BATCH_KIND:
                    end += 1
                for _ in range(c, end + 1):
                    position += 1
                    slots[g].append(position)
                cursors[g] = end + 1
    start = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
    span = dt.timedelta(days=3 * 365).total_seconds()
    def stamp(p: int) -> str:
        return (start + dt.timedelta(seconds=span * p / position)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    event_rows: list[dict] = []
    projection_buffer: list[dict] = []
    heads: list[dict] = []
    written = 0

    mark = "?" if ledger.dialect == "sqlite" else "%s"

    def raw_insert(connection, table: Table, rows: list[dict]) -> None:
        # the DB-API's executemany straight away: the same rows SQLAlchemy would send, minus its per-row work
        names = [c.name for c in table.c]
        if ledger.dialect == "postgresql":  # COPY: the server's own bulk path (CSV: payloads hold tabs and backslashes)
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerows(tuple("\\N" if r[n] is None else r[n] for n in names) for r in rows)
            buffer.seek(0)
            cursor = connection.connection.dbapi_connection.cursor()
            cursor.copy_expert(f"COPY {table.name} ({', '.join(names)}) FROM STDIN WITH (FORMAT csv, NULL '\\N')", buffer)
            return
        sql = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join([mark] * len(names))})"
        connection.exec_driver_sql(sql, [tuple(r[n] for n in names) for r in rows])

    def flush(force: bool = False) -> None:
        nonlocal event_rows, projection_buffer
        if not force and len(event_rows) < 20000:
            return
        with ledger.engine.begin() as connection:
            if event_rows:
                raw_insert(connection, events_table, event_rows)
            if projection_buffer:
                raw_insert(connection, projection_table, projection_buffer)
        event_rows, projection_buffer = [], []

    # write in position order (as ingest would), a wave at a time
    for w in range(0, len(plan), window):
        wave_records = []
        for g, tpl in plan[w : w + window]:
            positions = slots[g]
            records, rows, head = clone_goal(tpl, g, positions, [stamp(p) for p in positions])
            wave_records += records
            projection_buffer += rows
            heads.append(head)
        wave_records.sort(key=lambda r: r["position"])
        event_rows += wave_records
        written += len(wave_records)
        flush()
    flush(force=True)
    with ledger.engine.begin() as connection:
        for i in range(0, len(heads), 5000):
            connection.execute(insert(stream_heads), heads[i : i + 5000])
    with ledger.transaction(write=True) as tx:  # the rows were inserted beside the store: count them as it does
        tx.recount_projection_rows([head["goal_id"] for head in heads])
        merkle_log.rebuild(tx)  # and build the Merkle log the appends would have kept
    with ledger.engine.begin() as connection:  # fresh statistics, as a long-lived ledger has
        connection.execute(text("ANALYZE"))
    return measured, written


def verify_goal(ledger: Store, goal_id: str) -> None:
    """The measured goal's stored projections equal a fold of its events (the clone is a real goal)."""
    events = ledger.read_goal(goal_id)
    want = sorted((row_record(goal_id, r) for r in project_goal(events, strict=True).rows.values()), key=lambda r: (r["projection"], r["key"]))
    have = ledger.projection_rows(goal_id=goal_id)
    if want != have:
        raise RuntimeError(f"built ledger: goal {goal_id}'s projections differ from a fold of its events")
