"""Concurrent writers and readers: nothing lost, nothing doubled, no gaps, no "database is locked".

* 8 processes ingest interleaved batches (through the CLI) into one shared
  goal, goals shared by pairs and goals of their own, all at once, on a
  SQLite file in WAL mode (created by the racing writers themselves) and on
  PostgreSQL: every batch is stored exactly once, versions are contiguous per
  goal, global positions gap-free, and the stored projections equal a replay.
* A writer that finds the SQLite ledger locked retries with backoff inside a
  bounded time and then fails with a clear message (never "database is
  locked", never a traceback); a lock released in time is waited out.
* A reader following global positions while slow writers commit never skips
  an event; a negative control shows the follower does catch a skip when
  positions come from a sequence (commit order != position order).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from benchledger.cli.main import cli
from benchledger.ledger.service.maintenance import audit, replay
from benchledger.ledger.storage import engine
from benchledger.ledger.storage.engine import create_ledger_engine, normalize_url
from benchledger.ledger.storage.event_records import NewEvent
from benchledger.ledger.storage.store import Store
from tests.conformance.cases import CORPUS

FIXTURE = CORPUS / "cases" / "review-claim" / "claim-review-01"
WORKERS = 8
BATCHES_PER_WORKER = 5
LOCK_MESSAGES = ("database is locked", "database is busy", "Traceback")


def write_batch(folder: Path, tag: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    comparison = json.loads((FIXTURE / "comparison.json").read_text())
    comparison["comparison_id"] = f"cmp-{tag}"
    (folder / "a-comparison.json").write_text(json.dumps(comparison))
    for i, name in enumerate(("run-1.json", "run-2.json")):
        run = json.loads((FIXTURE / name).read_text())
        run["job_name"] = f"job-{tag}-{i}"
        (folder / f"b-{name}").write_text(json.dumps(run))
    return folder


def goal_of(worker: int, batch: int) -> str:
    """Interleaved: the shared goal, a goal shared by a pair of workers, the worker's own goal."""
    return ("shared", f"pair-{worker // 2}", f"own-{worker}")[batch % 3]


def _writer(url: str, worker: int, workdir: Path, go_fd: int, report_fd: int) -> None:
    import sys

    sys.stdout = open(os.devnull, "w")
    os.read(go_fd, 1)  # start together
    for batch in range(BATCHES_PER_WORKER):
        tag = f"w{worker}b{batch}"
        folder = write_batch(workdir / tag, tag)
        code = cli.main(
            ["--database-url", url, "ingest", "--goal", goal_of(worker, batch), str(folder)],
            prog_name="benchledger",
            standalone_mode=False,
        )
        os.write(report_fd, f"{tag} {code}\n".encode())


