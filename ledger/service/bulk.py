"""``ingest-batches``: a file of many batches, validated first, then appended about a thousand artifacts a transaction.

Each line is a batch; every line is parsed, normalized and guarded before
anything is written (with ``jobs``, by worker processes a chunk of lines at a
time: ``service.bulk_jobs``), each valid batch spooled as normalized (with the
guard's receipt for it) to a temporary file, not memory, in file order; then the
spool is appended by this process alone in
transactions of about :data:`TRANSACTION_ARTIFACTS` artifacts, each one
:class:`Ingest` committed as it goes (its goals folded, with ``jobs``, by
``jobs`` - 1 worker processes beside it: ``service.fold_workers``): an interrupted run leaves whole batches,
and running it again appends only what is missing, because an artifact's
identity is its source hash within its goal (:func:`embedded_document`) and a
manifest's is its members. docs/performance.md ("Memory") states the bound.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from benchledger.errors import BenchledgerError, InvalidGoalId, WorkerDied
from benchledger.ledger.service.attempt_identity import AttemptPlacement, InvalidAttempt
from benchledger.ledger.service.bulk_jobs import in_order
from benchledger.ledger.service.bulk_report import BatchFileIngest
from benchledger.ledger.service.bulk_spool import SpooledBatch, spool_line, spooled_head, unspooled
from benchledger.ledger.service.goal_folds import FoldAgainHere, FoldsHere, GoalFolds
from benchledger.ledger.service.goal_names import GoalNames, new_goal_problem
from benchledger.ledger.service.ingest import Ingest, NothingToIngest, check_batch
from benchledger.ledger.service.ingest_outcome import IngestOutcome
from benchledger.ledger.service.intake.artifacts import BATCH_KIND_FIELD, repeated_in_batch, to_artifact
from benchledger.ledger.service.intake.files import (
    MAX_BATCH_ARTIFACTS,
    MAX_BATCH_BYTES,
    MAX_DOCUMENT_BYTES,
    InputFileError,
    embedded_document,
    not_json_lines,
    open_input,
    parse_document,
    read_lines,
)
from benchledger.ledger.storage.canonical import canonical_json
from benchledger.ledger.storage.event_records import NewEvent, validate_goal_id
from benchledger.ledger.storage.store import Store
from benchledger.projections.artifacts import KINDS, Artifact, IntakeError
from benchledger.projections.attempts import ATTEMPT_ID_SYNTAX, valid_attempt_id

# A transaction holds whole lines, up to this many artifacts or this many bytes of them (normalized, as spooled), whichever
# comes first. Each transaction writes its goals' current rows again (the lifecycle, the learning ledger): 500 artifacts a
# transaction rewrote a third of the rows a file makes, 1,000 a fifth (and its commit's checkpoint is paid half as often),
# which made the append about 10 % faster (benchmarks/README.md, "`ingest-batches --jobs`"). The bytes bound the memory a
# transaction of large documents holds (docs/performance.md, "Memory"); a line larger than it is a transaction of its own.
TRANSACTION_ARTIFACTS = 1000
TRANSACTION_BYTES = 32 * 1024 * 1024
# One ingest-batches line is a batch as large as a batch may be, whatever the way in.
MAX_BATCH_LINE_BYTES = MAX_BATCH_BYTES
BATCH_LINE_KEYS = {"goal_id", "kind", "artifacts", "source", "new_goal", "attempt"}
# What a line of it is, in the words of a refusal.
BATCH_LINE_SHAPE = 'one batch a line: {"goal_id": ..., "kind": ..., "artifacts": [...]}'
# What a line says to create a goal whose name is close to an existing goal's, or a file's (``service.goal_names``).
NEW_GOAL_HOW = 'add "new_goal": true to the line'
BATCHES_SOURCE = "cli ingest-batches"
# Events an append's statement holds: a transaction is appended a few chunks at a time, each handed to the folds while the
# next is appended (by the workers, with ``jobs``: the fold of one overlaps the append of the next). Few enough per
# transaction that little is left to fold once the last is appended, many enough that a statement carries many rows.
APPEND_CHUNK_ARTIFACTS = 100
# Lines validated together (by one worker, with ``jobs``): about this many bytes, the chunk ending after the line that
# reaches it. Large enough that handing a chunk over costs little beside validating it, small enough that a file of a
# few MiB makes chunks for every worker.
CHUNK_BYTES = 256 * 1024


# -- ingest-batches ------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchLine:
    """One validated line of an ``ingest-batches`` file."""

    goal_id: str
    artifacts: list[Artifact]
    source: str
    new_goal: bool = False
    attempt: str | None = None  # the attempt the batch is named into (``ingest --attempt``)
    taken_once: tuple[tuple[str, str], ...] = ()  # (artifacts[i], what it repeats): the same object again, left out of it


def _batch_line(line: bytes, where: str) -> BatchLine:
    """Parse and normalize one line (a batch); :class:`IntakeError` says why it cannot be ingested."""
    value = parse_document(line, where, limit=MAX_BATCH_LINE_BYTES).value
    if not isinstance(value, dict):
        raise IntakeError('a batch line must be a JSON object {"goal_id": ..., "kind": ..., "artifacts": [...]}')
    unknown = sorted(set(value) - BATCH_LINE_KEYS)
    if unknown:
        raise IntakeError(f"unknown field(s) {', '.join(map(repr, unknown))}; a batch line holds {', '.join(sorted(BATCH_LINE_KEYS))}")
    if "goal_id" not in value or "artifacts" not in value:
        raise IntakeError("a batch line needs goal_id and artifacts")
    try:
        goal_id = validate_goal_id(value["goal_id"])
    except InvalidGoalId as exc:
        raise IntakeError(str(exc)) from exc
    kind = value.get("kind")
    if kind is not None and kind not in KINDS:
        raise IntakeError(f"kind {kind!r} is not a kind; one of: {', '.join(KINDS)} (or null: detected from schema_version)")
    source = value.get("source", BATCHES_SOURCE)
    if not isinstance(source, str) or not source:
        raise IntakeError("source, when given, must be a non-empty string (the label stored with the batch's events)")
    new_goal = value.get("new_goal", False)
    if not isinstance(new_goal, bool):
        raise IntakeError("new_goal, when given, must be true or false (true: the goal is meant to be new, even if its name is close to another's or a file's)")
    attempt = value.get("attempt")
    if isinstance(attempt, int) and not isinstance(attempt, bool):
        attempt = str(attempt)  # ("attempt": 2 names attempt "2")
    if attempt is not None and not valid_attempt_id(attempt):
        raise IntakeError(f"attempt, when given, must be an attempt id ({ATTEMPT_ID_SYNTAX}), not {value['attempt']!r}")
    documents = value["artifacts"]
    if not isinstance(documents, list) or not documents:
        raise IntakeError("artifacts must be a non-empty list of artifact objects (an empty batch is not kept)")
    if len(documents) > MAX_BATCH_ARTIFACTS:
        raise IntakeError(
            f"the line holds {len(documents)} artifacts, more than {MAX_BATCH_ARTIFACTS}, the limit of one batch; "
            f"split it into lines of at most {MAX_BATCH_ARTIFACTS}"
        )
    artifacts = []
    taken_once = []  # (the same object again: taken once, as ingest takes a folder's copies of a run)
    first_at: dict[str, str] = {}  # (each artifact's source hash: where the line lists it first)
    for index, document in enumerate(documents):
        at = f"artifacts[{index}]"
        # (the document's canonical JSON is as long as its compact JSON: sorting keys moves bytes, adds none)
        body = canonical_json(document)
        size = len(body.encode())
        if size > MAX_DOCUMENT_BYTES:
            raise IntakeError(f"{at} is {size} bytes, larger than the {MAX_DOCUMENT_BYTES}-byte limit of one document")
        embedded = embedded_document(f"{where} {at}", document, body)
        try:
            artifact = to_artifact(embedded, kind, BATCH_KIND_FIELD)
        except IntakeError as exc:
            raise IntakeError(f"{at}: {exc}") from exc
        repeated = repeated_in_batch(first_at, at, embedded.sha256)
        if repeated is None:
            artifacts.append(artifact)
        else:
            taken_once.append((at, repeated))
    return BatchLine(goal_id, artifacts, source, new_goal, attempt, tuple(taken_once))


class _Transactions:
    """The spool read back as the append's transactions: lines in file order, at most :data:`TRANSACTION_ARTIFACTS` artifacts
    and :data:`TRANSACTION_BYTES` a transaction (whole lines: a larger line is one alone), each line read and its events
    built (:func:`unspooled`) before its transaction begins.

    :meth:`prepare` readies the next transaction a line a call: with ``jobs``, the writer calls it while it waits for the
    fold workers' rows of the transaction it is about to commit (``FoldWorkers``' ``meanwhile``), so it is never idle
    then; :meth:`take` readies what is left and hands the transaction over. What the preparing raises is raised by the
    :meth:`take` that needs that line, after the transaction being committed meanwhile has committed: what is
    committed, and what is raised, are what one job gives, where the preparing waits for the take.
    """

    def __init__(self, spool: BinaryIO) -> None:
        self._lines = iter(spool)
        self._next: list[SpooledBatch] = []
        self._held = self._held_bytes = 0  # (the artifacts of _next, and their spool lines' bytes)
        self._after: SpooledBatch | None = None  # (the line read that begins the transaction after the next)
        self._read = False  # (every line is read)
        self._failed: Exception | None = None

    def prepare(self) -> bool:
        """One more line of the next transaction read and built; ``False`` once that transaction is whole (or reading failed)."""
        if self._after is not None or self._read or self._failed is not None:
            return False
        try:
            line = next(self._lines, None)
            batch = None if line is None else unspooled(line)
        except Exception as exc:  # (raised by the take that needs the line: see the class)  # noqa: BLE001
            self._failed = exc
            return False
        if batch is None:
            self._read = True
            return False
        full = self._held + len(batch.artifacts) > TRANSACTION_ARTIFACTS or self._held_bytes + batch.size > TRANSACTION_BYTES
        if self._next and full:  # (by size only: each batch keeps its own source)
            self._after = batch
            return False
        self._next.append(batch)
        self._held += len(batch.artifacts)
        self._held_bytes += batch.size
        return True

    def take(self) -> tuple[list[SpooledBatch], int] | None:
        """The next transaction's batches and their artifacts (``None``: the spool is appended)."""
        while self.prepare():
            pass
        if self._failed is not None:
            raise self._failed
        taken, self._next, self._held, self._held_bytes = (self._next, self._held), [], 0, 0
        if self._after is not None:
            self._next, self._held, self._held_bytes, self._after = [self._after], len(self._after.artifacts), self._after.size, None
        return taken if taken[0] else None


