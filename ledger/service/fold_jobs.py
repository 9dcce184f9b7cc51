"""Replay's and audit's goals in steps, folded in this process or by ``--jobs N`` worker processes.

A goal's fold is independent of every other goal's, so ``replay --jobs N`` and
``audit --jobs N`` hand steps of goals to N worker processes. Each worker opens
the ledger's database itself and reads its own goals' events (only events up to
the position the caller's snapshot ends at: positions follow commit order, so
those are exactly the events the caller sees), then compares the rows with its
goals' stored rows and returns only what differs. For a replay that is what the
replay's transaction holds (the replay holds the append lock, and only this step
writes these goals' rows); the caller alone writes, all steps in its one
transaction. An audit holds no lock: a worker reads the stored rows of the
caller's own snapshot (:mod:`~benchledger.ledger.storage.shared_snapshot`:
PostgreSQL shares it; on SQLite a fence says whether anything was committed
since it began), else it returns its goals' rows for the caller to compare, and a
step a worker compared after something was committed is folded again here. The
audit's check of the events and of the Merkle log runs in a worker beside the
folds under the same rule (:class:`Beside`). A ledger no other process can open
(the throwaway in-memory one), a one-job run and a goal of more than
:data:`FOLDED_HERE_EVENTS` events fold in this process, through the same code.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from benchledger.errors import WorkerDied
from benchledger.ledger.service import folding
from benchledger.ledger.storage import shared_snapshot
from benchledger.ledger.storage.shared_snapshot import SharedSnapshot
from benchledger.ledger.storage.store import Store
from benchledger.ledger.storage.transaction import Transaction

# With workers, a step also stops at this many events, so that a few large goals
# are spread over the workers instead of landing in one step.
EVENTS_PER_STEP = 2_000
# A goal of more events is folded in this process even with workers: its rows
# (all of them in an audit, all that differ in a replay that upgrades) would
# otherwise cross the pipe, and be held, at once.
FOLDED_HERE_EVENTS = 20_000


@dataclass(frozen=True)
class Step:
    """Goals folded together (ascending ids), and how many events they hold."""

    goals: list[str]
    events: int


def steps_of(heads: Sequence[Mapping[str, Any]], *, jobs: int) -> list[Step]:
    """The goals of ``heads`` (stream heads, ascending ids) in steps of at most :data:`~benchledger.ledger.service.folding.GOALS_PER_STEP` (and, with workers, events)."""
    steps: list[Step] = []
    step: list[str] = []
    size = 0
    for head in heads:
        if step and (len(step) >= folding.GOALS_PER_STEP or (jobs > 1 and size + head["last_version"] > EVENTS_PER_STEP)):
            steps.append(Step(step, size))
            step, size = [], 0
        step.append(head["goal_id"])
        size += head["last_version"]
    return [*steps, Step(step, size)] if step else steps


@dataclass
class Beside:
    """A check run beside the folds (the audit's check of the events and the Merkle log), on a view of the ledger at the
    caller's snapshot: in a worker when the workers read that snapshot, else here (once the first steps went to the
    workers, or before the first step without them). ``result``, once the steps are all folded, is what ``check`` returned."""

    check: Callable[[Store], Any]  # (sent to a worker: a module-level function, or a partial of one)
    result: Any = None


def folded_steps(
    ledger: Store,
    read: Transaction,
    steps: Sequence[Step],
    *,
    jobs: int,
    upto_position: int,
    audit: bool = False,
    projection: str | None = None,
    shared: SharedSnapshot | None = None,
    beside: Beside | None = None,
) -> Iterator[folding.FoldedStep]:
    """Each step of goals folded and compared (:func:`~benchledger.ledger.service.folding.fold_step`), in order; by ``jobs`` worker processes, or here through ``read``.

    A replay's ``read`` is its writing transaction: a step folded here writes
    what differs through it (a worker's changes are written by the caller).
    An audit's ``ledger`` is the view of its snapshot, and ``shared`` how its
    workers read that snapshot (None: they cannot, and send their rows here).
    """
    here = {"mode": folding.FoldMode.AUDIT if audit else folding.FoldMode.WRITE, "projection": projection}
    if jobs <= 1 or len(steps) <= 1 or not ledger.persistent:
        if beside is not None:
            beside.result = beside.check(ledger)
        for step in steps:
            yield folding.fold_step(read, step.goals, upto_position, **here)
        return
    try:
        yield from _folded_by_workers(ledger, read, steps, jobs=jobs, upto_position=upto_position, audit=audit, projection=projection, shared=shared, beside=beside)
    except BrokenProcessPool as exc:  # (a worker killed: the OOM killer, a signal; what it folded is lost, nothing was written)
        raise WorkerDied(
            "a --jobs worker process ended abruptly (killed, or out of memory): nothing was written; "
            "run the command again (with fewer --jobs if memory is short)"
        ) from exc


def _folded_by_workers(
    ledger: Store,
    read: Transaction,
    steps: Sequence[Step],
    *,
    jobs: int,
    upto_position: int,
    audit: bool,
    projection: str | None,
    shared: SharedSnapshot | None,
    beside: Beside | None,
) -> Iterator[folding.FoldedStep]:
    """:func:`folded_steps` with ``jobs`` worker processes."""
    # Imported here: an ingest folds its goals in this process and need not load the process machinery.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    here = {"mode": folding.FoldMode.AUDIT if audit else folding.FoldMode.WRITE, "projection": projection}
    url = ledger.engine.url.render_as_string(hide_password=False)
    context = multiprocessing.get_context("spawn")  # a worker shares no connection (nor lock) with this process
    token = shared.token if shared is not None else None

    def trusted() -> bool:
        """Whether a worker's snapshot is this process's (an audit's workers compare rows only then: never a mix of two moments)."""
        return shared is not None and shared.unchanged()

    def there() -> dict[str, Any]:
        if not audit:
            return {"mode": folding.FoldMode.COLLECT, "projection": projection}
        # (an audit's worker that may read another moment sends its rows, compared here with this process's snapshot)
        return {"mode": folding.FoldMode.AUDIT if trusted() else folding.FoldMode.AUDIT_ROWS, "projection": projection}

    initargs = (url, os.getpid())
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(steps)), mp_context=context, initializer=_open_worker, initargs=initargs)
    try:
        checking = _submit(pool, _check_in_worker, beside.check, token) if beside is not None and trusted() else None
        unchecked = beside is not None and checking is None  # (then checked here, once the first steps went to the workers)
        pending: deque[tuple[Step, Any, folding.FoldMode | None]] = deque()

        def collected() -> folding.FoldedStep:
            nonlocal unchecked
            if unchecked:
                beside.result, unchecked = beside.check(ledger), False
            step, future, mode = pending.popleft()
            if future is None:
                return folding.fold_step(read, step.goals, upto_position, **here)
            outcome = future.result()
            if mode is folding.FoldMode.AUDIT_ROWS:
                return folding.compare_rows(read, outcome, projection=projection)
            if mode is folding.FoldMode.AUDIT and not trusted():  # (something committed since: what the worker read may not be this snapshot)
                return folding.fold_step(read, step.goals, upto_position, **here)
            return outcome

        for step in steps:
            if len(step.goals) == 1 and step.events > FOLDED_HERE_EVENTS:
                pending.append((step, None, None))
            else:
                options = there()
                pending.append((step, _submit(pool, _fold_in_worker, step.goals, upto_position, options, token), options["mode"]))
            if len(pending) >= 2 * jobs:  # (bounded: the caller holds a few steps, not the ledger)
                yield collected()
        while pending:
            yield collected()
        if checking is not None:
            beside.result = checking.result() if trusted() else beside.check(ledger)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # (after a Ctrl-C, only the steps under way are finished: the workers ignore it)


