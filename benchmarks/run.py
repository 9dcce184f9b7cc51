#!/usr/bin/env python
"""benchledger performance benchmark: one script, one seeded workload, every baseline in the same run.

    .venv/bin/python -m benchmarks.run --quick            # about a minute
    .venv/bin/python -m benchmarks.run                    # the full run (10^4, 10^5, 10^6-event ledgers)

See benchmarks/README.md for what is measured, how, and the latest results.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import csv
import datetime as dt
import gc
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, create_engine, insert, select, text
from sqlalchemy import event as sa_event

from benchledger.ledger import canonical
from benchledger.ledger.application import BatchRequest, ingest, ingest_many, replay, row_record
from benchledger.ledger.intake.artifacts import to_artifact
from benchledger.ledger.intake.files import parse_document
from benchledger.ledger.schema import events as events_table
from benchledger.ledger.schema import projection_rows as projection_table
from benchledger.ledger.schema import stream_heads
from benchledger.ledger.store import Ledger, StoredEvent, normalize_url
from benchledger.ledger.views import history, show
from benchledger.projections.linking import BATCH_KIND, project_goal
from benchmarks import workload as wl

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_PG = os.environ.get("BENCHLEDGER_BENCH_POSTGRES_URL") or os.environ.get(
    "BENCHLEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
SOURCE = "cli ingest"
README = Path(__file__).resolve().parent / "README.md"
RESULTS_BEGIN = "<!-- results:begin -->"
RESULTS_END = "<!-- results:end -->"

try:  # optional baseline
    from eventsourcing.application import Application as _ESApplication
    from eventsourcing.domain import Aggregate as _ESAggregate
    from eventsourcing.domain import event as _es_event

    class BenchGoal(_ESAggregate):
        """One goal as an eventsourcing aggregate; every artifact is one aggregate event."""

        def __init__(self, goal_id: str) -> None:
            self.goal_id = goal_id
            self.artifacts = 0

        @_es_event("ArtifactRecorded")
        def record(self, kind: str, payload: Any) -> None:
            self.artifacts += 1

    class BenchGoalApp(_ESApplication):
        pass

    def _same_durability_for_eventsourcing() -> None:
        """eventsourcing's SQLite runs WAL with synchronous=FULL (an fsync per commit); the ledger and the
        plain floor run WAL with synchronous=NORMAL. Give eventsourcing the same setting so the
        comparison measures code, not fsyncs."""
        from eventsourcing import sqlite as es_sqlite

        original = es_sqlite.SQLiteConnectionPool._create_connection
        if getattr(original, "_bench_patched", False):
            return

        def create(self):  # type: ignore[no-untyped-def]
            connection = original(self)
            connection._sqlite_conn.execute("PRAGMA synchronous=NORMAL")
            return connection

        create._bench_patched = True  # type: ignore[attr-defined]
        es_sqlite.SQLiteConnectionPool._create_connection = create

    HAVE_EVENTSOURCING = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_EVENTSOURCING = False


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------


_T0 = time.perf_counter()


def log(message: str) -> None:
    print(f"{time.perf_counter() - _T0:7.1f}s {message}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if not a or not b else a / b


@contextlib.contextmanager
def maybe_profile(enabled: bool, out: Path | None, name: str) -> Iterator[None]:
    if not enabled or out is None:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        out.mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(out / f"{name}.prof")
        with open(out / f"{name}.txt", "w") as fh:
            stats = pstats.Stats(profiler, stream=fh).strip_dirs()
            stats.sort_stats("cumulative").print_stats(45)
            stats.sort_stats("tottime").print_stats(30)
        log(f"    profile written to {out / name}.prof/.txt")


def sqlite_pragmas(engine) -> None:
    """The same durability settings the ledger uses (WAL, synchronous=NORMAL), so the floor is fair."""

    @sa_event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()


# ---------------------------------------------------------------------------------------------
# backends: a fresh database per use, cleaned up at the end
# ---------------------------------------------------------------------------------------------


class Backend:
    name: str

    def fresh_url(self, label: str) -> str:
        raise NotImplementedError

    def drop(self, url: str) -> None:
        raise NotImplementedError

    def cleanup(self) -> None:
        raise NotImplementedError

    def open_ledger(self, url: str) -> Ledger:
        ledger = Ledger.open(url, migrate=False)
        from benchledger.ledger.migrate import ensure_current, upgrade

        if self.name == "postgresql":
            upgrade(ledger.engine)  # what `benchledger db upgrade` does, once per fresh database
        ensure_current(ledger.engine)
        return ledger

    def eventsourcing_env(self, url: str) -> dict[str, str]:
        raise NotImplementedError


class SQLiteBackend(Backend):
    name = "sqlite"

    def __init__(self, workdir: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="benchledger-bench-", dir=workdir))

    def fresh_url(self, label: str) -> str:
        return f"sqlite:///{self.dir / (label + '.sqlite')}"

    def path(self, url: str) -> Path:
        return Path(url[len("sqlite:///"):])

    def drop(self, url: str) -> None:
        path = self.path(url)
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def eventsourcing_env(self, url: str) -> dict[str, str]:
        return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(self.path(url)) + ".es"}


class PostgresBackend(Backend):
    name = "postgresql"

    def __init__(self, admin_url: str) -> None:
        self.admin_url = normalize_url(admin_url)
        self.admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with self.admin.connect() as c:
            c.execute(text("SELECT 1"))
        self.created: list[str] = []
        self.prefix = f"benchledger_bench_{os.getpid()}"

    def fresh_url(self, label: str) -> str:
        name = f"{self.prefix}_{label}".lower()
        with self.admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            c.execute(text(f'CREATE DATABASE "{name}"'))
        self.created.append(name)
        return self.admin.url.set(database=name).render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        name = create_engine(url).url.database
        with self.admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        if name in self.created:
            self.created.remove(name)

    def cleanup(self) -> None:
        for name in list(self.created):
            with contextlib.suppress(Exception), self.admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.created.clear()
        self.admin.dispose()

    def eventsourcing_env(self, url: str) -> dict[str, str]:
        u = create_engine(url).url
        return {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": u.database,
            "POSTGRES_HOST": u.host or "127.0.0.1",
            "POSTGRES_PORT": str(u.port or 5432),
            "POSTGRES_USER": u.username or "postgres",
            "POSTGRES_PASSWORD": u.password or "",
        }


def cli_url(url: str) -> str:
    """The URL as a user would type it for the CLI (postgresql:// means psycopg2 there)."""
    return url.replace("postgresql+psycopg2://", "postgresql://")


# ---------------------------------------------------------------------------------------------
# 2. bulk ingest
# ---------------------------------------------------------------------------------------------


# Artifacts per transaction of the bulk measurements: a backlog arrives in transactions of about this
# many artifacts (whole batches: a batch is never split), for benchledger and every baseline alike.
BULK_ARTIFACTS = 500


@dataclass
class Prepared:
    order: list[tuple[wl.Goal, wl.Batch]]
    payloads: list[list[tuple[str, Any]]]  # per batch: (kind, normalized payload) - for the baselines
    artifact_count: int
    payload_bytes: list[int]
    raw_bytes: list[int]

    def transactions(self, bulk: bool) -> list[list[int]]:
        """Indexes of the batches each transaction holds: one batch each, or whole batches up to ~BULK_ARTIFACTS."""
        if not bulk:
            return [[i] for i in range(len(self.order))]
        groups: list[list[int]] = [[]]
        held = 0
        for i, (_goal, batch) in enumerate(self.order):
            if held >= BULK_ARTIFACTS:
                groups.append([])
                held = 0
            groups[-1].append(i)
            held += len(batch.documents)
        return groups


def prepare(goals: list[wl.Goal]) -> Prepared:
    order = wl.interleaved(goals)
    payloads, sizes, raw = [], [], []
    for _goal, batch in order:
        arts = [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents]
        payloads.append([(a.kind, a.payload) for a in arts])
        sizes += [len(canonical.canonical_json(a.payload).encode()) for a in arts]
        raw += [len(doc) for doc in batch.documents]
    return Prepared(order, payloads, len(sizes), sizes, raw)


def bench_benchledger_ingest(ledger: Ledger, prep: Prepared, *, bulk: bool, profile_dir: Path | None = None) -> dict[str, Any]:
    """The real path a user pays: parse + normalize (intake) + ingest (append, chain, inline projections).

    ``bulk``: each transaction holds the batches of :meth:`Prepared.transactions` (``ingest_many``);
    otherwise every batch is its own ``ingest`` call, as one ``benchledger ingest`` per run does.
    """
    normalize_s = 0.0
    gc.collect()
    with maybe_profile(profile_dir is not None, profile_dir, f"{'bulk' if bulk else 'per_batch'}_ingest_{ledger.dialect}"):
        start = time.perf_counter()
        for group in prep.transactions(bulk):
            t0 = time.perf_counter()
            requests = []
            for i in group:
                goal, batch = prep.order[i]
                artifacts = [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents]
                requests.append(BatchRequest(goal.goal_id, artifacts))
            normalize_s += time.perf_counter() - t0
            ingest_many(ledger, requests, source=SOURCE)
        elapsed = time.perf_counter() - start
    return {
        "seconds": elapsed,
        "events_per_s": prep.artifact_count / elapsed,
        "normalize_share": normalize_s / elapsed,
        "normalize_events_per_s": prep.artifact_count / normalize_s if normalize_s else None,
    }


def _plain_table(name: str) -> tuple[MetaData, Table]:
    meta = MetaData()
    table = Table(
        name,
        meta,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("goal_id", String(121), nullable=False),
        Column("kind", String(64), nullable=False),
        Column("payload", Text, nullable=False),
    )
    return meta, table


def bench_plain_insert(url: str, prep: Prepared, *, bulk: bool) -> dict[str, Any]:
    """A bare SQLAlchemy Core events table: json.dumps + INSERT, in the same transactions as benchledger."""
    engine = create_engine(normalize_url(url))
    if engine.dialect.name == "sqlite":
        sqlite_pragmas(engine)
    meta, table = _plain_table(f"plain_events_{'bulk' if bulk else 'per_batch'}")
    meta.create_all(engine)
    batches = [
        [(prep.order[i][0].goal_id, kind, payload) for i in group for kind, payload in prep.payloads[i]]
        for group in prep.transactions(bulk)
    ]
    gc.collect()
    start = time.perf_counter()
    with engine.connect() as connection:
        for rows in batches:
            with connection.begin():
                connection.execute(insert(table), [{"goal_id": g, "kind": k, "payload": json.dumps(p)} for g, k, p in rows])
    elapsed = time.perf_counter() - start
    engine.dispose()
    return {"seconds": elapsed, "events_per_s": prep.artifact_count / elapsed}


def bench_eventsourcing(env: dict[str, str], prep: Prepared, *, bulk: bool) -> dict[str, Any]:
    if env["PERSISTENCE_MODULE"].endswith("sqlite"):
        _same_durability_for_eventsourcing()
    app = BenchGoalApp(env=env)
    aggregates: dict[str, BenchGoal] = {}
    gc.collect()
    start = time.perf_counter()
    for group in prep.transactions(bulk):
        touched: dict[str, BenchGoal] = {}
        for i in group:
            goal = prep.order[i][0]
            aggregate = aggregates.get(goal.goal_id)
            if aggregate is None:
                aggregate = aggregates[goal.goal_id] = BenchGoal(goal.goal_id)
            for kind, payload in prep.payloads[i]:
                aggregate.record(kind, payload)
            touched[goal.goal_id] = aggregate
        app.save(*touched.values())  # one commit per transaction, like the others
    elapsed = time.perf_counter() - start
    with contextlib.suppress(Exception):
        app.close()
    # the aggregates' creation events are written too; count only the artifacts, like the others
    return {"seconds": elapsed, "events_per_s": prep.artifact_count / elapsed}


# ---------------------------------------------------------------------------------------------
# 3. replay
# ---------------------------------------------------------------------------------------------


def bench_replay(ledger: Ledger, profile_dir: Path | None = None) -> dict[str, Any]:
    gc.collect()
    with maybe_profile(profile_dir is not None, profile_dir, f"replay_{ledger.dialect}"):
        start = time.perf_counter()
        report = replay(ledger)
        elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "events": report["events"], "events_per_s": report["events"] / elapsed, "faulted": len(report["faulted"])}


