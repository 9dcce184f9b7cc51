"""``ingest-batches --jobs N``: each transaction's goals folded by N worker processes, a goal always by the same one.

As the writer appends a transaction, a chunk of events at a time (``Ingest``
given these :class:`FoldWorkers` as its folds), it hands each worker the
chunk's events of the goals it owns (by a hash of the goal id) and goes on
appending; the worker feeds them to its :class:`goal_folds.TransactionFolds`,
the code the writer runs itself with one job (``FoldsHere``). Once the last
chunk is appended the writer asks every worker for its goals' rows and commits
once it has written them: only the last chunk's fold, and the rows, are left to
wait for. A worker hands its rows over a few goals at a time, as it makes them,
and the writer writes each piece as it comes (in its transaction, while the
workers make the next); between pieces it does what it is given to do meanwhile
(``bulk``: the next transaction's lines read and their events built), so that
it waits only once that is done. A worker keeps its
goals' projectors across transactions (:class:`KeptProjectors`), so a goal
spread over a file is folded once, as it is with one job; the writer tells it
when a transaction begins (an attempt that did not commit is forgotten; one
given up mid-way ends the workers, which start again) and when it committed.

A worker never reads the database: its snapshot would lack the transaction's
events. What a fold reads (a checkpoint, the events it names, a comparison-batch
row) it asks of the writer, which reads it in its transaction
(:class:`goal_folds.TransactionReads`) between its chunks, up to the events
handed over; so a worker's fold reads what the writer's own would, and makes
the same rows. The writer's messages are pickled by it and written by a thread
per worker, so that it never waits for a worker still folding the chunk before.

A fold that raises in a worker ends the transaction's attempt
(:class:`goal_folds.FoldAgainHere`: other goals' rows may be written already,
and a fold again would read them), and the writer writes it again with its goals
folded in its own process (as with one job), so the error is the one a single
job gives. A worker that dies raises :class:`WorkerDied` and the transaction rolls
back. Workers are forked, as ``service.bulk_jobs``' are, ignore Ctrl-C and end
with their parent.
"""

from __future__ import annotations

import os
import pickle
import queue
import threading
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchledger.errors import WorkerDied
from benchledger.ledger.service.fold_jobs import become_worker, collector_frozen, interruptions_held
from benchledger.ledger.service.goal_folds import (
    READS,
    FoldAgainHere,
    GoalRows,
    KeptProjectors,
    TransactionFolds,
    TransactionReads,
)
from benchledger.ledger.service.materialize import write_goal_rows
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.transaction import Transaction

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

# Goals whose rows a worker hands over together: a piece the writer writes while the worker makes the next.
GOALS_PER_PIECE = 16
DIED = (
    "an ingest-batches --jobs worker process ended abruptly (killed, or out of memory): the transaction it was folding "
    "was rolled back, those committed before it hold whole batches; run the command again to append the rest (with fewer "
    "--jobs if memory is short)"
)


def owner(goal_id: str, jobs: int) -> int:
    """The worker that folds ``goal_id`` (the same in every transaction: it keeps the goal's projector)."""
    return zlib.crc32(goal_id.encode()) % jobs