@contextmanager
def interruptions_held() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread while a worker may be started (forked or spawned): the worker starts with
    them blocked (a signal mask survives fork and exec) until :func:`become_worker` sets what they do there. A Ctrl-C
    reaches the whole process group, and a worker still starting printed a traceback of its own, or swallowed it (so did
    a SIGTERM, which the command line's handler turns into one); the parent receives them once this ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@contextmanager
def collector_frozen() -> Iterator[None]:
    """The collector's objects frozen (``gc.freeze``) while a worker is forked, so that the worker's collections skip what
    it inherited: a collection writes to every object it walks, and each write to an inherited page copies the page
    (copy-on-write), which cost a forked ``ingest-batches`` worker a quarter more CPU than the same work in one process.
    The objects are thawed again in this process, unless it had frozen some itself (the command line freezes what its
    imports made: a process of one command, whose later collections then skip these too)."""
    thaw = not gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if thaw:
            gc.unfreeze()


def _submit(pool: Any, work: Callable[..., Any], *args: Any) -> Any:
    """``pool.submit(work, *args)``, which may spawn a worker, with SIGINT and SIGTERM held (:func:`interruptions_held`)."""
    with interruptions_held():
        return pool.submit(work, *args)


def become_worker(parent: int) -> None:
    """What every worker process of benchledger does first: ignore Ctrl-C (the parent handles it and stops its workers; a
    SIGINT pending since :func:`interruptions_held` is dropped), die of SIGTERM (the command line's handler, inherited,
    would make it an interruption of the parent's command: a pool that stops a broken worker terminates it and waits)
    and end when ``parent`` does (:func:`_exit_with_parent`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    _exit_with_parent(parent)


_worker_ledger: Store | None = None


def _open_worker(url: str, parent: int) -> None:
    global _worker_ledger
    become_worker(parent)
    _worker_ledger = Store.open(url, migrate=False)


def _exit_with_parent(parent: int) -> None:
    """Make this worker end when ``parent`` (the process whose pool started it) does, however it ends.

    A parent killed with SIGKILL never shuts its pool down: its workers would
    go on folding, holding database connections (on PostgreSQL, server
    processes) long after. On Linux the kernel kills the worker when its parent
    dies (``PR_SET_PDEATHSIG``); elsewhere a thread watches for the parent to go.
    """
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    else:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="benchledger-parent-watch").start()
    if os.getppid() != parent:  # (the parent died before the watch began)
        os._exit(1)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _fold_in_worker(goals: list[str], upto_position: int, options: Mapping[str, Any], token: str | None) -> folding.FoldedStep:
    assert _worker_ledger is not None, "the pool's initializer opens the ledger"
    with shared_snapshot.joined(_worker_ledger, token) as view, view.reading() as connection:
        return folding.fold_step(Transaction(connection), goals, upto_position, **options)


def _check_in_worker(check: Callable[[Store], Any], token: str | None) -> Any:
    assert _worker_ledger is not None, "the pool's initializer opens the ledger"
    with shared_snapshot.joined(_worker_ledger, token) as view:
        return check(view)
