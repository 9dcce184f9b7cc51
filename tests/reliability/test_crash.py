"""Crash safety: a bulk ingest killed with SIGKILL at random moments loses nothing it acknowledged.

A child process runs ``benchledger ingest`` batch after batch (the real CLI
code path, one batch per call, batches of 3 to 9 artifacts spread over four
goals) and reports on a pipe when it starts a batch and when a batch has
committed. The parent kills it with SIGKILL, either after a random delay or,
so that the rare moments are hit too, from inside the child at a random SQL
statement (mid-insert, between the inserts and the projection writes, just
before COMMIT, during the first open's migration ...). After every kill:

* the ledger opens and ``audit`` is clean (hashes, chains, versions,
  positions, heads, every projection equal to a replay);
* every batch is fully present or fully absent (its members and its manifest),
  and nothing else is stored;
* every batch the child reported as committed is present.

The default run kills 30 times per backend, with forked children (cheap to
start). ``BENCHLEDGER_STRESS=1`` adds a heavier variant: 100 kills per backend
of a ``benchledger`` executable started afresh each time.
``BENCHLEDGER_CRASH_SEED`` replays a particular run.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conformance.cases import CORPUS

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

FIXTURE = CORPUS / "cases" / "review-claim" / "claim-review-01"
GOALS = ("crash-a", "crash-b", "crash-c", "crash-d")
RUN_COUNTS = (2, 2, 3, 8)  # runs per batch (plus one comparison)
SEED = int(os.environ.get("BENCHLEDGER_CRASH_SEED", "20261130"))
STRESS = os.environ.get("BENCHLEDGER_STRESS") == "1"
REPO = Path(__file__).resolve().parents[2]


def _load(name: str) -> dict:
    return json.loads((FIXTURE / name).read_text(encoding="utf-8"))


def write_batch(root: Path, tag: str, runs: int) -> Path:
    """One batch folder: a comparison and ``runs`` runs, all unique to ``tag``."""
    folder = root / tag
    folder.mkdir(parents=True, exist_ok=True)
    comparison = _load("comparison.json")
    comparison["comparison_id"] = f"cmp-{tag}"
    (folder / "a-comparison.json").write_text(json.dumps(comparison), encoding="utf-8")
    templates = (_load("run-1.json"), _load("run-2.json"))
    for i in range(runs):
        run = copy.deepcopy(templates[i % 2])
        run["job_name"] = f"job-{tag}-{i:02d}"
        (folder / f"b-run-{i:02d}.json").write_text(json.dumps(run), encoding="utf-8")
    return folder


def batch_plan(seed: int) -> list[tuple[str, int]]:
    """The (goal, run count) of each batch a child ingests, derived from its seed."""
    rng = random.Random(seed)
    return [(rng.choice(GOALS), rng.choice(RUN_COUNTS)) for _ in range(400)]


# -- the child ---------------------------------------------------------------------


def child_main(url: str, round_no: int, seed: int, kill_at_statement: int, workdir: str, report_fd: int) -> None:
    """Ingest batches through the CLI until killed; report ``start``/``committed`` lines on ``report_fd``."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from benchledger.cli.main import cli

    def report(line: str) -> None:
        os.write(report_fd, (line + "\n").encode())

    # The CLI's own output is not part of the report channel.
    sys.stdout = open(os.devnull, "w")

    if kill_at_statement > 0:
        counter = itertools.count(1)

        def maybe_die(*_args, **_kwargs) -> None:
            if next(counter) >= kill_at_statement:
                os.kill(os.getpid(), signal.SIGKILL)

        # Every statement and every COMMIT is a candidate moment.
        event.listen(Engine, "before_cursor_execute", maybe_die)
        event.listen(Engine, "commit", maybe_die)

    report("ready")
    for index, (goal, runs) in enumerate(batch_plan(seed)):
        tag = f"r{round_no:03d}b{index:03d}"
        folder = write_batch(Path(workdir), tag, runs)
        report(f"start {tag} {goal} {runs}")
        code = cli.main(
            ["--database-url", url, "ingest", "--goal", goal, "--format", "json", str(folder)],
            prog_name="benchledger",
            standalone_mode=False,
        )
        if code not in (0, None):
            report(f"failed {tag} {code}")
            return
        report(f"committed {tag}")


