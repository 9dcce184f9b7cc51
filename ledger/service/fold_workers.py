"""``ingest-batches --jobs N``: each transaction's goals folded by N worker processes, a goal always by the same one.

The writer appends a transaction's events, then (:meth:`FoldWorkers.fold`)
hands each worker the goals it owns (by a hash of the goal id) with the events
appended to them; the worker folds them by :func:`materialize.fold_goals`, the
code the writer runs itself with one job, and answers their rows, which the
writer writes before it commits. A worker keeps its goals' projectors across
transactions (:class:`KeptProjectors`), so a goal spread over a file is folded
once, as it is with one job; the writer tells it when a transaction begins (an
attempt that did not commit is forgotten) and when it committed.

A worker never reads the database: its snapshot would lack the events of the
transaction being folded. What a fold reads (a checkpoint, the events it names,
a comparison-batch row) it asks of the writer, which reads it in its
transaction (:class:`materialize.TransactionReads`) and answers; so a worker's
fold reads what the writer's own would, and makes the same rows.

A fold that raises in a worker (a reducer's fault) is folded again here, so the
error is the one a single job gives. A worker that dies raises
:class:`WorkerDied`, and the transaction rolls back. Workers are forked, as
``service.bulk_jobs``' are, ignore Ctrl-C and end with their parent.
"""

from __future__ import annotations

import os
import signal
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchledger.errors import WorkerDied
from benchledger.ledger.service.materialize import READS, GoalRows, KeptProjectors, TransactionReads, fold_goals
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.transaction import Transaction

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

DIED = (
    "an ingest-batches --jobs worker process ended abruptly (killed, or out of memory): the transaction it was folding "
    "was rolled back, those committed before it hold whole batches; run the command again to append the rest (with fewer "
    "--jobs if memory is short)"
)


def owner(goal_id: str, jobs: int) -> int:
    """The worker that folds ``goal_id`` (the same in every transaction: it keeps the goal's projector)."""
    return zlib.crc32(goal_id.encode()) % jobs


class FoldWorkers:
    """:class:`materialize.GoalFolds` by ``jobs`` forked worker processes (a context manager: leaving it ends them)."""

    def __init__(self, jobs: int) -> None:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self._workers: list[tuple[BaseProcess, Connection]] = []
        for _ in range(jobs):
            here, there = context.Pipe()
            process = context.Process(target=_serve, args=(there, os.getpid()), daemon=True, name="benchledger-fold")
            process.start()
            there.close()
            self._workers.append((process, here))

    def __enter__(self) -> FoldWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for process, pipe in self._workers:
            process.kill()  # (a worker holds nothing to save: the folds it keeps are the writer's to ask for)
            process.join()
            pipe.close()
        self._workers = []

    def begin(self) -> None:
        self._tell(("begin",))

    def committed(self) -> None:
        self._tell(("committed",))

    def fold(self, tx: Transaction, first_new: Mapping[str, int], new_events: Sequence[StoredEvent] | None) -> list[GoalRows]:
        from multiprocessing.connection import wait

        jobs = len(self._workers)
        parts: list[dict[str, int]] = [{} for _ in range(jobs)]
        for goal, emit_from in first_new.items():
            parts[owner(goal, jobs)][goal] = emit_from
        events: list[list[StoredEvent] | None] = [None if new_events is None else [] for _ in range(jobs)]
        for event in new_events or ():
            part = events[owner(event.goal_id, jobs)]
            assert part is not None
            part.append(event)
        reads = TransactionReads(tx)
        busy: dict[Any, int] = {}
        folded: dict[str, GoalRows] = {}
        try:
            for index, (_, pipe) in enumerate(self._workers):
                if parts[index]:
                    _send(pipe, ("fold", parts[index], events[index]))
                    busy[pipe] = index
            while busy:
                for pipe in wait(list(busy)):
                    message = _received(pipe)  # type: ignore[arg-type]
                    if message[0] == "read":
                        _, name, args = message
                        assert name in READS  # (a worker asks only for what a fold reads)
                        answer = getattr(reads, name)(*args)
                        _send(pipe, answer if isinstance(answer, (dict, list)) else list(answer))  # type: ignore[arg-type]
                        continue
                    index = busy.pop(pipe)
                    # A fold that raised there is folded again here (from the goals' checkpoints): the same error as one job's.
                    rows = message[1] if message[0] == "folded" else fold_goals(reads, parts[index], events[index], None)
                    folded.update((goal.goal_id, goal) for goal in rows)
        except BaseException:
            # (a worker may be waiting for an answer, or still folding: its state is unknown, so every worker is ended, and
            # with it what it kept; the transaction rolls back)
            self.close()
            raise
        return [folded[goal] for goal in first_new]

    def _tell(self, message: tuple[str]) -> None:
        for _, pipe in self._workers:
            _send(pipe, message)


def _send(pipe: Connection, message: Any) -> None:
    try:
        pipe.send(message)
    except OSError as exc:  # (a broken pipe: the worker is gone)
        raise WorkerDied(DIED) from exc


def _received(pipe: Connection) -> Any:
    try:
        return pipe.recv()
    except (EOFError, OSError) as exc:
        raise WorkerDied(DIED) from exc


class _WriterReads:
    """:class:`materialize.FoldReads` asked of the writer, which reads in its transaction (a worker reads no database)."""

    def __init__(self, pipe: Connection) -> None:
        self.pipe = pipe

    def _ask(self, name: str, *args: Any) -> Any:
        self.pipe.send(("read", name, args))
        return self.pipe.recv()

    def events_by_id(self, event_ids: list[str]) -> dict[str, StoredEvent]:
        return self._ask("events_by_id", event_ids)  # type: ignore[no-any-return]

    def read_goal(self, goal_id: str, after_version: int, upto_position: int | None) -> list[StoredEvent]:
        return self._ask("read_goal", goal_id, after_version, upto_position)  # type: ignore[no-any-return]

    def events_before(self, goal_id: str, position: int) -> list[StoredEvent]:
        return self._ask("events_before", goal_id, position)  # type: ignore[no-any-return]

    def goal_row(self, goal_ids: list[str], projection: str, key: str) -> dict[str, dict[str, Any]]:
        return self._ask("goal_row", goal_ids, projection, key)  # type: ignore[no-any-return]

    def goal_events_of_kind(self, goal_ids: list[str], kind: str) -> dict[str, list[StoredEvent]]:
        return self._ask("goal_events_of_kind", goal_ids, kind)  # type: ignore[no-any-return]


def _serve(pipe: Connection, parent: int) -> None:
    """A fold worker: the writer's messages, one after the other, until it ends the worker (or ends)."""
    from benchledger.ledger.service.fold_jobs import exit_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a Ctrl-C reaches the whole process group: the parent handles it)
    exit_with_parent(parent)
    kept = KeptProjectors()
    reads = _WriterReads(pipe)
    while True:
        try:
            message = pipe.recv()
        except EOFError:
            return
        if message[0] == "begin":
            kept.begin()
        elif message[0] == "committed":
            kept.committed()
        else:
            _, first_new, new_events = message
            try:
                rows = fold_goals(reads, first_new, new_events, kept)
            except Exception:  # (the writer folds these goals again itself, to raise what one job raises)  # noqa: BLE001
                pipe.send(("failed",))
            else:
                pipe.send(("folded", rows))
