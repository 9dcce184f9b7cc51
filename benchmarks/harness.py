"""The measuring harness: timing and quantiles, optional profiling, the scratch databases
(a fresh SQLite file or PostgreSQL database per use, dropped at the end) and the process timer."""

from __future__ import annotations

import contextlib
import cProfile
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy import event as sa_event

from benchledger.ledger.storage.engine import normalize_url
from benchledger.ledger.storage.store import Store
from tests.loopx import loopx_executable

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_PG = os.environ.get("BENCHLEDGER_BENCH_POSTGRES_URL") or os.environ.get(
    "BENCHLEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
SOURCE = "cli ingest"


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

    def open_store(self, url: str) -> Store:
        ledger = Store.open(url, migrate=False)
        from benchledger.ledger.storage.migrate import ensure_current, upgrade

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


def find_benchledger() -> list[str]:
    beside = Path(sys.executable).parent / "benchledger"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("benchledger")
    if found:
        return [found]
    raise SystemExit("benchledger is not installed next to this Python nor on PATH")


def find_loopx(option: str | None) -> str | None:
    """``--loopx PATH``, else LoopX 0.4.8 found as the tests find it ($BENCHLEDGER_LOOPX, then PATH), else None."""
    return option or loopx_executable()


def timed_process(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()[-800:]}")
    return elapsed