class FoldWorkers:
    """:class:`goal_folds.GoalFolds` by ``jobs`` forked worker processes (a context manager: leaving it ends them).

    ``meanwhile``: what the writer does, a step a call, while it waits for the rows (until a call returns ``False``:
    nothing more to do now); it must read and write no database (the writer's transaction is the one being committed),
    and what it raises ends the transaction.
    """

    def __init__(self, jobs: int, meanwhile: Callable[[], bool] | None = None) -> None:
        self.jobs, self.meanwhile = jobs, meanwhile
        self._workers: list[tuple[BaseProcess, Connection]] = []
        # Each worker's messages are sent by a thread of their own, so that the writer does not wait while a worker still
        # folds the last chunk before reading the next (a chunk is larger than a pipe holds): it appends the next meanwhile.
        self._senders: list[tuple[queue.SimpleQueue[bytes | None], threading.Thread]] = []
        self._adding: set[int] = set()  # (the workers given chunks of this transaction, not yet asked to finish)
        self._start()

    def __enter__(self) -> FoldWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        with collector_frozen():  # (once for every fork: it counts the frozen objects)
            for _ in range(self.jobs):  # (every worker forked before a sender thread starts: a fork copies no thread)
                here, there = context.Pipe()
                process = context.Process(target=_serve, args=(there, os.getpid()), daemon=True, name="benchledger-fold")
                with interruptions_held():
                    process.start()
                there.close()
                self._workers.append((process, here))
        for _, pipe in self._workers:
            outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
            sender = threading.Thread(target=_send_all, args=(pipe, outbox), daemon=True, name="benchledger-fold-sender")
            sender.start()
            self._senders.append((outbox, sender))

    def close(self) -> None:
        for outbox, _ in self._senders:
            outbox.put(None)
        for process, _ in self._workers:
            process.kill()  # (a worker holds nothing to save: what it keeps is the writer's to ask for again)
            process.join()
        for _, sender in self._senders:
            sender.join()  # (its worker is gone: a send it was blocked in fails)
        for _, pipe in self._workers:
            pipe.close()
        self._workers, self._senders, self._adding = [], [], set()

    def begin(self) -> None:
        if self._adding:  # (an attempt that did not finish: a worker may still fold it, or wait for a read's answer)
            self.close()
        if not self._workers:
            self._start()
        self._tell(("begin",))

    def committed(self) -> None:
        self._tell(("committed",))

    def appended(self, tx: Transaction, first_new: Mapping[str, int], events: Sequence[StoredEvent]) -> None:
        parts: list[dict[str, int]] = [{} for _ in self._workers]
        for goal, emit_from in first_new.items():
            parts[owner(goal, self.jobs)][goal] = emit_from
        shares: list[list[StoredEvent]] = [[] for _ in self._workers]
        for event in events:
            shares[owner(event.goal_id, self.jobs)].append(event)
        try:
            for index, share in enumerate(shares):
                if share:
                    self._send(index, ("add", parts[index], share))
                    self._adding.add(index)
            self._answer(TransactionReads(tx), {}, block=False)
        except BaseException:
            self.close()  # (the transaction rolls back: every worker is ended, with what it kept)
            raise

    def fold(self, tx: Transaction, first_new: Mapping[str, int], new_events: Sequence[StoredEvent] | None) -> list[GoalRows]:
        reads = TransactionReads(tx)
        finishing: dict[Any, int | None] = {}
        try:
            for index in sorted(self._adding):
                self._send(index, ("finish",))
                finishing[self._workers[index][1]] = index
            self._adding = set()
            failed = False
            while finishing:
                failed = None in self._answer(reads, finishing, block=True) or failed
        except BaseException:
            self.close()
            raise
        if failed:  # (a fold raised in a worker: the transaction again, folded in the writer, raises what one job raises)
            raise FoldAgainHere
        return []  # (every goal's rows are written: _answer wrote each piece as it came)

    def _answer(self, reads: TransactionReads, finishing: dict[Any, int | None], *, block: bool) -> list[list[GoalRows] | None]:
        """The workers' reads answered (all that are asked for now, or, ``block``, until one of ``finishing`` answers: writing
        the pieces of rows that come, doing :attr:`meanwhile` while none comes, then waiting); returns, for each that
        answered, its last piece of rows, written (``None``: its fold raised), and takes it out of ``finishing``."""
        from multiprocessing.connection import wait

        answered: list[list[GoalRows] | None] = []
        pipes = [pipe for _, pipe in self._workers]
        busy = block and self.meanwhile is not None
        while True:
            ready = wait(pipes, timeout=None if block and not busy else 0)
            for pipe in ready:
                index = pipes.index(pipe)  # type: ignore[arg-type]
                message = _received(pipe)  # type: ignore[arg-type]
                if message[0] == "read":
                    _, name, args = message
                    assert name in READS  # (a worker asks only for what a fold reads)
                    answer = getattr(reads, name)(*args)
                    self._send(index, ("answer", answer if isinstance(answer, (dict, list)) else list(answer)))
                    continue
                assert pipe in finishing, message  # (a worker speaks unasked only to read)
                if message[0] in ("rows", "folded"):
                    write_goal_rows(reads.tx, message[1])
                if message[0] == "rows":
                    continue
                del finishing[pipe]
                answered.append(message[1] if message[0] == "folded" else None)
            if answered or not block:
                return answered
            if not ready:  # (nothing to answer yet: a step of what the writer does meanwhile)
                busy = self.meanwhile is not None and self.meanwhile()

    def _tell(self, message: tuple[str]) -> None:
        for index in range(len(self._workers)):
            self._send(index, message)

    def _send(self, index: int, message: Any) -> None:
        """``message`` to worker ``index``, pickled here, sent by its thread (in order)."""
        if not self._senders[index][1].is_alive():  # (its send failed: the worker is gone)
            raise WorkerDied(DIED)
        self._senders[index][0].put(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _send_all(pipe: Connection, outbox: queue.SimpleQueue[bytes | None]) -> None:
    """A worker's sender thread: what the writer put in ``outbox``, in order, until ``None`` (or the worker is gone)."""
    while (message := outbox.get()) is not None:
        try:
            pipe.send_bytes(message)
        except OSError:  # (the worker died: the writer finds its pipe ended when it reads it)
            return


def _received(pipe: Connection) -> Any:
    try:
        return pipe.recv()
    except (EOFError, OSError) as exc:
        raise WorkerDied(DIED) from exc


class _WriterReads:
    """:class:`goal_folds.FoldReads` asked of the writer, which reads in its transaction (a worker reads no database); the writer's
    messages that come before the answer (the next chunk) wait in :attr:`backlog`."""

    def __init__(self, pipe: Connection) -> None:
        self.pipe = pipe
        self.backlog: deque[Any] = deque()

    def next_message(self) -> Any:
        return self.backlog.popleft() if self.backlog else self.pipe.recv()

    def _ask(self, name: str, *args: Any) -> Any:
        self.pipe.send(("read", name, args))
        while True:
            message = self.pipe.recv()
            if message[0] == "answer":
                return message[1]
            self.backlog.append(message)

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
    become_worker(parent)  # (Ctrl-C ignored: it reaches the whole process group, and the parent handles it)
    kept = KeptProjectors()
    reads = _WriterReads(pipe)
    folds: TransactionFolds | None = None
    failed = False
    while True:
        try:
            message = reads.next_message()
        except EOFError:
            return
        if message[0] == "begin":
            kept.begin()
            folds, failed = None, False
        elif message[0] == "committed":
            kept.committed()
        elif message[0] == "add" and not failed:
            folds = folds or TransactionFolds(reads, kept)
            try:
                folds.add(message[1], message[2])
            except Exception:  # (the writer writes the transaction again, folded itself: FoldAgainHere)  # noqa: BLE001
                failed = True
        elif message[0] == "finish":
            pipe.send(_finished(pipe, None if failed else folds))
            folds, failed = None, False


def _finished(pipe: Connection, folds: TransactionFolds | None) -> tuple[Any, ...]:
    """A worker's rows of the transaction handed over a piece at a time (each written by the writer while this makes the
    next); returns the last piece, the answer to ``finish`` (``("failed",)``: a fold raised, or raises now)."""
    if folds is None:
        return ("failed",)
    piece: list[GoalRows] = []
    try:
        for goal in folds.finished():
            piece.append(goal)
            if len(piece) == GOALS_PER_PIECE:
                pipe.send(("rows", piece))
                piece = []
    except Exception:  # (the writer writes the transaction again, folded itself: FoldAgainHere)  # noqa: BLE001
        return ("failed",)
    return ("folded", piece)
