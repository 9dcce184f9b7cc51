"""A team ledger read from a PostgreSQL streaming replica (docs/deployment.md), on a real one.

The module starts a primary of its own (``initdb`` in a temporary folder, on a
free port: the shared server on 5432 is neither used nor reconfigured), a hot
standby of it (``pg_basebackup -R``, on another free port), ingests on the
primary and reads on the standby once it replayed: every read command answers
there what it answers on the primary, every write command is refused in one
line naming the standby (exit 2) with nothing written, and ``info`` and
``serve`` say how far behind the standby is. Both servers are stopped at the
end. The servers run as the ``postgres`` user when the tests run as root
(``initdb`` refuses root). Skipped only where the PostgreSQL server programs
are not installed.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from benchledger.ledger.storage.engine import normalize_url
from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
PROGRAMS = ("initdb", "pg_ctl", "pg_basebackup", "postgres", "pg_dump", "createdb", "pg_restore")
REPLAY_WAIT_S = 30.0
# How info and serve say a standby's lag. Replayed up to the primary's position it is "caught up", unless WAL the
# primary writes on its own (a running-transactions record, autovacuum) arrives just then: seconds behind, briefly.
LAG = r"(caught up with what its primary sent|[0-9.]+ s behind its primary) \(last replayed commit 20"


def _server_programs() -> Path | None:
    """The folder of the newest installed PostgreSQL server programs (Debian: /usr/lib/postgresql/N/bin), else PATH's."""
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda f: int(re.sub(r"\D", "", Path(f).parent.name) or 0))
    on_path = shutil.which("initdb")
    for folder in [*reversed(folders), *([str(Path(on_path).parent)] if on_path else [])]:
        if all((Path(folder) / program).is_file() for program in PROGRAMS):
            return Path(folder)
    return None