@dataclass(frozen=True)
class _CheckedLine:
    """What validating one line found (:func:`_checked_lines`): why it cannot be read, or its batch's goal, size, what the
    store's guard refuses in it and, when nothing, its spool line (:func:`spool_line`)."""

    number: int
    refusal: str | None = None
    goal_id: str = ""
    new_goal: bool = False
    artifacts: int = 0
    problems: tuple[str, ...] = ()
    spooled: bytes | None = None
    attempt: str | None = None
    taken_once: tuple[tuple[str, str], ...] = ()


def _checked_lines(name: str, lines: Sequence[tuple[int, bytes]]) -> list[_CheckedLine]:
    """Each of ``lines`` parsed, normalized and guarded (:func:`_batch_line`, :func:`check_batch`): needs nothing but the
    lines, so it runs in a worker process with ``jobs`` (``service.bulk_jobs``), in this one otherwise."""
    checked = []
    for number, line in lines:
        try:
            batch = _batch_line(line, f"{name}:{number}")
        except InputFileError as exc:
            checked.append(_CheckedLine(number, exc.reason))
            continue
        except IntakeError as exc:
            checked.append(_CheckedLine(number, str(exc)))
            continue
        judged = check_batch(batch.goal_id, batch.artifacts, source=batch.source, attempt=batch.attempt)
        # (the report names the line: the place within it is enough)
        problems = tuple(f"{place.removeprefix(f'{name}:{number} ')}: {problem}" for place, problem in judged.problems)
        spooled = None if judged.receipt is None else spool_line(batch, judged.members, judged.receipt, number)
        checked.append(
            _CheckedLine(number, None, batch.goal_id, batch.new_goal, len(batch.artifacts), problems, spooled, batch.attempt, batch.taken_once)
        )
    return checked