CHILD_SCRIPT = (
    "import sys; from tests.reliability.test_crash import child_main; "
    "child_main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], 1)"
)


# -- the parent --------------------------------------------------------------------


@dataclass
class Round:
    number: int
    mode: str
    started: list[tuple[str, str, int]] = field(default_factory=list)  # (tag, goal, runs)
    committed: set[str] = field(default_factory=set)
    failed: list[str] = field(default_factory=list)
    stderr: str = ""


def _read_lines(fd: int, buffer: bytearray, until: str | None, timeout: float) -> list[str]:
    """Read report lines from ``fd`` until the line ``until`` (or EOF / timeout when ``None``)."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            lines.append(line.decode())
            if until is not None and lines[-1] == until:
                return lines
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"child reported nothing for {timeout} s (so far: {lines[-3:]})")
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                return lines
            buffer.extend(chunk)


def _apply(lines: list[str], record: Round) -> None:
    for line in lines:
        verb, _, rest = line.partition(" ")
        if verb == "start":
            tag, goal, runs = rest.split()
            record.started.append((tag, goal, int(runs)))
        elif verb == "committed":
            record.committed.add(rest)
        elif verb == "failed":
            record.failed.append(rest)


def _fork_child(url: str, record: Round, seed: int, kill_at: int, workdir: Path) -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    stderr_path = workdir / f"stderr-{record.number:03d}.txt"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_fd)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
            sys.stderr = open(2, "w", buffering=1, closefd=False)
            child_main(url, record.number, seed, kill_at, str(workdir), write_fd)
            os._exit(0)
        except BaseException:
            import traceback

            traceback.print_exc()
            os._exit(3)
    os.close(write_fd)
    return pid, read_fd


def _spawn_child(url: str, record: Round, seed: int, kill_at: int, workdir: Path) -> tuple[subprocess.Popen, int]:
    stderr = open(workdir / f"stderr-{record.number:03d}.txt", "wb")
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD_SCRIPT, url, str(record.number), str(seed), str(kill_at), str(workdir)],
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=REPO,
    )
    stderr.close()
    return process, process.stdout.fileno()


def run_kills(url: str, workdir: Path, *, rounds: int, seed: int, fork: bool, max_delay: float) -> list[Round]:
    """Start, kill and verify ``rounds`` children; returns what each one reported."""
    rng = random.Random(seed)
    history: list[Round] = []
    expected = ExpectedBatches(workdir)
    for number in range(rounds):
        # The first SQLite round dies inside the first open's migration (statements 9-18: its DDL and COMMIT).
        first_sqlite = number == 0 and url.startswith("sqlite")
        mode = "statement" if first_sqlite else rng.choice(["timer", "statement"])
        kill_at = rng.randint(9, 18) if first_sqlite else rng.randint(1, 120) if mode == "statement" else 0
        record = Round(number, mode)
        child_seed = rng.randrange(2**32)
        if fork:
            pid, fd = _fork_child(url, record, child_seed, kill_at, workdir)
            process = None
        else:
            process, fd = _spawn_child(url, record, child_seed, kill_at, workdir)
            pid = process.pid
        buffer = bytearray()
        try:
            lines = _read_lines(fd, buffer, "ready" if mode == "timer" else None, timeout=60)
            if mode == "timer":
                _apply(lines, record)
                time.sleep(rng.uniform(0.0, max_delay))
                os.kill(pid, signal.SIGKILL)
                lines = _read_lines(fd, buffer, None, timeout=60)
        finally:
            if process is None:
                _, status = os.waitpid(pid, 0)
                signalled = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            else:
                signalled = process.wait(timeout=60) == -signal.SIGKILL
                process.stdout.close()
            if process is None:
                os.close(fd)
        _apply(lines, record)
        record.stderr = (workdir / f"stderr-{record.number:03d}.txt").read_text(errors="replace")
        history.append(record)
        assert signalled, f"round {number} ({mode}) ended without SIGKILL: {record.stderr[-2000:]}"
        assert not record.failed, f"round {number}: an ingest failed: {record.failed} {record.stderr[-2000:]}"
        verify_after_kill(url, history, expected)
    return history


class ExpectedBatches:
    """The event ids each batch appends (computed by a dry run of the same folder, never stored)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.cache: dict[str, tuple[list[str], str]] = {}
        self._scratch = None

    def ids(self, tag: str, goal: str) -> tuple[list[str], str]:
        if tag not in self.cache:
            from benchledger.ledger.service.ingest import ingest
            from benchledger.ledger.service.intake.artifacts import collect_artifacts
            from benchledger.ledger.service.intake.files import expand_paths
            from benchledger.ledger.storage.store import Store

            if self._scratch is None:
                self._scratch = Store.in_memory()
            artifacts, _sources, errors = collect_artifacts(expand_paths([str(self.workdir / tag)]), None)
            assert not errors
            outcome = ingest(self._scratch, goal, artifacts, source="cli ingest", dry_run=True)
            self.cache[tag] = ([m.event_id for m in outcome.members], outcome.batch.event_id)
        return self.cache[tag]


