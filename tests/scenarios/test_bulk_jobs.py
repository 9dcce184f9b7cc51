"""``ingest-batches --jobs N`` on both backends: worker processes validate the lines and fold the goals, and what is
written and reported is exactly what ``--jobs 1`` writes and reports (events, positions, the digest, every projection row,
every refusal and its line).

The chunks are made one line each here, so that a file of a few dozen lines is validated by the workers (a file of
one chunk is validated in the calling process, whatever ``--jobs``); each test checks that workers did validate, and
those about the fold that workers folded (``service.fold_workers``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from benchledger.errors import BenchledgerError
from benchledger.ledger.service import bulk, fold_workers
from benchledger.ledger.storage.engine import normalize_url
from benchledger.ledger.storage.store import Store
from tests.helpers import invoke, row_counts
from tests.scenarios.test_bulk_intake import _attempt, _batch_file, _demo, _interleaved, _json

# The processes that validated lines, each noting its id here (set by the fixture below).
_VALIDATORS: Path | None = None
_checked_lines = bulk._checked_lines


def _checked_lines_noting_the_process(name, lines):
    """``bulk._checked_lines``, noting which process ran it (module level: a worker finds it by name)."""
    assert _VALIDATORS is not None
    with _VALIDATORS.open("a") as out:
        out.write(f"{os.getpid()}\n")
    return _checked_lines(name, lines)


def _checked_lines_of_a_killed_worker(name, lines):
    if os.getpid() != _PARENT:
        os.kill(os.getpid(), signal.SIGKILL)  # (the OOM killer's way)
    return _checked_lines(name, lines)


_PARENT = os.getpid()
# The processes that folded goals, each noting its id here (set by the fixture below).
_FOLDERS: Path | None = None


class _TransactionFoldsNotingTheProcess(fold_workers.TransactionFolds):
    """``goal_folds.TransactionFolds`` as the fold workers use it, noting which process fed it events."""

    def add(self, first_new, new_events):
        assert _FOLDERS is not None
        with _FOLDERS.open("a") as out:
            out.write(f"{os.getpid()}\n")
        super().add(first_new, new_events)


class _TransactionFoldsOfAKilledWorker(fold_workers.TransactionFolds):
    def add(self, first_new, new_events):
        os.kill(os.getpid(), signal.SIGKILL)  # (only workers use fold_workers.TransactionFolds)


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """The ids of the processes that fold the goals of ``ingest-batches --jobs N`` (N > 1)."""
    global _FOLDERS
    _FOLDERS = tmp_path / "folders.txt"
    monkeypatch.setattr(fold_workers, "TransactionFolds", _TransactionFoldsNotingTheProcess)

    def seen() -> set[int]:
        found = {int(pid) for pid in _FOLDERS.read_text().split()} if _FOLDERS.exists() else set()
        _FOLDERS.unlink(missing_ok=True)
        return found

    yield seen
    _FOLDERS = None


@pytest.fixture
def validators(tmp_path, monkeypatch):
    """The ids of the processes that validate lines, one line a chunk."""
    global _VALIDATORS
    _VALIDATORS = tmp_path / "validators.txt"
    monkeypatch.setattr(bulk, "CHUNK_BYTES", 1)
    monkeypatch.setattr(bulk, "_checked_lines", _checked_lines_noting_the_process)

    def seen() -> set[int]:
        return {int(pid) for pid in _VALIDATORS.read_text().split()} if _VALIDATORS.exists() else set()

    yield seen
    _VALIDATORS = None


@pytest.fixture
def twin_url(ledger_url, tmp_path):
    """A second migrated, empty ledger on the same backend as ``migrated_url``."""
    from benchledger.ledger.storage.engine import create_ledger_engine
    from benchledger.ledger.storage.migrate import upgrade
    from tests.conftest import POSTGRES_URL, _postgres_schema_url

    admin = schema = None
    if ledger_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'twin.sqlite'}"
    else:
        schema = f"t_{uuid.uuid4().hex[:16]}"
        admin = create_engine(normalize_url(POSTGRES_URL))
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = _postgres_schema_url(schema)
    engine = create_ledger_engine(url)
    upgrade(engine)
    engine.dispose()
    yield url
    if admin is not None:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _written(url) -> dict:
    """Everything a ledger holds that an ingest writes: every event with every stored field, every projection row, the digest."""
    ledger = Store.open(url)
    try:
        events = [
            {name: getattr(event, name) for name in ("position", "event_id", "goal_id", "stream_version", "kind", "payload", "chain_hash", "recorded_at", "source")}
            for event in ledger.read_all()
        ]
        rows = ledger.projection_rows()
    finally:
        ledger.close()
    audit = _json(invoke(url, "audit", "--format", "json"))
    assert audit["ok"] is True
    return {"events": events, "rows": rows, "digest": audit["digest"]}


def _goal_before_the_file(url, tmp_path) -> None:
    """``goal-0`` with two attempts' evidence, one run retracted: a goal the file continues from its stored checkpoint."""
    path = _batch_file(tmp_path / "before.ndjson", [{"goal_id": "goal-0", "kind": None, "artifacts": _attempt(f"early-{i}")} for i in range(2)])
    _json(invoke(url, "ingest-batches", str(path), "--jobs", "1", "--format", "json"))
    ledger = Store.open(url)
    try:
        run = next(event for event in ledger.read_all() if event.kind != "ingest_batch")
    finally:
        ledger.close()
    assert invoke(url, "retract", run.event_id, "--reason", "ran on a stale image").exit_code == 0