def _chunks(lines: Iterable[tuple[int, bytes]]) -> Iterator[list[tuple[int, bytes]]]:
    """``lines`` in chunks of about :data:`CHUNK_BYTES`, in order."""
    chunk: list[tuple[int, bytes]] = []
    size = 0
    for number, line in lines:
        chunk.append((number, line))
        size += len(line)
        if size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _validate(
    path: str, name: str, report: BatchFileIngest, spool: BinaryIO, goals: GoalNames, held: set[str], jobs: int, *, only: set[str] | None = None,
) -> tuple[set[str], set[str]]:
    """Pass 1: every line parsed, normalized and guarded (by ``jobs`` worker processes); each valid batch is written to
    ``spool`` as normalized (:func:`spool_line`), in file order. Returns the goals of the valid lines that name an attempt,
    whose attempts :func:`_check_attempts` checks next, and those of them a line left out of the spool before (below).

    ``goals`` are the ledger's goal names and ``held`` their set: a line creating a goal whose name is a file's, or close to one
    of them, or to a goal an earlier line creates, is refused here (as :class:`Ingest` would refuse it in its
    transaction, after the earlier transactions committed), unless it says ``"new_goal": true``. What is found is
    reported line after line, whatever ``jobs``: the workers' answers come back in file order. After a refusal nothing
    will be appended: every line is still validated (each bad one is listed), but only what the check of the attempts
    reads is spooled, the lines of goals a line names an attempt of by then (a large file refused at its first lines was
    written whole to the spool). A goal whose attempt is named after some of its lines were left out is returned apart:
    :func:`ingest_batch_file` reads the file again for it, spooling the lines of ``only`` (those goals) alone.
    """
    named: set[str] = set()
    left_out: set[str] = set()  # goals a valid line of which was not spooled
    unchecked: set[str] = set()  # goals named after that
    try:
        with open_input(path, name) as (handle, what):
            lines = read_lines(handle, name, limit=None, line_limit=MAX_BATCH_LINE_BYTES, what=what)
            for chunk in in_order(functools.partial(_checked_lines, name), _chunks(lines), jobs=jobs):
                for line in chunk:
                    if line.refusal is not None:
                        report.refuse(line.number, line.refusal)
                        continue
                    refused = bool(line.problems)
                    if line.goal_id not in held:
                        problem = None if line.new_goal else new_goal_problem(line.goal_id, goals, how_meant=NEW_GOAL_HOW)
                        if problem:
                            report.refuse(line.number, problem)
                            refused = True
                        goals.add(line.goal_id)
                        held.add(line.goal_id)
                    for problem in line.problems:
                        report.refuse(line.number, problem)
                    report.batches += 1
                    report.artifacts += line.artifacts
                    report.take_once(line.number, line.taken_once)
                    if line.spooled is not None and not refused:
                        if line.attempt is not None:
                            named.add(line.goal_id)
                            unchecked |= {line.goal_id} & left_out
                        kept = only is None or line.goal_id in only
                        if only is None and not report.ok:  # (refused: what the check of the attempts reads, alone)
                            kept = line.goal_id in named
                        if kept:
                            spool.write(line.spooled)
                        else:
                            left_out.add(line.goal_id)
    except InputFileError as exc:
        report.refuse(None, str(exc))
    return named, unchecked