def verify_after_kill(url: str, history: list[Round], expected: ExpectedBatches) -> None:
    from sqlalchemy import text

    from benchledger.ledger.service.maintenance import audit
    from benchledger.ledger.storage.store import Store

    ledger = Store.open(url)
    try:
        if ledger.dialect == "sqlite":
            with ledger.engine.connect() as connection:
                assert connection.execute(text("PRAGMA integrity_check")).scalar() == "ok"
        report = audit(ledger)
        assert report["ok"], f"audit after kill {len(history)}: {report['problems'][:5]}"
        stored = {e.event_id: e for e in ledger.read_all()}
        accounted = 0
        for record in history:
            for tag, goal, runs in record.started:
                member_ids, batch_id = expected.ids(tag, goal)
                assert len(member_ids) == runs + 1
                present = [event_id in stored for event_id in [*member_ids, batch_id]]
                assert all(present) or not any(present), (
                    f"batch {tag} is partly stored after kill {record.number} ({record.mode}): {present}"
                )
                if tag in record.committed:
                    assert all(present), f"batch {tag} was reported committed but is gone after kill {record.number}"
                if all(present):
                    accounted += len(present)
                    assert {stored[i].goal_id for i in [*member_ids, batch_id]} == {goal}
                    # the manifest comes after its members, in one stream, without gaps
                    versions = [stored[i].stream_version for i in [*member_ids, batch_id]]
                    assert versions == list(range(versions[0], versions[0] + len(versions)))
        assert accounted == len(stored), "events that belong to no started batch are stored"
    finally:
        ledger.close()


def _prepare(url: str) -> None:
    if url.startswith("postgresql"):
        # a server ledger is migrated once, explicitly (the embedded one on first open, which round 0 kills)
        from benchledger.ledger.storage.engine import create_ledger_engine
        from benchledger.ledger.storage.migrate import upgrade

        engine = create_ledger_engine(url)
        upgrade(engine)
        engine.dispose()


def test_sigkill_at_random_moments_loses_nothing_acknowledged(ledger_url, tmp_path):
    _prepare(ledger_url)
    history = run_kills(ledger_url, tmp_path, rounds=30, seed=SEED, fork=True, max_delay=0.35)
    kills = len(history)
    committed = sum(len(r.committed) for r in history)
    modes = {r.mode for r in history}
    assert kills >= 30 and modes == {"timer", "statement"}
    # the kills are not all trivially early: batches did commit, and some were cut mid-way
    assert committed >= 10, f"only {committed} batches committed across {kills} kills"
    assert any(r.started and r.started[-1][0] not in r.committed for r in history)