BIN = _server_programs()
pytestmark = pytest.mark.skipif(BIN is None, reason=f"the PostgreSQL server programs ({', '.join(PROGRAMS)}) are not installed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Replication:
    """A primary and its hot standby, each with a ``ledger`` and an ``empty`` ledger database."""

    folder: Path
    primary_port: int
    standby_port: int

    def url(self, port: int, database: str = "ledger") -> str:
        return f"postgresql://postgres@127.0.0.1:{port}/{database}"

    @property
    def primary(self) -> str:
        return self.url(self.primary_port)

    @property
    def standby(self) -> str:
        return self.url(self.standby_port)

    def sql(self, port: int, statement: str, database: str = "postgres") -> object:
        engine = create_engine(normalize_url(self.url(port, database)), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                result = connection.execute(text(statement))
                return result.scalar() if result.returns_rows else None
        finally:
            engine.dispose()

    def wait_for_replay(self) -> None:
        """Until the standby replayed everything the primary has written so far."""
        target = self.sql(self.primary_port, "SELECT pg_current_wal_lsn()")
        deadline = time.monotonic() + REPLAY_WAIT_S
        while not self.sql(self.standby_port, f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn"):
            assert time.monotonic() < deadline, f"the standby did not replay up to {target} in {REPLAY_WAIT_S:.0f} s"
            time.sleep(0.05)


def _as_server_user(*command: str | Path) -> None:
    """Run a PostgreSQL program, as ``postgres`` when this process is root (initdb and postgres refuse root)."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    done = subprocess.run([*prefix, *map(str, command)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed: {done.stderr or done.stdout}"


def _start(data: Path, log: Path) -> None:
    _as_server_user(BIN / "pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "start")


def _stop(data: Path) -> None:
    if (data / "postmaster.pid").exists():
        _as_server_user(BIN / "pg_ctl", "-D", data, "-w", "-t", "60", "-m", "fast", "stop")


@pytest.fixture(scope="module")
def replication() -> Iterator[Replication]:
    folder = Path(tempfile.mkdtemp(prefix="benchledger-replica-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    cluster = Replication(folder, _free_port(), _free_port())
    primary, standby = folder / "primary", folder / "standby"
    try:
        _as_server_user(BIN / "initdb", "-D", primary, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
        # initdb's pg_hba.conf lets local replication connections in (trust); the rest makes it a primary of its own.
        with open(primary / "postgresql.conf", "a") as conf:
            conf.write(
                f"port = {cluster.primary_port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{folder}'\n"
                "wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\nfsync = off\nmax_connections = 30\n"
            )
        _start(primary, folder / "primary.log")
        for database in ("ledger", "empty"):
            cluster.sql(cluster.primary_port, f"CREATE DATABASE {database}")
            assert invoke(cluster.url(cluster.primary_port, database), "db", "upgrade").exit_code == 0
        # -R writes standby.signal and primary_conninfo: the copy starts as a streaming hot standby.
        _as_server_user(BIN / "pg_basebackup", "-h", "127.0.0.1", "-p", cluster.primary_port, "-U", "postgres",
                        "-D", standby, "-R", "-X", "stream", "-c", "fast")
        with open(standby / "postgresql.conf", "a") as conf:
            conf.write(f"port = {cluster.standby_port}\n")
        _start(standby, folder / "standby.log")
        assert cluster.sql(cluster.standby_port, "SELECT pg_is_in_recovery()") is True
        yield cluster
    finally:
        _stop(standby)
        _stop(primary)
        shutil.rmtree(folder, ignore_errors=True)


def _ingest_demo(url: str, goal: str) -> None:
    for kind, name in (("preflight", "01-preflight.json"), ("launch", "02-launch.json"), ("post-launch", "03-post-launch.json")):
        assert invoke(url, "ingest", "--goal", goal, "--kind", kind, str(DEMO / name)).exit_code == 0
    runs = [str(DEMO / name) for name in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
    assert invoke(url, "ingest", "--goal", goal, *runs).exit_code == 0


@pytest.fixture(scope="module")
def replicated(replication: Replication) -> Replication:
    """The demo goal ingested on the primary and replayed by the standby."""
    _ingest_demo(replication.primary, "demo")
    replication.wait_for_replay()
    return replication


# Each read command, and what its answer holds once the standby replayed the demo goal (so an empty answer fails).
READS = {
    "goals": (["goals", "--format", "json"], '"goal_id": "demo"'),
    "history": (["history", "--goal", "demo", "--format", "json"], '"kind": "comparison"'),
    "show": (["show", "--goal", "demo", "--format", "json"], '"goal_id": "demo"'),
    "runs": (["runs", "--format", "json"], '"arm": "codex-loopx"'),
    "compare": (["compare", "--goal", "demo", "--format", "json"], '"treatment_arm": "codex-loopx"'),
    "audit": (["audit", "--format", "json"], '"events_checked": 10'),
    "audit --jobs 2": (["audit", "--jobs", "2", "--format", "json"], '"events_checked": 10'),
    "export": (["export"], '"events":10'),
    "export --goal": (["export", "--goal", "demo"], '"goal_id":"demo"'),
    "status": (["status"], "all projections are current"),
    "checkpoints": (["checkpoints", "--format", "json"], "[]"),
}


@pytest.mark.parametrize("name", READS)
def test_a_read_command_answers_on_the_standby_what_it_answers_on_the_primary(replicated, name):
    command, needle = READS[name]
    on_primary = invoke(replicated.primary, *command)
    on_standby = invoke(replicated.standby, *command)
    assert on_primary.exit_code == 0, on_primary.output
    assert on_standby.exit_code == 0, on_standby.output
    assert on_standby.output == on_primary.output
    assert needle in on_standby.output


def test_prove_answers_on_the_standby_what_it_answers_on_the_primary(replicated):
    export = invoke(replicated.primary, "export", "--goal", "demo").output
    event_id = json.loads(export.splitlines()[0])["event_id"]
    on_primary = invoke(replicated.primary, "prove", event_id, "--format", "json")
    on_standby = invoke(replicated.standby, "prove", event_id, "--format", "json")
    assert on_primary.exit_code == on_standby.exit_code == 0, on_standby.output
    assert on_standby.output == on_primary.output and event_id in on_standby.output


def test_report_reads_the_standby_and_its_index_says_so(replicated, tmp_path):
    result = invoke(replicated.standby, "report", "--output", str(tmp_path / "site"))
    assert result.exit_code == 0, result.output
    index = (tmp_path / "site" / "index.html").read_text()
    assert re.search(r"Read from a replica</strong> \(a PostgreSQL hot standby\): " + LAG, index)
    assert (tmp_path / "site" / "goals" / "demo" / "index.html").is_file()
    invoke(replicated.primary, "report", "--output", str(tmp_path / "primary"))
    assert "Read from a replica" not in (tmp_path / "primary" / "index.html").read_text()


def _info_once_caught_up(url: str) -> dict:
    """``info --format json`` of a standby that replayed all the primary wrote, once it says so (see :data:`LAG`)."""
    deadline = time.monotonic() + REPLAY_WAIT_S
    while (facts := json.loads(invoke(url, "info", "--format", "json").output))["replay_lag_seconds"] != 0.0:
        assert time.monotonic() < deadline, f"info never said the standby caught up: {facts}"
        time.sleep(0.1)
    return facts


def test_info_names_the_standby_and_how_far_behind_it_is(replicated):
    standby = _info_once_caught_up(replicated.standby)
    primary = json.loads(invoke(replicated.primary, "info", "--format", "json").output)
    assert standby["standby"] is True and standby["replayed_at"] is not None and standby["events"] == primary["events"] == 10
    assert (primary["standby"], primary["replayed_at"], primary["replay_lag_seconds"]) == (False, None, None)
    table = invoke(replicated.standby, "info").output
    assert re.search(r"standby +yes: a read-only replica, " + LAG, table)
    assert "standby" not in invoke(replicated.primary, "info").output


def test_info_shows_the_lag_of_a_standby_that_has_not_replayed_what_it_received(replicated):
    """Replay paused: the primary's new goal reaches the standby but is not applied; info says how long it has waited."""
    replicated.sql(replicated.standby_port, "SELECT pg_wal_replay_pause()")
    try:
        deadline = time.monotonic() + REPLAY_WAIT_S
        while replicated.sql(replicated.standby_port, "SELECT pg_get_wal_replay_pause_state()") != "paused":
            assert time.monotonic() < deadline, "the standby's replay did not pause"
            time.sleep(0.05)
        _ingest_demo(replicated.primary, "paused")
        time.sleep(1.2)
        target = replicated.sql(replicated.primary_port, "SELECT pg_current_wal_lsn()")
        deadline = time.monotonic() + REPLAY_WAIT_S
        while not replicated.sql(replicated.standby_port, f"SELECT pg_last_wal_receive_lsn() >= '{target}'::pg_lsn"):
            assert time.monotonic() < deadline, f"the standby did not receive up to {target} in {REPLAY_WAIT_S:.0f} s"
            time.sleep(0.05)
        facts = json.loads(invoke(replicated.standby, "info", "--format", "json").output)
        assert facts["standby"] is True and facts["replay_lag_seconds"] >= 1.0
        assert facts["goals"] == 1  # the paused goal is not there yet
        shown = re.search(r"standby +yes: a read-only replica, ([0-9.]+) s behind its primary \(last replayed commit 20", invoke(replicated.standby, "info").output)
        assert shown and float(shown.group(1)) >= round(facts["replay_lag_seconds"], 1)  # (read later: as far behind, or further)
    finally:
        replicated.sql(replicated.standby_port, "SELECT pg_wal_replay_resume()")
    replicated.wait_for_replay()
    assert _info_once_caught_up(replicated.standby)["goals"] == 2


def test_serve_reads_the_standby_and_says_how_far_behind_it_is(replicated):
    env = {**os.environ, "BENCHLEDGER_DATABASE_URL": replicated.standby}
    server = subprocess.Popen([sys.executable, "-m", "benchledger", "serve", "--port", "0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        announced = server.stdout.readline()
        address = re.search(r"serving (http://\S+/)", announced)
        assert address, announced
        assert re.search(r"reading a replica \(a PostgreSQL hot standby\): " + LAG, server.stdout.readline())
        with urllib.request.urlopen(address.group(1), timeout=30) as page:
            index = page.read().decode()
        assert re.search(r"Read from a replica</strong> \(a PostgreSQL hot standby\): " + LAG, index)
        with urllib.request.urlopen(address.group(1) + "goals/demo/", timeout=30) as page:
            assert page.status == 200 and "demo" in page.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=30)


def _keygen(tmp_path: Path) -> str:
    prefix = str(tmp_path / "signer")
    assert invoke("sqlite://", "keygen", "--name", "example.org/bench", "--output", prefix).exit_code == 0
    return f"{prefix}.key"


def test_every_write_command_is_refused_on_the_standby_in_one_line_naming_it(replicated, tmp_path):
    export = invoke(replicated.primary, "export", "--goal", "demo").output
    run_id = next(json.loads(line)["event_id"] for line in export.splitlines() if json.loads(line).get("kind") == "run")
    (tmp_path / "export.ndjson").write_text(export)
    batch = {"goal_id": "batched", "kind": None, "artifacts": [json.loads((DEMO / "04-run-baseline.json").read_text())]}
    (tmp_path / "batches.ndjson").write_text(json.dumps(batch) + "\n")
    run_ledger = {"schema_version": "benchmark_run_ledger_v0", "benchmarks": {"terminal-bench@2.0": {"benchmark_id": "terminal-bench@2.0", "cases": {
        "db-wal-recovery": {"case_id": "db-wal-recovery", "runs": [{
            "run_id": "r1", "benchmark_id": "terminal-bench@2.0", "case_id": "db-wal-recovery", "recorded_at": "2026-06-20T12:00:00+08:00",
            "arm_id": "codex_goal_mode_baseline", "status": "completed", "score_status": "failed"}]}}}}}
    (tmp_path / "run-ledger.json").write_text(json.dumps(run_ledger))
    empty_standby = replicated.url(replicated.standby_port, "empty")
    writes = {
        "ingest": (replicated.standby, ["ingest", "--goal", "new", "--kind", "preflight", str(DEMO / "01-preflight.json")]),
        "ingest of a stored artifact": (replicated.standby, ["ingest", "--goal", "demo", str(DEMO / "04-run-baseline.json")]),
        "ingest-batches": (replicated.standby, ["ingest-batches", str(tmp_path / "batches.ndjson")]),
        # Refused before its input is read: not "no such file", nor a 90,000-line file validated for nothing.
        "ingest-batches of a missing file": (replicated.standby, ["ingest-batches", str(tmp_path / "missing.ndjson")]),
        "retract": (replicated.standby, ["retract", "--goal", "demo", "--reason", "a typo", run_id]),
        "replay": (replicated.standby, ["replay"]),
        "import-loopx": (replicated.standby, ["import-loopx", "--goal", "loopx", str(tmp_path / "run-ledger.json")]),
        "import-ndjson": (empty_standby, ["import-ndjson", str(tmp_path / "export.ndjson")]),
        "merge": (replicated.standby, ["merge", str(tmp_path / "export.ndjson")]),
        "checkpoint --key": (replicated.standby, ["checkpoint", "--key", _keygen(tmp_path)]),
        "db upgrade": (replicated.standby, ["db", "upgrade"]),
    }
    before = {url: row_counts(url) for url in (replicated.standby, empty_standby)}
    for name, (url, command) in writes.items():
        # A read first, as a team's shell would have done: the pool hands the write a connection that was read-only.
        assert invoke(url, "goals").exit_code == 0
        result = invoke(url, *command)
        expected = f"benchledger: the ledger at {url} is a PostgreSQL hot standby (a read-only replica): this command writes"
        assert result.exit_code == 2, (name, result.output)
        assert result.output.strip().splitlines()[-1].startswith(expected), (name, result.output)
        assert "Traceback" not in result.output
    assert {url: row_counts(url) for url in before} == before
    # The same commands on the primary do write (the refusal is the standby's, not the command's).
    for name in ("ingest", "import-loopx"):
        assert invoke(replicated.primary, *writes[name][1]).exit_code == 0, name


def test_the_library_is_refused_by_the_standby_at_its_first_write_transaction(replicated):
    """Not only the commands: every write transaction asks, also on a pooled connection a read left read-only
    (the pool makes it BEGIN READ WRITE, which a standby refuses with another SQLSTATE than a write)."""
    import benchledger
    from benchledger.errors import LedgerUnavailable

    before = row_counts(replicated.standby)
    with benchledger.open(replicated.standby) as ledger:
        for write in (
            lambda: ledger.ingest("library", [str(DEMO / "04-run-baseline.json")]),
            lambda: ledger.replay(),
        ):
            assert ledger.goal_ids()  # a read first: the write gets the connection it used
            with pytest.raises(LedgerUnavailable, match=r"is a PostgreSQL hot standby \(a read-only replica\): this command writes"):
                write()
    assert row_counts(replicated.standby) == before


def test_a_ledger_restored_from_pg_dump_proves_it_is_the_same_with_audit_expect_digest(replicated, tmp_path):
    """docs/deployment.md's backup recipe: pg_dump the primary, restore into a new database, audit --expect-digest."""
    audited = json.loads(invoke(replicated.primary, "audit", "--format", "json").output)
    dump = tmp_path / "ledger.dump"
    for command in (
        [BIN / "pg_dump", "-h", "127.0.0.1", "-p", replicated.primary_port, "-U", "postgres", "-Fc", "-f", dump, "ledger"],
        [BIN / "createdb", "-h", "127.0.0.1", "-p", replicated.primary_port, "-U", "postgres", "restored"],
        [BIN / "pg_restore", "-h", "127.0.0.1", "-p", replicated.primary_port, "-U", "postgres", "-d", "restored", dump],
    ):
        done = subprocess.run(list(map(str, command)), capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    restored = replicated.url(replicated.primary_port, "restored")
    result = invoke(restored, "audit", "--expect-digest", audited["digest"])
    assert result.exit_code == 0, result.output
    # ... and a digest the primary never had is not proved.
    other = audited["digest"].split(":")[0] + ":" + "0" * 64
    assert invoke(restored, "audit", "--expect-digest", other).exit_code == 1



@pytest.fixture
def no_standby_delay(replicated: Replication) -> Iterator[Replication]:
    """The standby cancels whatever holds back its replay at once (``max_standby_streaming_delay = 0``)."""
    replicated.sql(replicated.standby_port, "ALTER SYSTEM SET max_standby_streaming_delay = 0")
    replicated.sql(replicated.standby_port, "SELECT pg_reload_conf()")
    try:
        yield replicated
    finally:
        replicated.sql(replicated.standby_port, "ALTER SYSTEM RESET max_standby_streaming_delay")
        replicated.sql(replicated.standby_port, "SELECT pg_reload_conf()")


def _lock_events_on_the_primary_soon(replicated: Replication) -> threading.Thread:
    """The primary takes the events table exclusively in a moment: its replay conflicts with a standby read of it."""

    def lock() -> None:
        time.sleep(0.5)
        replicated.sql(replicated.primary_port, "BEGIN; LOCK TABLE events IN ACCESS EXCLUSIVE MODE; COMMIT", "ledger")

    locking = threading.Thread(target=lock)
    locking.start()
    return locking


@pytest.mark.parametrize("between_statements", [False, True], ids=["running-statement", "between-statements"])
def test_a_read_the_standby_cancels_for_its_replay_is_one_line_saying_what_to_do(no_standby_delay, between_statements):
    """A real recovery conflict: a read holds the events table's share lock while the primary takes it exclusively.

    A running statement is cancelled (SQLSTATE 40001), a transaction between two statements loses its connection;
    either way the library (and so every read command) says it in one line naming the setting that avoids it.
    """
    from benchledger.errors import LedgerUnavailable
    from benchledger.ledger.storage.store import open_store

    store = open_store(no_standby_delay.standby)
    pause = "SELECT 1" if between_statements else "SELECT pg_sleep(20) FROM events LIMIT 1"
    said = "closed the connection" if between_statements else "cancelled this read"
    try:
        with pytest.raises(LedgerUnavailable, match=rf"{said}: .*set hot_standby_feedback = on"):
            with store.reading() as connection:
                connection.exec_driver_sql("SELECT count(*) FROM events").scalar_one()  # takes the share lock
                locking = _lock_events_on_the_primary_soon(no_standby_delay)
                deadline = time.monotonic() + REPLAY_WAIT_S
                while time.monotonic() < deadline:
                    connection.exec_driver_sql(pause).all()
                    time.sleep(0.2)
        locking.join()
    finally:
        store.engine.dispose()