def _check_attempts(ledger: Store, spool: BinaryIO, named: set[str], report: BatchFileIngest) -> None:
    """Pass 1 continued: the attempts the lines name (``"attempt"``), checked as the append checks them, before it.

    A line may name its goal's next attempt (which opens it) or one the goal has, not one past the next: the rule of
    ``ingest --attempt``, which the append applies to each transaction (:class:`AttemptPlacement`, whose check fired only
    there, after the earlier transactions committed). So the same :class:`AttemptPlacement` is run here over the spooled
    lines in file order, in a read transaction: each goal's attempts as the ledger holds them, then as the file's
    earlier lines leave them (a line opening attempt 1 of a new goal, or whose launch opens the next attempt, lets a
    later line name the number after it; an artifact the ledger or an earlier line holds already opens nothing, as
    in the append). Only the goals of ``named`` (those a line names an attempt of) are placed: a file naming no attempt
    costs nothing more, and what is held (the ids of those goals' artifacts placed) follows them alone. A line refused
    here is left out of what the later lines are checked against, as it will not be appended.
    """
    refusals: list[tuple[int, str]] = []
    spool.seek(0)
    with ledger.transaction() as tx:
        placement = AttemptPlacement(tx)
        unnamed: list[tuple[str, NewEvent, bool, str | None]] = []  # (placed a chunk at a time: none can be refused)
        placed: set[str] = set()  # goals the file's earlier lines place artifacts in
        for raw in spool:
            goal_id, attempt = spooled_head(raw)
            if goal_id not in named:
                continue
            batch = unspooled(raw)
            appends = [(goal_id, new, True, attempt) for new in batch.members]
            if attempt is None:
                unnamed += appends
                if len(unnamed) >= APPEND_CHUNK_ARTIFACTS:
                    placement.events(unnamed)
                    unnamed = []
            else:
                if unnamed:
                    placement.events(unnamed)
                    unnamed = []
                try:
                    placement.events(appends)  # (refused at its first artifact, before any is placed)
                except InvalidAttempt as exc:
                    counted = " (counting what the file's earlier lines open)" if goal_id in placed else ""
                    refusals.append((batch.line, str(exc).removesuffix("; nothing was written") + counted))
                    continue
            placed.add(goal_id)
    report.refuse_lines(refusals)