@pytest.mark.slow
@pytest.mark.skipif(not STRESS, reason="set BENCHLEDGER_STRESS=1 for 100 kills of a fresh executable per backend")
def test_sigkill_stress_with_fresh_processes(ledger_url, tmp_path):
    _prepare(ledger_url)
    history = run_kills(ledger_url, tmp_path, rounds=100, seed=SEED + 1, fork=False, max_delay=1.5)
    assert sum(len(r.committed) for r in history) >= 50


# -- replay --jobs / audit --jobs killed -------------------------------------------------
#
# (issue 30, item 8) The command runs in a child process whose workers fold slowly (a step of one goal each, a fold that
# sleeps until the test is done), so that the test kills while every worker is busy: the parent, or one of the workers.

_SLOW_JOBS = '''
import sys, time
from benchledger.ledger.service import fold_jobs, folding

folding.GOALS_PER_STEP = 1  # (a step a goal: every worker gets one)


def slow_fold(*args):
    time.sleep(120)


fold_jobs._fold_in_worker = slow_fold

if __name__ == "__main__":
    from benchledger.cli.main import cli

    cli(sys.argv[1:])
'''


def _children(pid: int) -> list[int]:
    """The live pool workers of process ``pid`` (its children started by multiprocessing's spawn)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z" and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_jobs(url: str, tmp_path: Path, command: str) -> tuple[subprocess.Popen, list[int], tuple]:
    """``command --jobs 2`` started on a ledger of three goals, one of them with a wrong stored count (which a replay
    repairs if it commits), once its two workers fold; and the ledger's state before."""
    from sqlalchemy import text

    from benchledger.ledger.storage.store import Store
    from tests.helpers import invoke

    _prepare(url)
    for goal in ("jobs-a", "jobs-b", "jobs-c"):
        assert invoke(url, "ingest", "--goal", goal, str(write_batch(tmp_path / goal, goal, 2))).exit_code == 0
    ledger = Store.open(url)
    with ledger.engine.begin() as connection:
        connection.execute(text("UPDATE projection_counts SET row_count = 99 WHERE goal_id = 'jobs-a' AND projection = 'review-claim'"))
    ledger.close()
    before = _ledger_state(url)
    script = tmp_path / "slow_jobs.py"
    script.write_text(_SLOW_JOBS)
    env = {k: v for k, v in os.environ.items() if k != "BENCHLEDGER_DEBUG"}
    child = subprocess.Popen(
        [sys.executable, str(script), "--database-url", url, command, "--jobs", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )
    deadline = time.monotonic() + 60
    while len(workers := _children(child.pid)) < 2:
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.1)
    time.sleep(1.5)  # (their initializer ran: each is folding its step)
    return child, workers, before


def _ledger_state(url: str) -> tuple:
    from benchledger.ledger.storage.store import Store

    ledger = Store.open(url)
    try:
        return ledger.heads(), ledger.projection_rows(), ledger.projection_counts("jobs-a"), ledger.event_count()
    finally:
        ledger.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("command", ["replay", "audit"])
def test_workers_exit_when_the_parent_is_killed(ledger_url, tmp_path, command):
    child, workers, before = _start_jobs(ledger_url, tmp_path, command)
    child.kill()
    child.communicate()
    deadline = time.monotonic() + 5
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, workers)), f"workers {workers} outlived their killed parent"
    assert _ledger_state(ledger_url) == before  # (replay is one transaction: nothing of it committed)
    from tests.helpers import invoke

    assert invoke(ledger_url, "audit").exit_code == 1  # (the wrong count: still there)
    assert invoke(ledger_url, "replay", "--jobs", "2").exit_code == 0  # (no lock left behind)
    assert invoke(ledger_url, "audit").exit_code == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("command", ["replay", "audit"])
def test_a_killed_worker_is_one_line_naming_it_not_an_internal_error(ledger_url, tmp_path, command):
    child, workers, before = _start_jobs(ledger_url, tmp_path, command)
    os.kill(workers[0], signal.SIGKILL)
    try:
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 2, stderr
    [line] = stderr.splitlines()
    assert "a --jobs worker process ended abruptly (killed, or out of memory): nothing was written" in line
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert _ledger_state(ledger_url) == before