@pytest.mark.parametrize(
    ("transaction", "chunk", "jobs"),
    [(6, 100, 2), (12, 2, 2), (6, 100, 3)],
    ids=["a-chunk-a-transaction", "chunks-of-2", "jobs-3-two-fold-workers"],
)
def test_jobs_2_writes_exactly_what_jobs_1_writes(migrated_url, twin_url, tmp_path, monkeypatch, validators, folders, transaction, chunk, jobs):
    from benchledger.ledger.storage import append

    moment = append.utc_timestamp(dt.datetime(2026, 12, 5, 4, 0, tzinfo=dt.UTC))
    monkeypatch.setattr(append, "utc_timestamp", lambda: moment)  # (both runs at one moment: the digests may then agree)
    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", transaction)  # each goal's batches span transactions
    monkeypatch.setattr(bulk, "APPEND_CHUNK_ARTIFACTS", chunk)  # (2: a goal's batches span the chunks of a transaction too)
    monkeypatch.setattr(fold_workers, "GOALS_PER_PIECE", 1)  # (each goal's rows handed over, and written, as they are made)
    for url in (twin_url, migrated_url):
        _goal_before_the_file(url, tmp_path)
    lifecycle = [_demo(name) for name in ("01-preflight.json", "02-launch.json")]
    lines = [
        *_interleaved(18),
        {"goal_id": "goal-3", "kind": "run", "artifacts": _attempt("solo")[:2]},
        {"goal_id": "goal-4", "kind": None, "artifacts": lifecycle, "attempt": 1},  # named attempts: the same lifecycle again in 2
        {"goal_id": "goal-4", "kind": None, "artifacts": _attempt("first")},
        {"goal_id": "goal-4", "kind": None, "artifacts": lifecycle, "attempt": "2"},
        {"goal_id": "goal-4", "kind": None, "artifacts": _attempt("second"), "attempt": "2"},
        {"goal_id": "goal-0", "kind": None, "artifacts": _attempt("early-1")},  # (stored before the file: duplicates)
    ]
    path = _batch_file(tmp_path / "batches.ndjson", lines)
    validators()  # (the ingests before the file)
    (tmp_path / "validators.txt").unlink(missing_ok=True)

    one = _json(invoke(twin_url, "ingest-batches", str(path), "--jobs", "1", "--format", "json"))
    assert validators() == {os.getpid()} and folders() == set()  # (one job: no fold worker)
    (tmp_path / "validators.txt").unlink()
    two = _json(invoke(migrated_url, "ingest-batches", str(path), "--jobs", str(jobs), "--format", "json"))

    workers = validators()
    assert workers and os.getpid() not in workers  # (24 one-line chunks: validated by the workers alone)
    fold = folders()
    assert len(fold) == jobs - 1 and os.getpid() not in fold  # (beside the writer, jobs - 1 fold workers: each goal by its own)
    assert two == one and one["duplicates"] > 0 and one["transactions"] >= 48 // transaction
    written = _written(migrated_url)
    assert written == _written(twin_url)
    assert len(written["events"]) == one["appended"] + one["batches_appended"] + 2 * 4 + 1  # (+ the goal before the file: 2 batches, 1 retraction)
    assert {row["goal_id"] for row in written["rows"]} == {f"goal-{i}" for i in range(5)}
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0  # (the workers' rows are a replay's)