def ingest_batch_file(
    ledger: Store,
    path: str,
    *,
    name: str | None = None,
    started: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
) -> BatchFileIngest:
    """``ingest-batches PATH``: validate every line, then append the batches in transactions of about a thousand artifacts.

    Any invalid line writes nothing (the report lists the first 20 and counts
    them all; messages call the file ``name``, by default ``path``). The file
    is read once: what validation normalized is spooled to a temporary file
    and appended from there, in file order, so what is appended is what was
    validated, whatever happens to the file meanwhile. ``started`` is called
    with the number of artifacts once they are validated, ``progress`` with
    the number each committed transaction held. ``jobs`` worker processes
    validate the lines, then ``jobs`` - 1 others fold the goals of what this
    one appends (the same report, spool, appends and rows as one job: the
    append is this process's alone, in file order).
    """
    name = name or path
    report = BatchFileIngest(name)
    refused = not_json_lines(path, what="an ingest-batches file", shape=BATCH_LINE_SHAPE, limit=MAX_BATCH_LINE_BYTES)
    if refused is not None:  # (one refusal, not a problem a line of it)
        report.refuse(None, f"{name}: {refused}")
        return report
    with tempfile.TemporaryFile(prefix="benchledger-batches-") as spool:
        try:
            existing = [head["goal_id"] for head in ledger.heads()]
            named, unchecked = _validate(path, name, report, spool, GoalNames(existing), set(existing), jobs)
            if unchecked:  # (the file is refused: read again, for the attempts alone, spooling the lines of the goals they name)
                spool.seek(0)
                spool.truncate()
                _validate(path, name, BatchFileIngest(name), spool, GoalNames(existing), set(existing), jobs, only=named)
            if named:
                _check_attempts(ledger, spool, named, report)
        except OSError as exc:  # (the input's own read errors are refusals: this is the spool's)
            raise BenchledgerError(
                f"{name}: cannot write the validated batches to a temporary file ({exc.strerror or exc}); nothing was "
                "written (TMPDIR names where such files go)"
            ) from exc
        if not report.ok:
            return report
        if not report.batches:
            raise NothingToIngest(f"{name}: no batch to ingest (one JSON object a line); nothing was written")
        if started is not None:
            started(report.artifacts)
        spool.seek(0)
        transactions = _Transactions(spool)
        with _goal_folds(jobs if report.batches > 1 else 1, transactions.prepare) as folds:
            _append(ledger, transactions, folds, report, progress)
    return report


def _said_while_appending(said: str, batches: Sequence[SpooledBatch], report: BatchFileIngest, *, after: int = 0) -> str:
    """What an error the transaction of ``batches`` raised says (``said``), with the lines it holds and what the file's
    earlier transactions kept: its "nothing was written" is that transaction's alone once one before it committed.
    (No ``batches``: the next transaction's were being read, the lines after line ``after``.)

    For what the validation cannot foresee: another writer meanwhile creating a goal one typo away from a line's,
    holding the SQLite lock past the retry budget; the attempts of a goal whose checkpoint did not read while validating
    (the first transaction's fold writes it); an interruption (Ctrl-C, or SIGTERM on the command line).
    """
    first, last = (batches[0].line, batches[-1].line) if batches else (after + 1, None)
    where = f"line {first}" if first == last else f"lines {first}-{last}" if last else f"the lines from line {first}"
    if report.transactions:
        said = said.replace("nothing was written", "this transaction wrote nothing").replace("Nothing was written", "This transaction wrote nothing")
        said += (
            f"; the {report.transactions} transaction(s) before it committed {report.batches_appended} batch(es) of the lines "
            f"before line {first}, which stay: running the file again appends only what is missing"
        )
    return f"{report.path}: while appending {where}: {said}"


