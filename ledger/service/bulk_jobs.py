"""``ingest-batches --jobs N``: the lines of a batch file validated by N worker processes, answered in file order.

Validating a line (parse, normalize, the store's guard, its spool line) needs
nothing but the line, so chunks of lines are handed to a pool of worker
processes and their answers taken back in the order of the file: the caller
sees exactly what it would have computed itself, line after line, and stays
the only one to decide (refusals, goal names) and to write. One chunk (a
small file) or one job: the same function runs in this process.

The workers are forked, not spawned: a forked worker starts in milliseconds
with every module already loaded (a spawned one imports them again, which
costs more than validating a file of a few MiB), and is a copy of this process
down to its guard-receipt key (``storage/append.py``), so a receipt it makes
is one the append here accepts, while the key is still never sent, stored or
shown. A worker touches no database connection of this process (it is given
lines, it returns bytes and strings), ignores Ctrl-C (the caller handles it and
stops the pool) and ends with its parent. Where processes cannot be forked,
the lines are validated here.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

from benchledger.errors import WorkerDied

if TYPE_CHECKING:
    from concurrent.futures import Future

_Item = TypeVar("_Item")
_Answer = TypeVar("_Answer")
_END = object()  # (what ``next`` answers once the items are read)

# Chunks handed out ahead of the one awaited, per worker: enough that no worker waits for the
# caller, few enough that the caller holds a handful of chunks and their answers, not the file.
AHEAD_PER_JOB = 2


def in_order(work: Callable[[_Item], _Answer], items: Iterable[_Item], *, jobs: int) -> Iterator[_Answer]:
    """``work(item)`` for each of ``items``, in their order; by ``jobs`` forked worker processes when there are two items or more.

    ``work`` must be a module-level function (or a :func:`functools.partial` of
    one) whose answers pickle. An exception raised while ``items`` is read
    comes after the answers to every item read before it, as it would in one
    process. A worker that dies raises :class:`WorkerDied`.
    """
    source = iter(items)
    if jobs <= 1 or not hasattr(os, "fork"):
        yield from map(work, source)
        return
    first = next(source, _END)
    if first is _END:
        return
    try:
        second = next(source, _END)
    except Exception:
        yield work(first)  # type: ignore[arg-type]
        raise
    if second is _END:  # (one item, a small file: a pool would cost more than it saves)
        yield work(first)  # type: ignore[arg-type]
        return
    # Imported here: a small file, or one job, need not load the process machinery.
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield from _by_workers(work, [first, second], source, jobs)  # type: ignore[list-item]
    except BrokenProcessPool as exc:  # (a worker killed: the OOM killer, a signal)
        raise WorkerDied(
            "an ingest-batches --jobs worker process ended abruptly (killed, or out of memory): nothing was written; "
            "run the command again (with fewer --jobs if memory is short)"
        ) from exc


def _by_workers(work: Callable[[_Item], _Answer], held: list[_Item], source: Iterator[_Item], jobs: int) -> Iterator[_Answer]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from benchledger.ledger.service.fold_jobs import collector_frozen, interruptions_held

    def submit(item: _Item) -> Future[_Answer]:
        with interruptions_held():  # (submit may fork a worker)
            return pool.submit(work, item)

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"), initializer=_start_worker, initargs=(os.getpid(),))
    try:
        with collector_frozen():  # (a pool that forks forks every worker at its first submit)
            pending: deque[Future[_Answer]] = deque([submit(held[0])])
        pending.extend(submit(item) for item in held[1:])
        while True:
            try:
                item = next(source, _END)
            except Exception:  # (reading stopped: what was read before it is answered first)
                while pending:
                    yield pending.popleft().result()
                raise
            if item is _END:
                break
            pending.append(submit(item))  # type: ignore[arg-type]
            if len(pending) > AHEAD_PER_JOB * jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _start_worker(parent: int) -> None:
    # (as replay's workers do: Ctrl-C ignored, the parent handles it; ended with the parent)
    from benchledger.ledger.service.fold_jobs import become_worker

    become_worker(parent)