def _refused_lines(tmp_path: Path) -> Path:
    secret = {**_demo("04-run-baseline.json"), "job_name": "postgresql://admin:pw@db.internal/prod"}
    lines: list[object] = [
        {"goal_id": "goal-alpha", "kind": None, "artifacts": _attempt("t-0")},
        "not json",
        {"goal_id": "goal-alpha", "kind": None, "artifacts": _attempt("t-1")},
        {"goal_id": "goal-alpah", "kind": None, "artifacts": [secret]},  # a name one typo away, and a secret: two refusals
        {"goal_id": "goal-beta", "kind": None, "artifacts": [{"schema_version": "no_such_schema_v0"}]},
        {"goal_id": "goal-beta", "kind": None, "artifacts": _attempt("t-2")},
        "[1]",
    ]
    return _batch_file(tmp_path / "refused.ndjson", lines)


@pytest.mark.parametrize("too_long", [False, True], ids=["every-line-read", "a-line-too-long-ends-the-reading"])
def test_refusals_are_the_same_lines_in_the_same_order_and_nothing_is_written(migrated_url, tmp_path, monkeypatch, validators, too_long):
    path = _refused_lines(tmp_path)
    if too_long:  # the reading stops at a line over the limit: what was read before is reported first, then that
        monkeypatch.setattr(bulk, "MAX_BATCH_LINE_BYTES", 20_000)
        with path.open("a") as out:
            out.write(json.dumps({"goal_id": "goal-beta", "kind": None, "artifacts": _attempt("t-3"), "source": "x" * 30_000}) + "\n")
            out.write(json.dumps({"goal_id": "goal-beta", "kind": None, "artifacts": _attempt("t-4")}) + "\n")
    before = row_counts(migrated_url)

    one = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "1", "--format", "json")
    two = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2", "--format", "json")

    assert os.getpid() in validators() and len(validators()) > 1
    assert (one.exit_code, two.exit_code) == (1, 1)
    assert (two.stdout, two.stderr) == (one.stdout, one.stderr)
    report = json.loads(two.stdout)
    expected = [2, 4, 4, 5, 7] + ([None] if too_long else [])
    assert [error["line"] for error in report["errors"]] == expected
    assert "goal-alpha" in report["errors"][1]["error"] and "job_name" in report["errors"][2]["error"]
    assert ("larger than the 20000-byte limit" in report["errors"][-1]["error"]) is too_long
    assert row_counts(migrated_url) == before


@pytest.mark.parametrize("jobs", ["0", "10000"])
def test_jobs_must_be_at_least_one_and_at_most_four_a_cpu(migrated_url, tmp_path, jobs):
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": "g", "kind": None, "artifacts": _attempt("t")}])

    result = invoke(migrated_url, "ingest-batches", str(path), "--jobs", jobs)

    cpus = len(os.sched_getaffinity(0))
    assert result.exit_code == 2 and f"Invalid value for '--jobs': {jobs} is not in the range 1<=x<={4 * cpus}" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