def bench_fold_only(ledger: Ledger) -> dict[str, Any]:
    """Replay's CPU work alone: every goal's events (already read and decoded) folded into rows, serialized.

    No database at all: this is the ceiling the reducers and the linking
    rules put on replay (and on bulk ingest, which folds the same events).
    """
    goals: dict[str, list[StoredEvent]] = {}
    for stored in ledger.read_all():
        goals.setdefault(stored.goal_id, []).append(stored)
        stored.payload  # noqa: B018 - decoded once here (a cached property), outside the timed part
    gc.collect()
    start = time.perf_counter()
    for goal, events in goals.items():
        for row in project_goal(events, strict=False).rows.values():
            row_record(goal, row)
    elapsed = time.perf_counter() - start
    count = sum(map(len, goals.values()))
    return {"seconds": elapsed, "events": count, "events_per_s": count / elapsed}


def bench_read_decode(url: str) -> dict[str, Any]:
    """Every row of the same events table, in position order, payload decoded with json.loads."""
    engine = create_engine(normalize_url(url))
    gc.collect()
    start = time.perf_counter()
    count = 0
    with engine.connect() as connection:
        result = connection.execution_options(yield_per=2000).execute(select(events_table).order_by(events_table.c.position))
        for row in result:
            json.loads(row.payload)
            count += 1
    elapsed = time.perf_counter() - start
    engine.dispose()
    return {"seconds": elapsed, "events": count, "events_per_s": count / elapsed}


