"""What is measured, benchledger and each baseline on the same prepared workload: bulk ingest
(benchledger through one ``Ingest`` a transaction and through ``ingest-batches``, the store alone, plain INSERTs, the
eventsourcing library), replay and read/decode, one artifact as a whole process (benchledger vs LoopX
review-claim vs imports), and history/show latency."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, create_engine, insert, select

from benchledger.ledger.read.views import history, show
from benchledger.ledger.service.bulk import ingest_batch_file
from benchledger.ledger.service.folding import row_record
from benchledger.ledger.service.ingest import Ingest
from benchledger.ledger.service.intake.artifacts import to_artifact
from benchledger.ledger.service.intake.files import parse_document
from benchledger.ledger.service.maintenance import replay
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.engine import normalize_url
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.schema import events as events_table
from benchledger.ledger.storage.store import Store
from benchledger.projections.artifacts import Artifact
from benchledger.projections.projector import project_goal
from benchmarks import workload as wl
from benchmarks.harness import SOURCE, cli_url, find_benchledger, log, maybe_profile, pct, sqlite_pragmas, timed_process

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
# 2. bulk ingest
# ---------------------------------------------------------------------------------------------


# Artifacts per transaction of the bulk measurements: a backlog arrives in transactions of about this
# many artifacts (whole batches: a batch is never split), for benchledger and every baseline alike.
BULK_ARTIFACTS = 500


@dataclass
class Prepared:
    order: list[tuple[wl.Goal, wl.Batch]]
    artifacts: list[list[Artifact]]  # per batch, normalized: for the store-only append and the baselines
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
    artifacts, sizes, raw = [], [], []
    for _goal, batch in order:
        arts = [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents]
        artifacts.append(arts)
        sizes += [len(canonical.canonical_json(a.payload).encode()) for a in arts]
        raw += [len(doc) for doc in batch.documents]
    return Prepared(order, artifacts, len(sizes), sizes, raw)


def bench_benchledger_ingest(ledger: Store, prep: Prepared, *, bulk: bool, profile_dir: Path | None = None) -> dict[str, Any]:
    """The real path a user pays: parse + normalize (intake) + ingest (append, chain, inline projections).

    ``bulk``: each transaction holds the batches of :meth:`Prepared.transactions` (one ``Ingest``);
    otherwise every batch is its own ``ingest`` call, as one ``benchledger ingest`` per run does.
    """
    normalize_s = 0.0
    gc.collect()
    with maybe_profile(profile_dir is not None, profile_dir, f"{'bulk' if bulk else 'per_batch'}_ingest_{ledger.dialect}"):
        start = time.perf_counter()
        for group in prep.transactions(bulk):
            t0 = time.perf_counter()
            unit = Ingest(ledger, SOURCE)
            for i in group:
                goal, batch = prep.order[i]
                unit.add(goal.goal_id, [to_artifact(parse_document(doc, "bench"), batch.kind) for doc in batch.documents])
            normalize_s += time.perf_counter() - t0
            unit.commit()
        elapsed = time.perf_counter() - start
    return {
        "seconds": elapsed,
        "events_per_s": prep.artifact_count / elapsed,
        "normalize_seconds": normalize_s,
        "normalize_share": normalize_s / elapsed,
        "normalize_events_per_s": prep.artifact_count / normalize_s if normalize_s else None,
    }


def bench_store_only(ledger: Store, prep: Prepared) -> dict[str, Any]:
    """The store alone: the already-normalized artifacts appended with projections off (``materialize=False``).

    What remains is the at-rest guard, the idempotency check, the hash chain and
    the batch manifests, in the bulk transactions the baselines use.
    """
    transactions = [[(prep.order[i][0].goal_id, prep.artifacts[i]) for i in group] for group in prep.transactions(True)]
    gc.collect()
    start = time.perf_counter()
    for batches in transactions:
        unit = Ingest(ledger, SOURCE, materialize=False)
        for goal_id, artifacts in batches:
            unit.add(goal_id, artifacts)
        unit.commit()
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "events_per_s": prep.artifact_count / elapsed}


def write_batch_lines(prep: Prepared, path: Path) -> None:
    """The workload as an ``ingest-batches`` file: one line a batch, in arrival order, the documents as objects."""
    with path.open("w", encoding="utf-8") as out:
        for goal, batch in prep.order:
            line = {"goal_id": goal.goal_id, "kind": batch.kind, "artifacts": [json.loads(doc) for doc in batch.documents]}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


def bench_ingest_batches(ledger: Store, prep: Prepared, workdir: Path, profile_dir: Path | None = None, *, jobs: int = 1) -> dict[str, Any]:
    """``benchledger ingest-batches --jobs N FILE`` in process (``ingest_batch_file``): every line validated (by ``jobs``
    worker processes), then appended.

    The file is written before the clock starts (it is the user's input); the
    timed call reads it once, normalizing and guarding every artifact, and
    appends what it spooled.
    """
    path = Path(tempfile.mkstemp(prefix="bench-batches-", suffix=".ndjson", dir=workdir)[1])
    try:
        write_batch_lines(prep, path)
        gc.collect()
        with maybe_profile(profile_dir is not None, profile_dir, f"ingest_batches_{ledger.dialect}"):
            start = time.perf_counter()
            report = ingest_batch_file(ledger, str(path), jobs=jobs)
            elapsed = time.perf_counter() - start
    finally:
        path.unlink(missing_ok=True)
    if not report.ok or report.appended + report.duplicates != prep.artifact_count:  # (a goal may receive a document twice)
        raise RuntimeError(f"ingest-batches of the workload took {report.appended + report.duplicates} of {prep.artifact_count} artifacts: {report.errors}")
    return {"seconds": elapsed, "events_per_s": prep.artifact_count / elapsed, "transactions": report.transactions, "duplicates": report.duplicates}


def serial_ceiling(normalize_s: float, fold_s: float, insert_s: float, artifacts: int) -> float:
    """Artifacts/s of doing the three parts of a bulk ingest one after the other, each at its measured speed.

    1 / (1/n + 1/f + 1/p) with every rate counted per artifact: normalization
    alone, the projection fold alone (of the ledger those artifacts make, their
    batch manifests included), a plain Core insert of the normalized payloads.
    """
    return artifacts / (normalize_s + fold_s + insert_s)


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
        [(prep.order[i][0].goal_id, a.kind, a.payload) for i in group for a in prep.artifacts[i]]
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
            for artifact in prep.artifacts[i]:
                aggregate.record(artifact.kind, artifact.payload)
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


def bench_replay(ledger: Store, profile_dir: Path | None = None) -> dict[str, Any]:
    gc.collect()
    with maybe_profile(profile_dir is not None, profile_dir, f"replay_{ledger.dialect}"):
        start = time.perf_counter()
        report = replay(ledger)
        elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "events": report["events"], "events_per_s": report["events"] / elapsed, "faulted": len(report["faulted"])}


def bench_fold_only(ledger: Store) -> dict[str, Any]:
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


def measure_latency(ledger: Store, goal_id: str, reps: int, profile_dir: Path | None, label: str) -> dict[str, Any]:
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