def test_a_worker_killed_is_named_and_nothing_is_written(migrated_url, tmp_path, monkeypatch):
    monkeypatch.setattr(bulk, "CHUNK_BYTES", 1)
    monkeypatch.setattr(bulk, "_checked_lines", _checked_lines_of_a_killed_worker)
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": f"g-{i}", "kind": None, "artifacts": _attempt(f"t-{i}")} for i in range(4)])

    result = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2")

    assert result.exit_code == 2 and "worker process ended abruptly" in result.stderr and "nothing was written" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


def test_ctrl_c_while_workers_validate_writes_nothing_and_leaves_no_worker(migrated_url, tmp_path, monkeypatch, validators):
    import multiprocessing

    def interrupted(report, line, error):
        raise KeyboardInterrupt  # (the user's Ctrl-C, as the first answer comes back)

    monkeypatch.setattr(bulk.BatchFileIngest, "refuse", interrupted)
    lines: list[object] = ["not json", *({"goal_id": f"g-{i}", "kind": None, "artifacts": _attempt(f"t-{i}")} for i in range(6))]
    path = _batch_file(tmp_path / "batches.ndjson", lines)

    result = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2")

    assert result.exit_code == 130 and "nothing was written" in result.stderr
    assert validators() and os.getpid() not in validators()  # (the workers had begun)
    assert multiprocessing.active_children() == []
    assert row_counts(migrated_url)["events"] == 0


def test_the_workers_receipts_spare_the_append_judging_again(migrated_url, tmp_path, monkeypatch, validators):
    """A forked worker's guard receipt is one this process accepts: the append guards nothing the workers judged."""
    from benchledger.ledger.storage import append

    judged_in_the_append: list[str] = []
    real = append.refuse_unstorable

    def counted(items):
        items = list(items)
        judged_in_the_append.extend(item.kind for item in items)
        return real(items)

    monkeypatch.setattr(append, "refuse_unstorable", counted)
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": f"g-{i % 3}", "kind": None, "artifacts": _attempt(f"t-{i}")} for i in range(6)])

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2", "--format", "json"))

    assert report["appended"] == 18 and validators() and os.getpid() not in validators()
    assert judged_in_the_append == []


def test_a_fold_worker_killed_is_named_and_its_transaction_is_not_written(migrated_url, tmp_path, monkeypatch):
    import multiprocessing
    import threading

    threads = threading.active_count()
    monkeypatch.setattr(fold_workers, "TransactionFolds", _TransactionFoldsOfAKilledWorker)
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": f"g-{i}", "kind": None, "artifacts": _attempt(f"t-{i}")} for i in range(4)])

    result = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2")

    assert result.exit_code == 2 and "worker process ended abruptly" in result.stderr and "was rolled back" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert multiprocessing.active_children() == [] and threading.active_count() == threads
    assert row_counts(migrated_url)["events"] == 0  # (one transaction: the file's 12 artifacts)


def test_a_reducer_raising_in_a_fold_worker_raises_what_one_job_raises(migrated_url, tmp_path, monkeypatch, folders):
    from benchledger.projections import runner_invariants

    monkeypatch.setattr(runner_invariants, "reduce", lambda inputs, options: 1 / 0)
    monkeypatch.setattr(fold_workers, "GOALS_PER_PIECE", 1)  # (rows of goals that folded are written before the failure)
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": f"g-{i}", "kind": None, "artifacts": _attempt(f"t-{i}")} for i in range(4)])
    before = row_counts(migrated_url)

    one = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "1")
    two = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2")

    assert folders() - {os.getpid()}  # (the workers folded, and raised: this process folded the transaction again)
    assert two.exit_code == one.exit_code != 0 and two.stderr == one.stderr and "review-runner-invariants" in one.stderr
    assert row_counts(migrated_url) == before