def run_writers(url: str, workdir: Path) -> tuple[dict[str, int], list[str]]:
    """Fork the writers, release them at once, wait; returns each batch's exit code and each writer's stderr."""
    go_read, go_write = os.pipe()
    report_read, report_write = os.pipe()
    pids = []
    for worker in range(WORKERS):
        stderr_path = workdir / f"stderr-{worker}.txt"
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                os.close(go_write)
                os.close(report_read)
                os.dup2(os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
                import sys

                sys.stderr = open(2, "w", buffering=1, closefd=False)
                _writer(url, worker, workdir, go_read, report_write)
                code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(go_read)
    os.close(report_write)
    os.write(go_write, b"g" * WORKERS)
    os.close(go_write)
    chunks = []
    deadline = time.monotonic() + 300
    while chunk := os.read(report_read, 65536):
        chunks.append(chunk)
        assert time.monotonic() < deadline
    os.close(report_read)
    statuses = []
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        statuses.append(os.waitstatus_to_exitcode(status))
    stderr = [(workdir / f"stderr-{w}.txt").read_text(errors="replace") for w in range(WORKERS)]
    assert statuses == [0] * WORKERS, stderr
    codes = {}
    for line in b"".join(chunks).decode().splitlines():
        tag, code = line.split()
        codes[tag] = int(code)
    return codes, stderr


def expected_ids(workdir: Path, tag: str, goal: str) -> list[str]:
    from benchledger.ledger.service.ingest import ingest
    from benchledger.ledger.service.intake.artifacts import collect_artifacts
    from benchledger.ledger.service.intake.files import expand_paths

    artifacts, _, errors = collect_artifacts(expand_paths([str(workdir / tag)]), None)
    assert not errors
    outcome = ingest(Store.in_memory(), goal, artifacts, source="cli ingest", dry_run=True)
    return [*(m.event_id for m in outcome.members), outcome.batch.event_id]


def test_eight_processes_ingest_at_once(ledger_url, tmp_path):
    if ledger_url.startswith("postgresql"):
        from benchledger.ledger.storage.migrate import upgrade

        engine = create_ledger_engine(ledger_url)
        upgrade(engine)
        engine.dispose()
    # (the SQLite file does not exist yet: the writers race to create and migrate it)
    codes, stderr = run_writers(ledger_url, tmp_path)
    tags = {f"w{w}b{b}": goal_of(w, b) for w in range(WORKERS) for b in range(BATCHES_PER_WORKER)}
    assert codes == {tag: 0 for tag in tags}
    for text_ in stderr:
        assert not any(m in text_ for m in LOCK_MESSAGES), text_

    ledger = Store.open(ledger_url)
    try:
        if ledger.dialect == "sqlite":
            with ledger.engine.connect() as connection:
                assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        events = list(ledger.read_all())
        # gap-free global positions
        assert [e.position for e in events] == list(range(1, len(events) + 1))
        # contiguous versions per goal
        by_goal: dict[str, list[int]] = {}
        for e in events:
            by_goal.setdefault(e.goal_id, []).append(e.stream_version)
        assert set(by_goal) == set(tags.values())
        for goal, versions in by_goal.items():
            assert versions == list(range(1, len(versions) + 1)), goal
        # every batch exactly once, nothing else
        stored = [e.event_id for e in events]
        assert len(stored) == len(set(stored))
        expected = [i for tag, goal in tags.items() for i in expected_ids(tmp_path, tag, goal)]
        assert sorted(expected) == sorted(stored)
        # the projections maintained by 8 racing writers are exactly a full replay
        before = ledger.projection_rows()
        assert before
        report = replay(ledger)
        assert report["faulted"] == []
        assert ledger.projection_rows() == before
        assert audit(ledger)["ok"]
    finally:
        ledger.close()


def test_racing_first_opens_of_a_fresh_embedded_ledger(tmp_path):
    """8 processes opening a ledger file that does not exist yet: all succeed.

    One switches it to WAL and migrates it, the others wait for the lock and find it done
    (both steps used to fail at once with "database is locked" in the losers).
    """
    for trial in range(4):
        url = f"sqlite:///{tmp_path / f'fresh-{trial}.sqlite'}"
        go_read, go_write = os.pipe()
        pids = []
        for worker in range(WORKERS):
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    os.close(go_write)
                    os.read(go_read, 1)
                    Store.open(url).close()
                    code = 0
                except BaseException:
                    import traceback

                    (tmp_path / f"error-{trial}-{worker}.txt").write_text(traceback.format_exc())
                finally:
                    os._exit(code)
            pids.append(pid)
        os.close(go_read)
        os.write(go_write, b"g" * WORKERS)
        os.close(go_write)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        assert codes == [0] * WORKERS, [p.read_text()[-800:] for p in tmp_path.glob("error-*.txt")]
        ledger = Store.open(url)
        assert audit(ledger)["ok"]
        ledger.close()


# -- SQLite lock: bounded retries, then a clear message ------------------------------


@pytest.fixture
def sqlite_ledger(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    Store.open(url).close()
    return url, tmp_path / "ledger.sqlite"


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    holder = sqlite3.connect(path, isolation_level=None, timeout=0, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def _event_count(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT count(*) FROM events").fetchone()[0]


@pytest.mark.parametrize("command", ["ingest", "replay", "review"])
def test_a_lock_held_too_long_ends_in_a_clear_error(sqlite_ledger, tmp_path, monkeypatch, command):
    url, path = sqlite_ledger
    folder = write_batch(tmp_path / "batch", "locked")
    CliRunner().invoke(cli, ["--database-url", url, "ingest", "--goal", "g", str(folder)])
    before = _event_count(path)
    monkeypatch.setattr(engine, "SQLITE_BUSY_TIMEOUT_S", 0.1)
    monkeypatch.setattr(engine, "LOCKED_RETRY_BUDGET_S", 1.0)
    args = {
        "ingest": ["ingest", "--goal", "g2", str(folder)],
        "replay": ["replay"],
        "review": [
            "benchmark", "review-claim", "--goal", "g3",
            "--benchmark-comparison-json", str(folder / "a-comparison.json"),
            "--benchmark-run-json", str(folder / "b-run-1.json"),
        ],
    }[command]
    holder = _hold_write_lock(path)
    try:
        started = time.monotonic()
        result = CliRunner().invoke(cli, ["--database-url", url, *args])
        elapsed = time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # click's clean exit, not an escaped exception
    assert "stayed locked by another writer" in result.output and "nothing was written" in result.output
    assert not any(m in result.output for m in LOCK_MESSAGES)
    assert 1.0 <= elapsed < 20.0  # retried for the budget (1 s here, 60 s by default), then gave up: bounded
    assert _event_count(path) == before


def test_a_lock_released_in_time_is_waited_out(sqlite_ledger, tmp_path, monkeypatch):
    url, path = sqlite_ledger
    folder = write_batch(tmp_path / "batch", "waited")
    monkeypatch.setattr(engine, "SQLITE_BUSY_TIMEOUT_S", 0.1)  # force the retry loop, not only SQLite's busy wait
    monkeypatch.setattr(engine, "LOCKED_RETRY_BUDGET_S", 30.0)
    holder = _hold_write_lock(path)
    release = threading.Timer(1.0, holder.rollback)
    release.start()
    try:
        result = CliRunner().invoke(cli, ["--database-url", url, "ingest", "--goal", "g", "--format", "json", str(folder)])
    finally:
        release.join()
        holder.close()
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["appended_count"] == 3
    assert _event_count(path) == 4


# -- a reader following positions never skips -------------------------------------------


class Follower:
    """Reads "everything after my cursor" repeatedly, as a projector or exporter would, and records skips."""

    def __init__(self, read_after) -> None:
        self.read_after = read_after
        self.cursor = 0
        self.seen: list[int] = []
        self.skips: list[tuple[int, int]] = []

    def poll(self) -> int:
        page = self.read_after(self.cursor)
        for position in page:
            if position != self.cursor + 1:
                self.skips.append((self.cursor, position))
            self.cursor = position
            self.seen.append(position)
        return len(page)


def test_a_follower_never_skips_while_slow_writers_commit(ledger):
    writers, appends = 4, 10
    rng = random.Random(7)
    delays = [[rng.uniform(0.0, 0.03) for _ in range(appends)] for _ in range(writers)]
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(appends):
                # slow transactions: each holds its inserts uncommitted for a while
                ledger.append(
                    f"goal-{worker % 2}",
                    [NewEvent("run", {"worker": worker, "i": i, "part": p}) for p in range(1 + i % 3)],
                    source="test",
                    within=lambda tx, outcome, d=delays[worker][i]: time.sleep(d),
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    follower = Follower(lambda after: [e.position for e in ledger.read_all(after_position=after)])
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    polls = 0
    while any(t.is_alive() for t in threads):
        follower.poll()
        polls += 1
    for t in threads:
        t.join()
    follower.poll()
    assert not errors, errors
    total = ledger.event_count()
    assert total == sum(1 + i % 3 for i in range(appends)) * writers
    assert follower.skips == []
    assert follower.seen == list(range(1, total + 1))
    assert polls > 10  # the follower really ran alongside the writers


@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
def test_the_follower_catches_a_skip_when_positions_come_from_a_sequence(ledger_url):
    """Negative control: with sequence-assigned positions a slow transaction commits after a faster later one."""
    engine = create_engine(normalize_url(ledger_url))
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE naive_log (position BIGSERIAL PRIMARY KEY, note TEXT)"))
    def read_after(after: int) -> list[int]:
        with engine.connect() as connection:
            query = text("SELECT position FROM naive_log WHERE position > :after ORDER BY position")
            return [row[0] for row in connection.execute(query, {"after": after})]

    follower = Follower(read_after)
    slow = engine.connect()
    slow_tx = slow.begin()
    slow.execute(text("INSERT INTO naive_log (note) VALUES ('slow')"))  # takes position 1, not committed
    with engine.begin() as fast:
        fast.execute(text("INSERT INTO naive_log (note) VALUES ('fast')"))  # position 2, committed first
    follower.poll()
    slow_tx.commit()
    slow.close()
    follower.poll()
    engine.dispose()
    assert follower.skips == [(0, 2)]
    assert 1 not in follower.seen  # position 1 committed later and was skipped for ever
