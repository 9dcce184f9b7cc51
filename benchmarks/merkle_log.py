"""What the Merkle log costs (issue 29): the append path with and without keeping it, and proofs as the log grows.

    .venv/bin/python -m benchmarks.merkle_log            # SQLite, ~2-4 min on 2 shared cores
    .venv/bin/python -m benchmarks.merkle_log --rounds 31 --big 1000000
    .venv/bin/python -m benchmarks.merkle_log --postgres-url postgresql://postgres@127.0.0.1:5432/test   # a database per ledger, dropped

Everything is measured in one run, the two sides interleaved round by round so
that drift hits both alike. "Without the log" is the same benchledger in a
process where ``ledger.storage.merkle_log.extend`` (the one call the append
makes to keep the log) does nothing; everything else is unchanged.

1. **One artifact, whole process**: ``benchledger ingest --goal G run.json``
   (start to exit; a new goal each time) into a ledger of ``--base`` events
   (10^4), one ledger with the log and a copy without it. Target <= 1.1x.
2. **ingest-batches, whole process**: a file of 100 batches (the six demo
   artifacts each, a goal each) into a fresh ledger (migrated before the
   clock starts, so that both sides time the appends, not alembic). Target <= 1.1x.
3. **One batch, in process**: ``ingest`` of the six demo artifacts into a new
   goal of the 10^4-event ledger, only the call timed.
4. **Proofs as the log grows**: ``prove`` of one event (the library call, in
   process) and its proof's size at 10^3 events and at ``--big`` events (a
   log of synthetic leaves, built with the append's own code: ``prove`` reads
   only the log's nodes, so no event behind them is needed). Target <= 2x.
5. **Verifying a claim bundle of 100 events**: ``benchledger verify`` as a
   whole process (and ``verify_claim`` in process, for reference), against a
   whole-process ``benchledger info`` of the ledger it was published from.
   Target (whole process) <= 0.5x.

Whole processes run the installed console script with bytecode caching on
(as an installed package runs: pip compiles it), whatever
``PYTHONDONTWRITEBYTECODE`` says here; each command runs once unmeasured first,
which writes the bytecode, so no timed process compiles a module.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy.engine import make_url

from benchledger.ledger.service.ingest import Ingest, ingest
from benchledger.ledger.service.intake.artifacts import to_artifact
from benchledger.ledger.service.intake.files import parse_document
from benchledger.ledger.storage import merkle_log
from benchledger.ledger.storage.store import Store
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections import merkle
from benchmarks.harness import Backend, PostgresBackend, SQLiteBackend, cli_url, find_benchledger, log, timed_process

DEMO = Path(__file__).parents[1] / "examples" / "demo"
RUN_FILE = DEMO / "04-run-baseline.json"
TARGET_APPEND, TARGET_PROOF, TARGET_VERIFY = 1.1, 2.0, 0.5
# The console script, with or without the log kept (the same interpreter and start-up either way).
_PROCESS = (
    "import sys\n"
    "from benchledger.ledger.storage import merkle_log\n"
    "if sys.argv.pop(1) == 'without':\n"
    "    merkle_log.extend = lambda *args, **kwargs: None\n"
    "from benchledger.cli.main import main\n"
    "main()\n"
)


def _demo_documents() -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(DEMO.glob("*.json"))]


def _artifacts() -> list:
    return [to_artifact(parse_document(path.read_bytes(), path.name), None) for path in sorted(DEMO.glob("*.json"))]


def _process_env() -> dict[str, str]:
    env = {**os.environ, "BENCHLEDGER_DEBUG": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (see the module docstring)
    return env


def _fresh(backend: Backend, label: str) -> str:
    """The URL of a new, migrated, empty ledger."""
    url = backend.fresh_url(label)
    backend.open_store(url).close()
    return url


def _copy(backend: Backend, url: str, label: str) -> str:
    """A new ledger holding what the ledger at ``url`` holds (closed: nothing may be connected to it)."""
    if isinstance(backend, SQLiteBackend):
        copy = backend.fresh_url(label)
        shutil.copy(backend.path(url), backend.path(copy))
        return copy
    assert isinstance(backend, PostgresBackend)
    copy = backend.fresh_url(label)  # (a name the backend drops at the end)
    source, target = (make_url(u).database for u in (url, copy))
    with backend.admin.connect() as connection:
        connection.exec_driver_sql(f'DROP DATABASE "{target}"')
        connection.exec_driver_sql(f'CREATE DATABASE "{target}" TEMPLATE "{source}"')
    return copy


def _filled(url: str, events: int) -> None:
    ledger = Store.open(url)
    artifacts, goal = _artifacts(), 0
    while ledger.event_count() < events:
        unit = Ingest(ledger, "benchmark")
        for _ in range(70):
            unit.add(f"base-{goal}", artifacts)
            goal += 1
        unit.commit()
    ledger.close()


def _cli(side: str, url: str, *args: str) -> list[str]:
    return [sys.executable, "-c", _PROCESS, side, "--database-url", cli_url(url), *args]


def _ratio(samples: dict[str, list[float]]) -> tuple[float, float, float]:
    with_log, without = statistics.median(samples["with"]), statistics.median(samples["without"])
    return with_log, without, with_log / without


def append_costs(backend: Backend, workdir: Path, base: int, rounds: int) -> list[tuple[str, float, float, float, float]]:
    env = _process_env()
    urls = {"with": _fresh(backend, "with")}
    _filled(urls["with"], base)
    urls["without"] = _copy(backend, urls["with"], "without")
    log(f"ledgers of {base} events built")

    one: dict[str, list[float]] = {"with": [], "without": []}
    bulk: dict[str, list[float]] = {"with": [], "without": []}
    batch: dict[str, list[float]] = {"with": [], "without": []}
    batches = workdir / "batches.ndjson"
    documents = _demo_documents()
    stores = {side: Store.open(url) for side, url in urls.items()}
    artifacts = _artifacts()
    for side in ("with", "without"):  # (unmeasured: the bytecode is written, the caches warmed)
        timed_process(_cli(side, urls[side], "ingest", "--goal", "warm", str(RUN_FILE)), env)
    for r in range(rounds):
        batches.write_text("".join(json.dumps({"goal_id": f"bulk-{r}-{i}", "kind": None, "artifacts": documents}) + "\n" for i in range(100)))
        for side in ("with", "without") if r % 2 else ("without", "with"):
            one[side].append(timed_process(_cli(side, urls[side], "ingest", "--goal", f"one-{r}", str(RUN_FILE)), env))
            fresh = _fresh(backend, f"bulk_{side}_{r}")
            bulk[side].append(timed_process(_cli(side, fresh, "ingest-batches", str(batches)), env))
            backend.drop(fresh)
            original = merkle_log.extend
            if side == "without":
                merkle_log.extend = lambda *args, **kwargs: None  # type: ignore[assignment]
            try:
                started = time.perf_counter()
                ingest(stores[side], f"batch-{r}", artifacts, source="benchmark")
                batch[side].append(time.perf_counter() - started)
            finally:
                merkle_log.extend = original  # type: ignore[assignment]
        log(f"round {r + 1}/{rounds}")
    for store in stores.values():
        store.close()
    return [
        (f"one artifact, whole process (`ingest`, {base}-event ledger)", *_ratio(one), TARGET_APPEND),
        ("100 batches of 6 artifacts, whole process (`ingest-batches`, fresh ledger)", *_ratio(bulk), TARGET_APPEND),
        (f"one batch of 6 artifacts, in process (`ingest`, {base}-event ledger)", *_ratio(batch), TARGET_APPEND),
    ]


def _synthetic_log(url: str, leaves: int) -> Store:
    """A ledger whose log holds ``leaves`` synthetic leaves and no event (only the log is read by a proof)."""
    ledger = Store.open(url)
    with ledger.transaction(write=True) as tx:
        step = 100_000
        for start in range(0, leaves, step):
            merkle_log._grow(tx.connection, start, _frontier(tx, start), [merkle.leaf_hash(i.to_bytes(8, "big")) for i in range(start, min(leaves, start + step))])
    if ledger.engine.dialect.name == "postgresql":
        # What autovacuum does to a table that just grew by 2 million rows: done here, not raced by the timed reads
        # (one run timed a 10^6-leaf proof at 3.2 ms, 6x, while it ran; 0.7 ms just after).
        with ledger.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("VACUUM ANALYZE merkle_nodes")
    return ledger


def _frontier(tx: Transaction, size: int) -> list[bytes]:
    hashes = merkle_log._frontier_hashes(tx.connection, size)
    assert hashes is not None
    return hashes


def proof_costs(backend: Backend, big: int, rounds: int) -> list[tuple[str, float, float, float, float]]:
    rows = []
    timings: dict[int, float] = {}
    sizes: dict[int, int] = {}
    for leaves in (1000, big):
        started = time.perf_counter()
        ledger = _synthetic_log(_fresh(backend, f"log_{leaves}"), leaves)
        log(f"a log of {leaves} synthetic leaves built in {time.perf_counter() - started:.0f} s")
        samples = []
        for r in range(-1, rounds):  # (round -1, unmeasured, reads the tree's upper nodes into the caches, for both sizes alike)
            index = (r * 7919) % leaves
            started = time.perf_counter()
            with ledger.reading() as connection:
                tx = Transaction(connection)
                path = merkle_log.proof(tx, merkle.inclusion_proof_ranges(index, leaves))
                root = merkle_log.root(tx, leaves)
            if r >= 0:
                samples.append(time.perf_counter() - started)
            leaf = merkle.leaf_hash(index.to_bytes(8, "big"))
            merkle.verify_inclusion(index, leaves, leaf, path, root)
            sizes[leaves] = len(path) * merkle.HASH_SIZE
        timings[leaves] = statistics.median(samples)
        ledger.close()
        log(f"proofs in a log of {leaves} leaves measured")
    rows.append((f"inclusion proof, read and verified ({big} vs 1000 leaves)", timings[big], timings[1000], timings[big] / timings[1000], TARGET_PROOF))
    rows.append((f"inclusion proof size, bytes ({big} vs 1000 leaves)", sizes[big], sizes[1000], sizes[big] / sizes[1000], TARGET_PROOF))
    return rows


def bundle_costs(backend: Backend, workdir: Path, rounds: int) -> list[tuple[str, float, float, float, float]]:
    """A goal of 25 batches (two runs and a comparison each, and the manifest: 100 events), its last comparison published."""
    from benchledger.ledger.api import generate_key, verify_claim
    from benchledger.ledger.api import open as open_ledger

    url = _fresh(backend, "claims")
    documents = {path.name: json.loads(path.read_text()) for path in sorted(DEMO.glob("0[456]-*.json"))}
    ledger = open_ledger(url)
    for batch in range(25):
        paths = []
        for name, document in documents.items():
            changed = dict(document)
            if "job_name" in changed:
                changed["job_name"] = f"{changed['job_name']}-{batch}"
            if "comparison_id" in changed:
                changed["comparison_id"] = f"pair-{batch}"
            path = workdir / f"{batch}-{name}"
            path.write_text(json.dumps(changed))
            paths.append(str(path))
        ledger.ingest("claims", paths, source="benchmark")
    signing, public = generate_key("bench")
    bundle = json.dumps(ledger.publish("claims", "pair-24", signing).as_dict())
    (workdir / "claim.json").write_text(bundle)
    (workdir / "bench.pub").write_text(public)
    events = len(json.loads(bundle)["events"])
    ledger.close()
    env = _process_env()
    # (the console script itself: the "with"/"without" wrapper of the append rows imports the storage modules)
    commands = {
        "process": [*find_benchledger(), "verify", str(workdir / "claim.json"), "--key", str(workdir / "bench.pub")],
        "info": [*find_benchledger(), "--database-url", cli_url(url), "info"],
    }
    for command in commands.values():  # (unmeasured: the bytecode is written, the caches warmed)
        timed_process(command, env)
    samples: dict[str, list[float]] = {"in process": [], "process": [], "info": []}
    for r in range(rounds):
        started = time.perf_counter()
        verify_claim(bundle, [(public, "bench.pub")])
        samples["in process"].append(time.perf_counter() - started)
        for side in ("process", "info") if r % 2 else ("info", "process"):
            samples[side].append(timed_process(commands[side], env))
    verify, process, info = (statistics.median(samples[side]) for side in ("in process", "process", "info"))
    log(f"bundles of {events} events verified")
    return [
        (f"`verify` of a {events}-event claim bundle, in process, vs whole-process `info`", verify, info, verify / info, TARGET_VERIFY),
        (f"`verify` of a {events}-event claim bundle, whole process, vs whole-process `info`", process, info, process / info, TARGET_VERIFY),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--base", type=int, default=10_000, help="events in the ledger the one-artifact ingest goes into")
    parser.add_argument("--big", type=int, default=1_000_000, help="leaves of the large log proofs are read from")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--postgres-url", help="measure on PostgreSQL instead: a database per ledger, dropped at the end")
    parser.add_argument("--only", choices=("append", "proofs", "bundle"), action="append", help="run only these parts (repeatable; default: all)")
    options = parser.parse_args()
    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="benchledger-merkle-"))
    backend: Backend = PostgresBackend(options.postgres_url) if options.postgres_url else SQLiteBackend(workdir)
    parts = options.only or ["append", "proofs", "bundle"]
    rows = []
    try:
        if "append" in parts:
            rows += append_costs(backend, workdir, options.base, options.rounds)
        if "proofs" in parts:
            rows += proof_costs(backend, options.big, options.rounds)
        if "bundle" in parts:
            rows += bundle_costs(backend, workdir, options.rounds)
    finally:
        backend.cleanup()
        if options.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"{backend.name}, {options.rounds} rounds, 1-min load average at the end: {os.getloadavg()[0]:.1f}")
    print("| measured | with log / big | without / small | ratio | target |\n| --- | --- | --- | --- | --- |")
    for name, a, b, ratio, target in rows:
        print(f"| {name} | {a:.4g} | {b:.4g} | {ratio:.3f} | <= {target} {'ok' if ratio <= target else 'MISSED'} |")


if __name__ == "__main__":
    main()