def _reduced_unless_of_the_last_goal(real):
    def reduce(inputs, options):
        if "t-7" in repr(inputs):
            raise ZeroDivisionError("the last goal's evidence")
        return real(inputs, options)

    return reduce


def test_a_reducer_raising_in_a_fold_worker_once_other_goals_rows_were_written_raises_what_one_job_raises(migrated_url, twin_url, tmp_path, monkeypatch, folders):
    """The workers hand rows over a goal at a time, written as they come; a later goal's fold raises: the transaction is
    written again folded in the writer (the rows written are rolled back), so the error is one job's, and nothing is kept."""
    from benchledger.projections import runner_invariants

    monkeypatch.setattr(runner_invariants, "reduce", _reduced_unless_of_the_last_goal(runner_invariants.reduce))
    monkeypatch.setattr(fold_workers, "GOALS_PER_PIECE", 1)
    written = []
    real_write = fold_workers.write_goal_rows
    monkeypatch.setattr(fold_workers, "write_goal_rows", lambda tx, rows: (written.append(len(rows)), real_write(tx, rows)))
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": f"g-{i}", "kind": None, "artifacts": _attempt(f"t-{i}")} for i in range(8)])

    one = invoke(twin_url, "ingest-batches", str(path), "--jobs", "1")
    two = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "3")  # (two fold workers: one raises, the other's rows come)

    assert sum(written) > 0 and folders() - {os.getpid()}  # (other goals' rows were written before the fold raised)
    assert two.exit_code == one.exit_code != 0 and two.stderr == one.stderr and "the last goal's evidence" in one.stderr
    assert row_counts(migrated_url) == row_counts(twin_url)
    assert row_counts(migrated_url)["events"] == 0


def test_one_artifact_and_one_line_start_no_fold_worker(migrated_url, tmp_path, monkeypatch):
    def refused(*args):
        raise AssertionError("a fold worker was started")

    monkeypatch.setattr(fold_workers.FoldWorkers, "__init__", refused)
    document = tmp_path / "run.json"
    document.write_text(json.dumps(_attempt("single")[0]))
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": "g-one", "kind": None, "artifacts": _attempt("t")}])

    assert invoke(migrated_url, "ingest", "--goal", "g-one", str(document)).exit_code == 0
    assert _json(invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2", "--format", "json"))["appended"] == 3


class _Again(Exception):
    """A transaction's attempt given up after its first chunk was appended (as SQLite's lock retry gives one up)."""


def _write_again_once_given_up(monkeypatch) -> None:
    """``Store.writing`` runs its work again when the first try raises :class:`_Again`: a transaction retried (as a lock retry does)."""
    real_writing = Store.writing

    def writing_again(self, work):
        try:
            return real_writing(self, work)
        except _Again:
            return real_writing(self, work)

    monkeypatch.setattr(Store, "writing", writing_again)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_transaction_attempted_again_after_a_chunk_was_folded_writes_what_one_attempt_writes(migrated_url, twin_url, tmp_path, monkeypatch, jobs):
    from benchledger.ledger.storage import append
    from benchledger.ledger.storage.store import ChunkedAppend

    moment = append.utc_timestamp(dt.datetime(2026, 12, 5, 4, 0, tzinfo=dt.UTC))
    monkeypatch.setattr(append, "utc_timestamp", lambda: moment)
    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 12)
    monkeypatch.setattr(bulk, "APPEND_CHUNK_ARTIFACTS", 2)
    path = _batch_file(tmp_path / "batches.ndjson", _interleaved(18))
    once = _json(invoke(twin_url, "ingest-batches", str(path), "--jobs", jobs, "--format", "json"))
    appends, real_append = [], ChunkedAppend.append

    def appended_then_given_up(self, appends_, **kw):
        appends.append(appends_)
        if len(appends) == 2:  # (the first transaction's second chunk: the first is being folded)
            raise _Again
        return real_append(self, appends_, **kw)

    monkeypatch.setattr(ChunkedAppend, "append", appended_then_given_up)
    _write_again_once_given_up(monkeypatch)

    again = _json(invoke(migrated_url, "ingest-batches", str(path), "--jobs", jobs, "--format", "json"))

    assert len(appends) > 2 and again == once
    assert _written(migrated_url) == _written(twin_url)


