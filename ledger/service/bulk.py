"""Intake whose memory does not grow with its input's bytes: streamed ``ingest`` and ``ingest-batches``.

Two promises, two shapes (README "Memory" states the bounds):

* :func:`ingest_files` (``ingest``, ``ingest --batch-per-directory``) is all or
  nothing: one write transaction into which the documents are read, normalized
  and appended :data:`CHUNK_ARTIFACTS` at a time, each chunk through the store's
  guard; nothing commits until every document is read and valid. What is held
  is one chunk, plus a small :class:`MemberOutcome` per document for the report
  and the batch manifest (and the projection fold of the goal at the end,
  ``materialize_goals``).
* :func:`ingest_batch_file` (``ingest-batches``) validates every line first,
  spooling each batch as normalized (and the guard's receipt for it) to a
  temporary file, not memory; then it appends the spool in transactions of
  about :data:`TRANSACTION_ARTIFACTS` artifacts (:func:`ingest_many`), each
  committed as it goes: an interrupted run leaves
  whole batches, and running it again appends only what is missing, because an
  artifact's identity is its source hash within its goal
  (:func:`embedded_document`) and a manifest's is its members.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from benchledger.errors import SHOWN_PROBLEMS, BenchledgerError, InvalidGoalId
from benchledger.ledger.service.ingest import (
    BatchRequest,
    NothingToIngest,
    batch_events,
    grouped_before,
    ingest_many,
    manifest_event,
    manifest_member,
    member_event,
    members_as_stored,
)
from benchledger.ledger.service.intake.artifacts import (
    BATCH_KIND_FIELD,
    Refused,
    read_artifacts,
    refuse_contradicted,
    to_artifact,
)
from benchledger.ledger.service.intake.files import (
    MAX_DOCUMENT_BYTES,
    MAX_NDJSON_BYTES,
    InputFileError,
    directory_files,
    embedded_document,
    open_regular_file,
    parse_document,
    read_lines,
)
from benchledger.ledger.service.materialize import KeptProjectors, materialize_goals
from benchledger.ledger.storage.append import guard_receipt, unstorable_problems
from benchledger.ledger.storage.canonical import canonical_json
from benchledger.ledger.storage.event_records import Appended, NewEvent, StreamAppend, validate_goal_id
from benchledger.ledger.storage.guard import UnstorableContent
from benchledger.ledger.storage.store import ChunkedAppend, Store
from benchledger.projections.artifacts import KINDS, Artifact, IntakeError

# Artifacts read before they are appended (ingest) or per transaction (ingest-batches):
# large enough that a statement carries many rows, small enough that a chunk of 4 MiB
# documents stays well under the memory bound.
CHUNK_ARTIFACTS = 500
TRANSACTION_ARTIFACTS = 500
# One ingest-batches line is a batch as large as one NDJSON ingest may be.
MAX_BATCH_LINE_BYTES = MAX_NDJSON_BYTES
BATCH_LINE_KEYS = {"goal_id", "kind", "artifacts", "source"}
BATCHES_SOURCE = "cli ingest-batches"


@dataclass(frozen=True, slots=True)
class MemberOutcome:
    """What an ingest reports of one event (no payload: held per document, it must stay small)."""

    event_id: str
    position: int
    stream_version: int
    kind: str
    schema_version: str | None
    status: str
    source: str | None
    role: str | None = None

    @classmethod
    def of(cls, appended: Appended, source: str | None, role: str | None = None) -> MemberOutcome:
        e = appended.event
        return cls(e.event_id, e.position, e.stream_version, e.kind, e.schema_version, appended.status, source, role)


@dataclass(frozen=True)
class DocumentBatch:
    """One batch to read: the goal, the files holding its documents (in order), and what to call it in a report."""

    goal_id: str
    files: Sequence[str]
    label: str | None = None


@dataclass
class BatchOutcome:
    goal_id: str
    label: str | None
    members: list[MemberOutcome] = field(default_factory=list)
    batch: MemberOutcome | None = None

    @property
    def appended_count(self) -> int:
        return sum(1 for m in self.members if m.status == "appended")

    @property
    def duplicate_count(self) -> int:
        return sum(1 for m in self.members if m.status == "duplicate")


@dataclass
class FilesIngest:
    """The outcome of :func:`ingest_files`: the batches written (or that would be), or every refusal."""

    batches: list[BatchOutcome]
    errors: list[tuple[str, str]]
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors


class _RollBack(Exception):
    """Raised inside the write transaction to roll it back (refused input, dry run) with what was found."""


class _ChunkWriter:
    """Appends the members of the batches being read, a chunk at a time, inside one transaction.

    After the first refusal nothing more is appended (the transaction will roll
    back), but every later chunk is still checked by the store's guard, so the
    report names every problem, as an ingest that held everything would.
    """

    def __init__(self, session: ChunkedAppend, source: str) -> None:
        self.session, self.source = session, source
        self.errors: list[tuple[str, str]] = []
        self.first_new: dict[str, int] = {}
        self._pending: list[tuple[BatchOutcome, NewEvent, Artifact | None]] = []

    def add_member(self, batch: BatchOutcome, artifact: Artifact) -> None:
        self._pending.append((batch, member_event(artifact), artifact))
        if len(self._pending) >= CHUNK_ARTIFACTS:
            self.flush()

    def end_batch(self, batch: BatchOutcome) -> None:
        """Queue the batch's manifest, naming each member by the id it is stored under (an older ledger's, for a duplicate)."""
        self.flush()
        if batch.members and not self.errors:
            if all(m.status == "duplicate" for m in batch.members):
                earlier = grouped_before(self.session.tx, batch.goal_id, [m.event_id for m in batch.members])
                if earlier is not None:
                    batch.batch = MemberOutcome.of(Appended(earlier, "duplicate"), None)
                    return
            members = [manifest_member(m.event_id, m.kind, m.role) for m in batch.members]
            self._pending.append((batch, manifest_event(members), None))

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        outcomes = _append_or_check(self.session, _runs_by_batch(pending), self.source, self.errors)
        if outcomes is not None:
            self._record([a for outcome in outcomes for a in outcome], pending)

    def _record(self, appended: list[Appended], pending: list[tuple[BatchOutcome, NewEvent, Artifact | None]]) -> None:
        for outcome, (batch, _new, artifact) in zip(appended, pending):
            if outcome.status == "appended":
                goal = batch.goal_id
                self.first_new[goal] = min(self.first_new.get(goal, outcome.event.position), outcome.event.position)
            if artifact is None:
                batch.batch = MemberOutcome.of(outcome, None)
            else:
                batch.members.append(MemberOutcome.of(outcome, artifact.origin, artifact.role))


def _append_or_check(
    session: ChunkedAppend, appends: Sequence[StreamAppend], source: str, errors: list[tuple[str, str]]
) -> list[list[Appended]] | None:
    """Append a chunk unless an earlier one was refused; a refused chunk (or any after it) only adds its problems to ``errors``."""
    if errors:
        errors.extend(unstorable_problems(appends, source=source))
        return None
    try:
        return session.append(appends, source=source)
    except UnstorableContent as refused:
        errors.extend(refused.problems)
        return None


def append_in_chunks(ledger: Store, goal_id: str, new_events: Sequence[NewEvent], *, source: str, dry_run: bool = False) -> dict[str, int]:
    """:func:`append_projected` for one goal's many events: :data:`CHUNK_ARTIFACTS` at a time, in one transaction.

    Returns how many were ``appended`` and how many were ``duplicate``; what
    the store's guard refuses raises :class:`UnstorableContent` listing every
    problem of every chunk, nothing written (``import-loopx``).
    """
    (request,) = members_as_stored(ledger, [StreamAppend(goal_id, new_events)])
    counts = {"appended": 0, "duplicate": 0}

    def work(session: ChunkedAppend) -> None:
        counts.update(appended=0, duplicate=0)
        errors: list[tuple[str, str]] = []
        first_new: dict[str, int] = {}
        for start in range(0, len(request.events), CHUNK_ARTIFACTS):
            chunk = [StreamAppend(goal_id, request.events[start : start + CHUNK_ARTIFACTS])]
            for outcome in _append_or_check(session, chunk, source, errors) or []:
                for appended in outcome:
                    counts[appended.status] += 1
                    if appended.status == "appended":
                        first_new.setdefault(goal_id, appended.event.position)
        if errors:
            raise UnstorableContent(errors)
        if dry_run:
            raise _RollBack
        materialize_goals(session.tx, first_new)

    try:
        ledger.writing(work)
    except _RollBack:
        pass
    return counts


def _runs_by_batch(pending: list[tuple[BatchOutcome, NewEvent, Artifact | None]]) -> list[StreamAppend]:
    """The pending events as appends, one per run of consecutive events of the same batch (stream order kept)."""
    appends: list[StreamAppend] = []
    run: list[NewEvent] = []
    for index, (batch, new, _artifact) in enumerate(pending):
        run.append(new)
        if index + 1 == len(pending) or pending[index + 1][0] is not batch:
            appends.append(StreamAppend(batch.goal_id, run))
            run = []
    return appends


def ingest_files(
    ledger: Store,
    batches: Sequence[DocumentBatch],
    *,
    kind: str | None,
    source: str,
    dry_run: bool = False,
    progress: Callable[[Iterable[str]], Iterable[str]] = lambda files: files,
    inputs: str | None = None,
) -> FilesIngest:
    """Read, normalize and append the documents of ``batches`` in one transaction: all of them or none.

    Returns every refusal (as ``(source, reason)``) instead of writing when
    there is one; a document whose schema contradicts ``kind`` raises
    :class:`KindContradicted` once all are read, nothing written. The goals'
    projections are brought up to date in the same transaction; inputs that
    hold no artifact at all raise :class:`NothingToIngest` (``inputs`` names
    them in its message). The files are
    read as the transaction goes (``progress`` wraps each batch's list of files);
    a SQLite retry while another writer holds the lock reads them again.
    """
    result = FilesIngest([], [], dry_run)

    def work(session: ChunkedAppend) -> None:
        writer = _ChunkWriter(session, source)
        contradicted: list[str] = []
        outcomes = []
        for request in batches:
            batch = BatchOutcome(request.goal_id, request.label)
            for item in read_artifacts(progress(request.files), kind, contradicted):
                if isinstance(item, Refused):
                    writer.flush()  # (what was read before it is checked before it)
                    writer.errors.append((item.source, item.reason))
                else:
                    writer.add_member(batch, item)
            writer.end_batch(batch)
            if batch.members:
                outcomes.append(batch)
        writer.flush()
        refuse_contradicted(contradicted)
        result.batches, result.errors = outcomes, writer.errors
        if writer.errors:
            raise _RollBack
        if not outcomes:  # (a dry run is refused the same way: it would write nothing either)
            named = inputs or ", ".join(file for request in batches for file in request.files) or "the inputs"
            goals = ", ".join(sorted({repr(request.goal_id) for request in batches})) or "no goal"
            raise NothingToIngest(
                f"{named}: no artifact to ingest (a folder is read for *.json, *.ndjson and *.jsonl); "
                f"nothing was written, goal {goals} was not created"
            )
        if dry_run:
            raise _RollBack
        materialize_goals(session.tx, writer.first_new)

    try:
        ledger.writing(work)
    except _RollBack:
        pass
    return result


# -- ingest-batches ------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchLine:
    """One validated line of an ``ingest-batches`` file."""

    goal_id: str
    artifacts: list[Artifact]
    source: str


@dataclass
class BatchFileIngest:
    """What :func:`ingest_batch_file` did (``--format json`` of ``ingest-batches``); ``errors`` holds the first 20 refusals."""

    path: str
    batches: int = 0
    artifacts: int = 0
    appended: int = 0
    duplicates: int = 0
    batches_appended: int = 0
    transactions: int = 0
    error_count: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error_count

    def refuse(self, line: int | None, error: str) -> None:
        self.error_count += 1
        if len(self.errors) < SHOWN_PROBLEMS:
            self.errors.append({"line": line, "error": error})

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "file": self.path,
            "batches": self.batches,
            "artifacts": self.artifacts,
            "appended": self.appended,
            "duplicates": self.duplicates,
            "batches_appended": self.batches_appended,
            "transactions": self.transactions,
            "error_count": self.error_count,
            "errors": self.errors,
        }


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
    documents = value["artifacts"]
    if not isinstance(documents, list) or not documents:
        raise IntakeError("artifacts must be a non-empty list of artifact objects (an empty batch is not kept)")
    artifacts = []
    for index, document in enumerate(documents):
        at = f"artifacts[{index}]"
        # (the document's canonical JSON is as long as its compact JSON: sorting keys moves bytes, adds none)
        body = canonical_json(document)
        size = len(body.encode())
        if size > MAX_DOCUMENT_BYTES:
            raise IntakeError(f"{at} is {size} bytes, larger than the {MAX_DOCUMENT_BYTES}-byte limit of one document")
        try:
            artifacts.append(to_artifact(embedded_document(f"{where} {at}", document, body), kind, BATCH_KIND_FIELD))
        except IntakeError as exc:
            raise IntakeError(f"{at}: {exc}") from exc
    return BatchLine(goal_id, artifacts, source)


def _spooled(batch: BatchLine, members: Sequence[NewEvent], receipt: bytes) -> bytes:
    """One validated batch as a line of the spool: ``[[goal, source, receipt, [[kind, source hash, origin], ...]], payload, ...]``.

    The payloads are written as the canonical JSON their event ids were
    computed from (``members``: the batch's member events), which is what the
    store keeps: spooling serializes nothing twice. ``receipt`` is the guard's
    (:func:`guard_receipt`), so the append does not guard the batch again.
    """
    head = [batch.goal_id, batch.source, receipt.hex(), [[a.kind, a.source_sha256, a.origin] for a in batch.artifacts]]
    # (the head in ASCII: an origin names the file, whose name may hold undecodable bytes, i.e. lone surrogates)
    return ("[" + ",".join([json.dumps(head), *(new.canonical[0] for new in members)]) + "]\n").encode()


@dataclass(frozen=True)
class _SpooledBatch:
    request: BatchRequest
    source: str
    receipt: bytes


def _unspooled(line: bytes) -> _SpooledBatch:
    (goal_id, source, receipt, members), *payloads = json.loads(line)
    artifacts = [Artifact(kind, payload, sha, origin=origin) for (kind, sha, origin), payload in zip(members, payloads)]
    return _SpooledBatch(BatchRequest(goal_id, artifacts), source, bytes.fromhex(receipt))


def _validate(path: str, name: str, report: BatchFileIngest, spool: BinaryIO) -> None:
    """Pass 1: every line parsed, normalized and guarded; each valid batch is written to ``spool`` as normalized (:func:`_spooled`)."""
    try:
        with open_regular_file(path, name) as handle:
            for number, line in read_lines(handle, name, limit=None, line_limit=MAX_BATCH_LINE_BYTES):
                try:
                    batch = _batch_line(line, f"{name}:{number}")
                except InputFileError as exc:
                    report.refuse(number, exc.reason)
                    continue
                except IntakeError as exc:
                    report.refuse(number, str(exc))
                    continue
                events = batch_events(batch.goal_id, batch.artifacts)
                problems, receipt = guard_receipt(StreamAppend(batch.goal_id, events), source=batch.source)
                for place, problem in problems:  # (the report names the line: the place within it is enough)
                    report.refuse(number, f"{place.removeprefix(f'{name}:{number} ')}: {problem}")
                report.batches += 1
                report.artifacts += len(batch.artifacts)
                if receipt is not None and report.ok:  # (after a refusal nothing is appended: only the problems are still counted)
                    spool.write(_spooled(batch, events[:-1], receipt))
    except InputFileError as exc:
        report.refuse(None, str(exc))


def ingest_batch_file(
    ledger: Store,
    path: str,
    *,
    name: str | None = None,
    started: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> BatchFileIngest:
    """``ingest-batches PATH``: validate every line, then append the batches in transactions of a few hundred artifacts.

    Any invalid line writes nothing (the report lists the first 20 and counts
    them all; messages call the file ``name``, by default ``path``). The file
    is read once: what validation normalized is spooled to a temporary file
    and appended from there, in file order, so what is appended is what was
    validated, whatever happens to the file meanwhile. ``started`` is called
    with the number of artifacts once they are validated, ``progress`` with
    the number each committed transaction held.
    """
    name = name or path
    report = BatchFileIngest(name)
    with tempfile.TemporaryFile(prefix="benchledger-batches-") as spool:
        try:
            _validate(path, name, report, spool)
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
        pending: list[_SpooledBatch] = []
        held = 0
        projectors = KeptProjectors()  # (a goal's batches span transactions: each goal is folded once, not resumed in each)

        def commit() -> None:
            outcomes = ingest_many(
                ledger,
                [b.request for b in pending],
                source=pending[0].source,
                receipts={b.receipt for b in pending},
                projectors=projectors,
            )
            report.transactions += 1
            for outcome in outcomes:
                report.appended += outcome.appended_count
                report.duplicates += outcome.duplicate_count
                report.batches_appended += outcome.batch.status == "appended"
            if progress is not None:
                progress(held)
            pending.clear()

        for line in spool:
            batch = _unspooled(line)
            if pending and (batch.source != pending[0].source or held + len(batch.request.artifacts) > TRANSACTION_ARTIFACTS):
                commit()
                held = 0
            pending.append(batch)
            held += len(batch.request.artifacts)
        if pending:
            commit()
    return report


def directory_batches(goal_id: str, root: str) -> list[DocumentBatch]:
    """``ingest --batch-per-directory ROOT``: each directory below ROOT that directly holds input files is one batch, sorted."""
    base = Path(root).expanduser()
    if not base.is_dir():
        raise InputFileError(root, "not a directory (--batch-per-directory takes the root of a job tree)")
    by_directory: dict[Path, list[str]] = {}
    for file in directory_files(base):
        by_directory.setdefault(file.parent, []).append(str(file))
    return [DocumentBatch(goal_id, files, str(directory)) for directory, files in sorted(by_directory.items())]