# ---------------------------------------------------------------------------------------------
# 1. one artifact, whole process
# ---------------------------------------------------------------------------------------------


def find_benchledger() -> list[str]:
    beside = Path(sys.executable).parent / "benchledger"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("benchledger")
    if found:
        return [found]
    raise SystemExit("benchledger is not installed next to this Python nor on PATH")


def find_loopx(option: str | None) -> str | None:
    for candidate in (option, os.environ.get("BENCHLEDGER_BENCH_LOOPX"), shutil.which("loopx"), "/opt/loopx-venv/bin/loopx"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def timed_process(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()[-800:]}")
    return elapsed


def bench_one_artifact(
    url: str, goals: list[wl.Goal], docs: list[bytes], loopx: str | None, workdir: Path, reps: int, profile_dir: Path | None = None
) -> dict[str, Any]:
    """``benchledger ingest`` of one comparison into an existing goal, vs LoopX review-claim, vs imports."""
    folder = Path(tempfile.mkdtemp(prefix="one-artifact-", dir=workdir))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    env.pop("BENCHLEDGER_DATABASE_URL", None)
    bl = find_benchledger()
    times: dict[str, list[float]] = {"benchledger": [], "loopx": [], "import": []}
    paths = []
    for i in range(reps + 1):
        path = folder / f"comparison-{i:03d}.json"
        path.write_bytes(docs[i % len(docs)])
        paths.append(path)
    # warm the OS caches once for each command (not counted)
    warm_goal = goals[-1].goal_id
    timed_process([*bl, "--database-url", cli_url(url), "ingest", "--goal", warm_goal, str(paths[-1])], env)
    if loopx:
        timed_process([loopx, "benchmark", "review-claim", "--benchmark-comparison-json", str(paths[-1]), "--format", "json"], env)
    timed_process([sys.executable, "-c", "import sqlalchemy, click"], env)
    for i in range(reps):
        goal = goals[(i * 7) % (len(goals) - 1)].goal_id  # a different ordinary goal each time
        times["benchledger"].append(
            timed_process([*bl, "--database-url", cli_url(url), "ingest", "--goal", goal, str(paths[i])], env)
        )
        if loopx:
            times["loopx"].append(
                timed_process([loopx, "benchmark", "review-claim", "--benchmark-comparison-json", str(paths[i]), "--format", "json"], env)
            )
        times["import"].append(timed_process([sys.executable, "-c", "import sqlalchemy, click"], env))
    if profile_dir is not None:  # after the timed runs: where a one-artifact ingest spends its time
        profile_dir.mkdir(parents=True, exist_ok=True)
        dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
        goal = goals[len(goals) // 3].goal_id
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", *bl, "--database-url", cli_url(url), "ingest", "--goal", goal, str(paths[reps])],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        (profile_dir / f"importtime_ingest_{dialect}.txt").write_text(proc.stderr)
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", str(profile_dir / f"one_artifact_{dialect}.prof"), *bl,
             "--database-url", cli_url(url), "ingest", "--goal", goals[len(goals) // 2].goal_id, str(paths[reps - 1])],
            env=env, stdout=subprocess.DEVNULL, check=False,
        )
        log(f"    importtime and cProfile of one ingest written to {profile_dir}")
    shutil.rmtree(folder, ignore_errors=True)
    return {name: ({"median_s": statistics.median(v), "min_s": min(v), "n": len(v)} if v else None) for name, v in times.items()}


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
    ledger = Ledger.in_memory()
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
        for row in rows:  # cloning is only exact if no payload mentions an event id
            if row["payload"] and any(e.event_id in row["payload"] for e in events):
                raise RuntimeError(f"projection {row['projection']} embeds an event id; cloning would be wrong")
        out.append(TemplateGoal(events, rows, members))
    ledger.close()
    return out


def clone_goal(tpl: TemplateGoal, goal_id: str, positions: list[int], stamps: list[str]) -> tuple[list[dict], list[dict], dict]:
    """The events, projection rows and stream head ``tpl`` would have had as ``goal_id`` at ``positions``.

    Computed exactly as ``Ledger.append`` computes them: event ids from (goal, kind, payload hash),
    batch manifests naming the clone's event ids, the hash chain over every stored field.
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
            body = canonical.canonical_json(manifest)
            digest = canonical.sha256_hex(body)
        else:
            body, digest = event.payload_text, event.payload_sha256
        event_id = canonical.event_id_for(goal_id, event.kind, digest)
        new_ids.append(event_id)
        version = i + 1
        chain = canonical.chain_hash(
            prev, goal_id=goal_id, stream_version=version, kind=event.kind, schema_version=event.schema_version,
            payload_sha256=digest, event_id=event_id, recorded_at=stamp, source=SOURCE, source_sha256=event.source_sha256,
        )
        records.append({
            "position": position, "event_id": event_id, "goal_id": goal_id, "stream_version": version,
            "kind": event.kind, "schema_version": event.schema_version, "payload": body, "payload_sha256": digest,
            "source_sha256": event.source_sha256, "prev_hash": prev, "chain_hash": chain, "recorded_at": stamp, "source": SOURCE,
        })
        prev = chain
        position_map[event.position] = position
    id_map = {old.event_id: new for old, new in zip(tpl.events, new_ids)}
    rows = []
    for row in tpl.rows:
        new_position = position_map[row["position"]]
        rows.append({**row, "goal_id": goal_id, "key": id_map.get(row["key"], row["key"]), "position": new_position})
    head = {
        "goal_id": goal_id, "last_version": len(records), "last_chain_hash": prev,
        "last_position": records[-1]["position"], "last_recorded_at": records[-1]["recorded_at"],
    }
    return records, rows, head


def build_big_ledger(ledger: Ledger, tpls: list[TemplateGoal], target_events: int, measured_template: int, window: int = 100) -> tuple[str, int]:
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
    with ledger.engine.begin() as connection:  # fresh statistics, as a long-lived ledger has
        connection.execute(text("ANALYZE"))
    return measured, written


def measure_latency(ledger: Ledger, goal_id: str, reps: int, profile_dir: Path | None, label: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, fn in (("history", history), ("show", show)):
        for _ in range(3):  # warm-up
            json.dumps(fn(ledger, goal_id))
        samples = []
        gc.collect()
        for _ in range(reps):
            start = time.perf_counter()
            view = fn(ledger, goal_id)
            json.dumps(view)
            samples.append(time.perf_counter() - start)
        out[name] = {"p50_ms": pct(samples, 0.5) * 1e3, "p99_ms": pct(samples, 0.99) * 1e3, "n": reps}
        if profile_dir is not None:  # separate profiled loop; the samples above are unprofiled
            with maybe_profile(True, profile_dir, f"{name}_{label}"):
                for _ in range(reps):
                    json.dumps(fn(ledger, goal_id))
    out["goal_events"] = len(ledger.read_goal(goal_id))
    return out


def verify_goal(ledger: Ledger, goal_id: str) -> None:
    """The measured goal's stored projections equal a fold of its events (the clone is a real goal)."""
    events = ledger.read_goal(goal_id)
    want = sorted((row_record(goal_id, r) for r in project_goal(events, strict=True).rows.values()), key=lambda r: (r["projection"], r["key"]))
    have = ledger.projection_rows(goal_id=goal_id)
    if want != have:
        raise RuntimeError(f"built ledger: goal {goal_id}'s projections differ from a fold of its events")


# ---------------------------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------------------------


@dataclass
class Settings:
    quick: bool
    seed: int
    goals: int
    sizes: list[int]
    latency_reps: int
    process_reps: int
    templates: int
    audit_smallest: bool


def run_backend(backend: Backend, s: Settings, templates: wl.Templates, loopx: str | None, workdir: Path, profile_dir: Path | None) -> dict[str, Any]:
    res: dict[str, Any] = {}
    log(f"[{backend.name}] workload: {s.goals} goals (seed {s.seed})")
    goals = wl.make_workload(templates, s.goals, s.seed)
    prep = prepare(goals)
    res["workload"] = {
        "goals": len(goals),
        "batches": len(prep.order),
        "artifacts": prep.artifact_count,
        "stored_payload_bytes_median": statistics.median(prep.payload_bytes),
        "stored_payload_bytes_mean": round(statistics.mean(prep.payload_bytes)),
        "input_bytes_median": statistics.median(prep.raw_bytes),
    }

    # 2. ingest throughput: bulk transactions (the target), and one transaction per batch
    url = backend.fresh_url("bulk")
    ledger = backend.open_ledger(url)
    for mode, bulk in (("bulk", True), ("per_batch", False)):
        target_url = url if bulk else backend.fresh_url("per_batch")
        target = ledger if bulk else backend.open_ledger(target_url)
        log(f"[{backend.name}] {mode} ingest: benchledger ({prep.artifact_count} artifacts, {len(prep.order)} batches, "
            f"{len(prep.transactions(bulk))} transactions)")
        res[f"{mode}_benchledger"] = bench_benchledger_ingest(target, prep, bulk=bulk)
        log(f"    {res[f'{mode}_benchledger']['events_per_s']:.0f} events/s")
        log(f"[{backend.name}] {mode} ingest: plain SQLAlchemy Core insert")
        res[f"{mode}_plain"] = bench_plain_insert(url, prep, bulk=bulk)
        res[f"{mode}_eventsourcing"] = None
        if HAVE_EVENTSOURCING:
            log(f"[{backend.name}] {mode} ingest: eventsourcing")
            try:
                res[f"{mode}_eventsourcing"] = bench_eventsourcing(backend.eventsourcing_env(backend.fresh_url(f"es_{mode}")), prep, bulk=bulk)
            except Exception as exc:  # e.g. eventsourcing[postgres] (psycopg_pool) missing
                log(f"note: eventsourcing on {backend.name} unavailable ({type(exc).__name__}: {exc}); skipping that baseline")
        if not bulk:
            target.close()
            backend.drop(target_url)
    if profile_dir is not None:  # a separate, profiled pass into another fresh ledger (timings above stay clean)
        purl = backend.fresh_url("bulkprof")
        pledger = backend.open_ledger(purl)
        bench_benchledger_ingest(pledger, prep, bulk=True, profile_dir=profile_dir)
        bench_replay(pledger, profile_dir)
        pledger.close()
        backend.drop(purl)

    # 3. replay
    log(f"[{backend.name}] replay ({ledger.event_count()} events)")
    res["replay_benchledger"] = bench_replay(ledger)
    res["replay_plain"] = bench_read_decode(url)
    res["fold_only"] = bench_fold_only(ledger)
    ledger.close()

    # 1. one artifact, whole process (into the bulk ledger, an existing goal each time)
    log(f"[{backend.name}] one-artifact ingest as a process x{s.process_reps}")
    docs = wl.standalone_comparisons(templates, s.process_reps + 1, s.seed + 1)
    res["one_artifact"] = bench_one_artifact(url, goals, docs, loopx, workdir, s.process_reps, profile_dir)
    backend.drop(url)

    # 4. history/show latency
    tpls = build_templates(templates, s.templates, s.seed + 2)
    by_size = sorted(range(len(tpls)), key=lambda i: (len(tpls[i].events), i))
    measured_template = by_size[len(by_size) // 2]  # an ordinary goal: the median-sized one
    res["latency"] = {}
    for size in s.sizes:
        url = backend.fresh_url(f"n{size}")
        ledger = backend.open_ledger(url)
        log(f"[{backend.name}] building a {size}-event ledger")
        t0 = time.perf_counter()
        goal_id, written = build_big_ledger(ledger, tpls, size, measured_template)
        build_s = time.perf_counter() - t0
        verify_goal(ledger, goal_id)
        audited = None
        if s.audit_smallest and size == min(s.sizes):
            from benchledger.ledger.application import audit

            audited = audit(ledger)["ok"]
            if not audited:
                raise RuntimeError("the built ledger does not pass benchledger audit")
        log(f"    built {written} events in {build_s:.1f}s; measuring {goal_id}")
        lat = measure_latency(ledger, goal_id, s.latency_reps, profile_dir if size == max(s.sizes) else None, f"{backend.name}_{size}")
        lat.update(events=written, build_s=build_s, goal=goal_id, audited=audited)
        res["latency"][str(size)] = lat
        log(f"    history p50 {lat['history']['p50_ms']:.2f} ms p99 {lat['history']['p99_ms']:.2f} ms; show p50 {lat['show']['p50_ms']:.2f} ms")
        ledger.close()
        backend.drop(url)
    return res


def fmt_num(v: float | None, unit: str = "", digits: int = 0) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.{digits}f}{unit}"


def fmt_ratio(v: float | None, target: str | None = None, ok: bool | None = None) -> str:
    if v is None:
        return "n/a"
    mark = "" if ok is None else (" ✅" if ok else " ❌")
    return f"{v:.2f}×{mark}" + (f" (target {target})" if target else "")


def render(results: dict[str, Any]) -> str:
    lines = []
    meta = results["meta"]
    lines.append(f"Run {meta['when']} — {meta['mode']} mode, seed {meta['seed']}, {meta['cpus']} CPUs, Python {meta['python']}, "
                 f"SQLAlchemy {meta['sqlalchemy']}, eventsourcing {meta['eventsourcing'] or 'not installed'}, "
                 f"LoopX {meta['loopx'] or 'not installed'}; total {meta['total_s']:.0f} s; "
                 f"1-min load average {meta.get('loadavg_start', float('nan')):.1f} at start, {meta.get('loadavg_end', float('nan')):.1f} at end.")
    lines.append("")
    for backend, r in results["backends"].items():
        w = r["workload"]
        lines.append(f"### {backend}")
        lines.append("")
        lines.append(f"Workload: {w['goals']} goals, {w['batches']} ingest batches, {w['artifacts']} artifacts; stored payload "
                     f"median {w['stored_payload_bytes_median']:.0f} B (mean {w['stored_payload_bytes_mean']} B), input file median {w['input_bytes_median']:.0f} B.")
        lines.append("")
        lines.append("| measurement | benchledger | baseline | ratio (benchledger / baseline) |")
        lines.append("|---|---|---|---|")
        one = r["one_artifact"]
        bl = one["benchledger"]["median_s"]
        if one.get("loopx"):
            rr = ratio(bl, one["loopx"]["median_s"])
            lines.append(f"| 1. one-artifact `ingest`, whole process, median | {bl*1e3:.0f} ms | LoopX `review-claim` {one['loopx']['median_s']*1e3:.0f} ms | {fmt_ratio(rr, '≤ 0.7', rr is not None and rr <= 0.7)} |")
        else:
            lines.append(f"| 1. one-artifact `ingest`, whole process, median | {bl*1e3:.0f} ms | LoopX not installed | n/a |")
        lines.append(f"| 1. one-artifact `ingest`, whole process, median | {bl*1e3:.0f} ms | `python -c \"import sqlalchemy, click\"` {one['import']['median_s']*1e3:.0f} ms | {fmt_ratio(ratio(bl, one['import']['median_s']))} |")
        for mode, label, targeted in (
            ("bulk", f"2. bulk ingest (normalize + chain + projections; ~{BULK_ARTIFACTS}-artifact transactions), events/s", True),
            ("per_batch", "2. per-run ingest (one transaction per `ingest` batch), events/s", False),
        ):
            b = r[f"{mode}_benchledger"]["events_per_s"]
            plain = r[f"{mode}_plain"]["events_per_s"]
            rr = ratio(b, plain)
            lines.append(f"| {label} | {fmt_num(b)} | plain Core insert, same transactions {fmt_num(plain)} | "
                         f"{fmt_ratio(rr, '≥ 0.6' if targeted else None, rr >= 0.6 if targeted else None)} |")
            es = r.get(f"{mode}_eventsourcing")
            if es:
                rr = ratio(b, es["events_per_s"])
                lines.append(f"| {label} | {fmt_num(b)} | eventsourcing aggregates, same transactions {fmt_num(es['events_per_s'])} | "
                             f"{fmt_ratio(rr, '≥ 1.2' if targeted else None, rr >= 1.2 if targeted else None)} |")
            else:
                lines.append(f"| {label} | {fmt_num(b)} | eventsourcing not installed | n/a |")
        rp = r["replay_benchledger"]["events_per_s"]
        rr = ratio(rp, r["replay_plain"]["events_per_s"])
        lines.append(f"| 3. full replay, events/s ({r['replay_benchledger']['events']} events) | {fmt_num(rp)} | read + json.loads {fmt_num(r['replay_plain']['events_per_s'])} | {fmt_ratio(rr, '≥ 0.4', rr >= 0.4)} |")
        lat = r["latency"]
        sizes = sorted(lat, key=int)
        smallest = lat[sizes[0]]
        for size in sizes:
            at_size = lat[size]
            for view in ("history", "show"):
                p99 = at_size[view]["p99_ms"]
                growth = ratio(p99, smallest[view]["p99_ms"])
                target = ""
                if view == "history" and int(size) >= 10**6:
                    ok = p99 <= 20 and (growth or 0) <= 2
                    target = f" {'✅' if ok else '❌'} (target p99 ≤ 20 ms and ≤ 2× the 10^4 value)"
                lines.append(
                    f"| 4. `{view} GOAL` at {int(size):,} events ({at_size['goal_events']}-event goal), p50 / p99 | "
                    f"{at_size[view]['p50_ms']:.1f} / {p99:.1f} ms | same goal at {int(sizes[0]):,} events: p99 {smallest[view]['p99_ms']:.1f} ms | "
                    f"{fmt_ratio(growth)}{target} |"
                )
        lines.append("")
        fold = r["fold_only"]["events_per_s"]
        lines.append(f"Ceilings: the projection fold alone (reducers + linking rules + row serialization, events already "
                     f"decoded, no database) runs at {fmt_num(fold)} events/s, {fmt_ratio(ratio(fold, r['replay_plain']['events_per_s']))} "
                     f"read + json.loads and {fmt_ratio(ratio(fold, r['bulk_plain']['events_per_s']))} the bulk plain insert; "
                     f"normalization alone runs at {fmt_num(r['bulk_benchledger']['normalize_events_per_s'])} artifacts/s, "
                     f"{fmt_ratio(ratio(r['bulk_benchledger']['normalize_events_per_s'], r['bulk_plain']['events_per_s']))} the bulk plain insert.")
        lines.append("")
        lines.append(f"Ingest breakdown: normalization (parse + compaction + safety checks) is "
                     f"{r['bulk_benchledger']['normalize_share']*100:.0f}% of benchledger's bulk time and "
                     f"{r['per_batch_benchledger']['normalize_share']*100:.0f}% of its per-run time "
                     f"({fmt_num(r['bulk_benchledger']['normalize_events_per_s'])} artifacts/s on its own). "
                     + " ".join(f"{int(s):,}-event ledger built in {lat[s]['build_s']:.0f} s." for s in sizes))
        lines.append("")
    return "\n".join(lines)


def update_readme(table: str) -> None:
    if not README.exists():
        return
    content = README.read_text()
    if RESULTS_BEGIN not in content or RESULTS_END not in content:
        return
    head, rest = content.split(RESULTS_BEGIN, 1)
    _old, tail = rest.split(RESULTS_END, 1)
    README.write_text(f"{head}{RESULTS_BEGIN}\n{table}\n{RESULTS_END}{tail}")


def parse_sizes(text_value: str) -> list[int]:
    return [int(float(x)) for x in text_value.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small workload and 10^4/10^5-event ledgers: about a minute")
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql (default both)")
    parser.add_argument("--postgres-url", default=DEFAULT_PG, help="server to create scratch databases on (default %(default)s; env BENCHLEDGER_BENCH_POSTGRES_URL)")
    parser.add_argument("--loopx", default=None, help="path to the loopx executable (default: env BENCHLEDGER_BENCH_LOOPX, PATH, /opt/loopx-venv/bin/loopx)")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--goals", type=int, default=None, help="goals in the bulk workload (default 30 quick, 250 full)")
    parser.add_argument("--sizes", default=None, help="ledger sizes for history/show (default 1e4,1e5 quick; 1e4,1e5,1e6 full)")
    parser.add_argument("--no-1e6", dest="no_million", action="store_true", help="full run without the 10^6-event ledger")
    parser.add_argument("--json", dest="json_out", default=None, help="also write the raw results as JSON here")
    parser.add_argument("--update-readme", action="store_true", help="replace the results section of benchmarks/README.md")
    parser.add_argument("--profile", default=None, metavar="DIR", help="cProfile the benchledger side (bulk ingest, replay, history at the largest size) into DIR")
    parser.add_argument("--workdir", default=None, help="where scratch SQLite files go (default: the system temp dir)")
    args = parser.parse_args(argv)

    if args.sizes:
        sizes = parse_sizes(args.sizes)
    elif args.quick:
        sizes = [10**4, 10**5]
    else:
        sizes = [10**4, 10**5] + ([] if args.no_million else [10**6])
    s = Settings(
        quick=args.quick,
        seed=args.seed,
        goals=args.goals or (30 if args.quick else 250),
        sizes=sizes,
        latency_reps=200 if args.quick else 1000,
        process_reps=5 if args.quick else 25,
        templates=24 if args.quick else 64,
        audit_smallest=not args.quick,
    )
    workdir = Path(args.workdir or tempfile.gettempdir())
    profile_dir = Path(args.profile) if args.profile else None
    loopx = find_loopx(args.loopx)
    started = time.perf_counter()
    import sqlalchemy

    loopx_version = None
    if loopx:
        proc = subprocess.run([loopx, "--version"], capture_output=True, text=True)
        loopx_version = (proc.stdout or proc.stderr).strip().split()[-1] if proc.returncode == 0 else "unknown"
    else:
        log("note: LoopX not found (--loopx / BENCHLEDGER_BENCH_LOOPX / PATH): skipping that baseline")
    if not HAVE_EVENTSOURCING:
        log("note: the eventsourcing library is not installed: skipping that baseline (pip install eventsourcing)")
    es_version = None
    if HAVE_EVENTSOURCING:
        from importlib.metadata import version

        es_version = version("eventsourcing")

    templates = wl.load_templates()
    results: dict[str, Any] = {
        "meta": {
            "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "mode": "quick" if s.quick else "full",
            "seed": s.seed,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "sqlalchemy": sqlalchemy.__version__,
            "eventsourcing": es_version,
            "loopx": loopx_version,
            "sizes": s.sizes,
            "loadavg_start": os.getloadavg()[0],
        },
        "backends": {},
    }
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if name == "sqlite":
            backend: Backend = SQLiteBackend(workdir)
        elif name in ("postgresql", "postgres"):
            try:
                backend = PostgresBackend(args.postgres_url)
            except Exception as exc:
                log(f"note: PostgreSQL at {args.postgres_url} is unreachable ({type(exc).__name__}); skipping it")
                continue
        else:
            raise SystemExit(f"unknown backend {name!r}")
        try:
            results["backends"][backend.name] = run_backend(backend, s, templates, loopx, workdir, profile_dir)
        finally:
            backend.cleanup()
    results["meta"]["total_s"] = time.perf_counter() - started
    results["meta"]["loadavg_end"] = os.getloadavg()[0]
    table = render(results)
    print(table)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    if args.update_readme:
        update_readme(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