@pytest.mark.parametrize("seed", range(4))
def test_any_cut_into_transactions_and_chunks_folds_what_a_replay_folds(migrated_url, tmp_path, monkeypatch, seed):
    """Goals interleaved at random, cut at random into transactions and chunks: the workers' rows are a replay's."""
    import random

    rng = random.Random(seed)
    lifecycle = [_demo(name) for name in ("01-preflight.json", "02-launch.json", "03-post-launch.json")]
    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", rng.randint(3, 20))
    monkeypatch.setattr(bulk, "APPEND_CHUNK_ARTIFACTS", rng.randint(1, 8))
    monkeypatch.setattr(fold_workers, "GOALS_PER_PIECE", rng.randint(1, 3))
    lines = []
    for _ in range(rng.randint(10, 30)):
        goal = f"goal-{rng.randint(0, 4)}"
        artifacts = [rng.choice(lifecycle)] if rng.random() < 0.3 else _attempt(f"task-{rng.randint(0, 9)}")
        lines.append({"goal_id": goal, "kind": None, "artifacts": artifacts})
    path = _batch_file(tmp_path / "batches.ndjson", lines)

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2", "--format", "json"))

    assert report["batches"] == len(lines)
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True


def test_ctrl_c_while_workers_fold_leaves_no_worker_and_no_thread(migrated_url, tmp_path, monkeypatch, folders):
    import multiprocessing
    import threading

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 6)
    real_commit, commits = bulk.Ingest.commit, []

    def interrupted(unit):
        commits.append(unit)
        if len(commits) == 2:
            raise KeyboardInterrupt  # (the user's Ctrl-C, as the second transaction begins)
        return real_commit(unit)

    monkeypatch.setattr(bulk.Ingest, "commit", interrupted)
    threads = threading.active_count()
    path = _batch_file(tmp_path / "batches.ndjson", _interleaved(9))

    result = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2")

    assert result.exit_code == 130 and folders() - {os.getpid()}  # (the workers had folded the first transaction)
    assert result.stderr == (
        f"benchledger: interrupted; {path}: while appending lines 3-4: this transaction wrote nothing; the 1 transaction(s) "
        "before it committed 2 batch(es) of the lines before line 3, which stay: running the file again appends only what is missing\n"
    )
    assert multiprocessing.active_children() == [] and threading.active_count() == threads
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True  # (the first transaction, whole)


class _TransactionFoldsSlowToFinish(fold_workers.TransactionFolds):
    """``goal_folds.TransactionFolds`` as the fold workers use it, slow to make a transaction's rows: the writer waits."""

    def finished(self):
        time.sleep(0.2)
        yield from super().finished()


@pytest.fixture
def read_while_folding(monkeypatch):
    """For each spool line read back (``bulk.unspooled``), whether the writer was waiting for the fold workers' rows then
    (the workers made slow to finish, so that the writer prepares the next transaction meanwhile)."""
    monkeypatch.setattr(fold_workers, "TransactionFolds", _TransactionFoldsSlowToFinish)
    folding, seen = [False], []
    real_fold, real_unspooled = fold_workers.FoldWorkers.fold, bulk.unspooled

    def fold(self, *args):
        folding[0] = True
        try:
            return real_fold(self, *args)
        finally:
            folding[0] = False

    def unspooled(line):
        seen.append(folding[0])
        return real_unspooled(line)

    monkeypatch.setattr(fold_workers.FoldWorkers, "fold", fold)
    monkeypatch.setattr(bulk, "unspooled", unspooled)
    return seen


class _SpoolUnreadable(BenchledgerError):
    """A spool line that cannot be read back (as a failing disk would)."""