def _goal_folds(jobs: int, meanwhile: Callable[[], bool]) -> contextlib.AbstractContextManager[GoalFolds]:
    """Where the append's goals are folded: with ``jobs`` > 1, by ``jobs`` - 1 worker processes beside this one, the
    writer, so that ``jobs`` processes are busy as in the validation (``service.fold_workers``: the writer calls
    ``meanwhile`` while it waits for their rows); else here. A writer and as many folders as cores made three busy
    processes on two cores, the writer (the append's critical path) sharing a core; on two cores one fold worker beside
    it made ``--jobs 2`` about 10 % faster (benchmarks/README.md). Either way a goal's fold is kept across transactions: a
    goal whose batches span many is folded once, not resumed in each."""
    if jobs > 1 and hasattr(os, "fork"):
        from benchledger.ledger.service.fold_workers import FoldWorkers

        return FoldWorkers(jobs - 1, meanwhile)
    return contextlib.nullcontext(FoldsHere())


def _transaction(ledger: Store, batches: list[SpooledBatch], folds: GoalFolds) -> Ingest:
    unit = Ingest(ledger, BATCHES_SOURCE, receipts={b.receipt for b in batches}, folds=folds, chunk_artifacts=APPEND_CHUNK_ARTIFACTS)
    for batch in batches:
        unit.add(batch.goal_id, batch.artifacts, source=batch.source, new_goal=batch.new_goal, attempt=batch.attempt, members=batch.members)
    return unit


def _append(ledger: Store, transactions: _Transactions, folds: GoalFolds, report: BatchFileIngest, progress: Callable[[int], None] | None) -> None:
    """Pass 2: the spool appended in file order, a transaction at a time (:class:`_Transactions`). Interrupted (Ctrl-C, or
    SIGTERM on the command line), the interruption's text says what the transactions committed keep, as an error's does."""
    batches: list[SpooledBatch] = []
    unit: Ingest | None = None
    committed_up_to = 0  # (the file's line the committed transactions end at)
    try:
        while (taken := transactions.take()) is not None:
            batches, held = taken
            try:
                try:
                    unit = _transaction(ledger, batches, folds)
                    outcome = unit.commit()
                except FoldAgainHere:  # (a fold raised in a worker: rolled back, and written again folded here, as one job does)
                    unit = _transaction(ledger, batches, FoldsHere())
                    outcome = unit.commit()
                outcome.raise_if_refused()  # (each batch passed the guard: its receipt says so)
            except WorkerDied:
                raise  # (it says what the transactions before it kept)
            except BenchledgerError as exc:  # (the same error, its type and exit status kept, said in the file's terms)
                exc.args = (_said_while_appending(str(exc), batches, report), *exc.args[1:])
                raise
            _count(outcome, report)
            unit, batches, committed_up_to = None, [], batches[-1].line
            if progress is not None:
                progress(held)
    except KeyboardInterrupt as interruption:
        if unit is not None and unit.outcome is not None:  # (it came as the transaction committed: that one stays too)
            _count(unit.outcome, report)
            batches, committed_up_to = [], batches[-1].line
        interruption.args = (_said_while_appending("nothing was written", batches, report, after=committed_up_to),)
        raise


def _count(outcome: IngestOutcome, report: BatchFileIngest) -> None:
    """A committed transaction's outcome counted in ``report``."""
    batches_appended = sum(b.batch.status == "appended" for b in outcome.batches)
    report.transactions += bool(outcome.appended_count or batches_appended)  # (one of duplicates alone wrote nothing)
    report.appended += outcome.appended_count
    report.duplicates += outcome.duplicate_count
    report.batches_appended += batches_appended
    report.archived_goals.update(outcome.archived_goals)