def test_a_failure_preparing_the_next_transaction_while_one_commits_ends_as_with_one_job(migrated_url, twin_url, tmp_path, monkeypatch, read_while_folding):
    """The writer reads the next transaction's lines while the workers fold the one it commits: a line that cannot be read
    then raises once that one committed, not in it, as one job does (which reads the line only when the next begins)."""
    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 6)  # (two lines a transaction)
    real_unspooled = bulk.unspooled

    def unreadable_at_the_fourth_line(line):
        batch = real_unspooled(line)
        if len(read_while_folding) == 4:  # (the second transaction's second line)
            raise _SpoolUnreadable("the spool could not be read back")
        return batch

    monkeypatch.setattr(bulk, "unspooled", unreadable_at_the_fourth_line)
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": f"g-{i % 3}", "kind": None, "artifacts": _attempt(f"t-{i}")} for i in range(6)])

    one = invoke(twin_url, "ingest-batches", str(path), "--jobs", "1")
    read_while_folding.clear()
    two = invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2")

    assert read_while_folding == [False, False, False, True]  # (the failing line read while the first transaction's rows were folded)
    assert two.exit_code == one.exit_code != 0 and (two.stdout, two.stderr) == (one.stdout, one.stderr)
    assert "the spool could not be read back" in two.stderr and len(two.stderr.strip().splitlines()) == 1
    assert row_counts(migrated_url)["events"] == row_counts(twin_url)["events"] == 2 * 4  # (the first transaction, whole)
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_transaction_given_up_after_its_fold_with_the_next_prepared_writes_what_one_attempt_writes(
    migrated_url, twin_url, tmp_path, monkeypatch, read_while_folding, jobs
):
    """A transaction attempted again once its rows were folded (a failure writing them: SQLite's lock retry), the next
    transaction prepared meanwhile: the ledger is that of one attempt, and the next transaction is appended whole."""
    from benchledger.ledger.service import materialize
    from benchledger.ledger.storage import append

    moment = append.utc_timestamp(dt.datetime(2026, 12, 5, 4, 0, tzinfo=dt.UTC))
    monkeypatch.setattr(append, "utc_timestamp", lambda: moment)
    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 12)
    path = _batch_file(tmp_path / "batches.ndjson", _interleaved(18))
    once = _json(invoke(twin_url, "ingest-batches", str(path), "--jobs", jobs, "--format", "json"))
    read_while_folding.clear()
    writes, real_write = [], materialize.write_goal_rows

    def given_up_once(tx, folded):
        writes.append(tx)
        if len(writes) == 1:
            raise _Again
        return real_write(tx, folded)

    monkeypatch.setattr(materialize, "write_goal_rows", given_up_once)
    _write_again_once_given_up(monkeypatch)

    again = _json(invoke(migrated_url, "ingest-batches", str(path), "--jobs", jobs, "--format", "json"))

    assert any(read_while_folding) is (jobs == "2")  # (the next transaction's lines read while the first one's rows were folded)
    assert len(writes) > once["transactions"] and again == once
    assert _written(migrated_url) == _written(twin_url)


def test_a_file_of_duplicates_alone_reports_no_transaction(migrated_url, tmp_path):
    """A user runs the same file again: nothing is appended, and the report says no transaction wrote anything."""
    path = _batch_file(tmp_path / "batches.ndjson", [{"goal_id": f"g-{i}", "kind": None, "artifacts": _attempt(f"t-{i}")} for i in range(4)])
    assert invoke(migrated_url, "ingest-batches", str(path), "--jobs", "2").exit_code == 0
    before = row_counts(migrated_url)

    for jobs in ("1", "2"):
        result = invoke(migrated_url, "ingest-batches", str(path), "--jobs", jobs)

        assert result.exit_code == 0
        assert "- appended: 0 event(s); duplicates: 12; transactions: 0" in result.stdout
    assert row_counts(migrated_url) == before
