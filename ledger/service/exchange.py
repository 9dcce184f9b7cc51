"""``benchledger export`` / ``import-ndjson``: the ledger as NDJSON, and back, exactly.

An export line is one stored event with every field (``StoredEvent.as_record``:
the payload as its stored canonical JSON text, the hashes, the position), in
position order: the file docs/hash-chain.md's script audits. The last line is
the *trailer* (:data:`TRAILER_KEY`): how many events the export holds, the
last position, and the digest of what it holds (the ledger's, or with
``--goal`` the goal's), so a file that lost its tail says so.

Importing it into an empty ledger inserts those very records (same event ids,
versions, payloads, chain hashes), rebuilds the stream heads and the
projections of the imported goals in the same transaction, and therefore
reproduces the digest.

A file is only imported after it verifies as a whole (``ledger.storage.verification``)
and against its trailer: a tampered payload, a broken chain, a missing event or
a missing trailer refuses it, and nothing is written. An export of the whole
ledger must hold positions 1..N; an export of one goal (``export --goal``) has
the gaps other goals left and is renumbered 1..N on import — positions are
outside the chain hash for exactly this reason.

Memory stays bounded whatever the file's size: the file is read twice, a line
at a time. The first pass checks every line and the chains, keeping only each
goal's tail and a hash of the bytes read; the second inserts
:data:`INSERT_CHUNK` records at a time inside one transaction and rolls it back
if the file's bytes are not the ones the first pass verified.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import String

from benchledger.errors import CHECK_FAILED, SHOWN_PROBLEMS, LedgerError
from benchledger.ledger.service.intake.files import not_json_lines, open_regular_file, read_lines
from benchledger.ledger.service.materialize import rebuild_projections
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.canonical import canonical_json
from benchledger.ledger.storage.event_records import EVENT_COLUMNS, GOAL_ID_PATTERN, StoredEvent
from benchledger.ledger.storage.schema import events
from benchledger.ledger.storage.store import Store
from benchledger.ledger.storage.transaction import Transaction
from benchledger.ledger.storage.verification import format_digest, verify_events
from benchledger.projections import catalog, goal_archive, retraction
from benchledger.projections.artifacts.kinds import KIND_SCHEMAS
from benchledger.projections.batch_manifest import BATCH_KIND, BATCH_SCHEMA
from benchledger.projections.runs import ROW_KIND

INTEGER_FIELDS = ("position", "stream_version")
NULLABLE_FIELDS = tuple(column.name for column in events.c if column.nullable)
# Column widths a PostgreSQL ledger enforces; checked up front so a bad file is
# refused with a reason rather than failing half-way through the insert.
STRING_LIMITS = {column.name: column.type.length for column in events.c if isinstance(column.type, String) and column.type.length}

TRAILER_KEY = "benchledger_export"
TRAILER_FORMAT = "trailer-v1"
TRAILER_FIELDS = (TRAILER_KEY, "goal_id", "events", "last_position", "digest")
# An export has no size limit (it is as large as the ledger), but one line does:
# the largest event benchledger writes is the manifest of a batch of a 64 MiB
# NDJSON's many small artifacts (an id and a kind per member).
MAX_EXPORT_LINE_BYTES = 256 * 1024 * 1024
INSERT_CHUNK = 2000
# A file of garbage lists its first problems and counts the rest (the list is held in memory).
MAX_PROBLEMS_LISTED = 1000


class NotEmpty(LedgerError):
    """The target ledger already holds events (a check said no, as for a file that does not verify)."""

    exit_code = CHECK_FAILED


class ExportRefused(LedgerError):
    """The file does not verify; ``problems`` lists the first reasons, ``problem_count`` counts all (``str()`` is a summary)."""

    exit_code = CHECK_FAILED

    def __init__(self, path: str, problems: list[str], problem_count: int | None = None) -> None:
        self.problems = problems
        self.problem_count = len(problems) if problem_count is None else problem_count
        super().__init__(f"{path}: refused, nothing written ({self.problem_count} problem(s))")

    def as_dict(self) -> dict[str, Any]:
        """What ``import-ndjson --format json`` prints of the refusal: the first problems, and how many there are."""
        return {"ok": False, "error": str(self), "problem_count": self.problem_count, "problems": self.problems[:SHOWN_PROBLEMS]}


@dataclass(frozen=True)
class ImportedExport:
    events: int
    goals: list[str]
    digest: str
    tail_verified: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "events_imported": self.events,
            "goals": self.goals,
            "digest": self.digest,
            "tail_verified": self.tail_verified,
        }


def export_lines(ledger: Store, *, goal_id: str | None = None) -> Iterator[str]:
    """One JSON line per event, in position order (only ``goal_id``'s when given, which must exist), then the trailer."""
    if goal_id is not None:
        ledger.require_goal(goal_id)
    return _export_lines(ledger, goal_id)


def _export_lines(ledger: Store, goal_id: str | None) -> Iterator[str]:
    running, count, last_position, covered = canonical.GENESIS_HASH, 0, 0, 0
    # (one read_all is one snapshot: the trailer's digest is of exactly the lines above it)
    for event in ledger.read_all(goal_id=goal_id):
        yield _line(event.as_record())
        running = canonical.digest_step(running, event.chain_hash)
        count, last_position = count + 1, event.position
        covered = event.stream_version if goal_id is not None else event.position
    yield _line(
        {
            TRAILER_KEY: TRAILER_FORMAT,
            "goal_id": goal_id,
            "events": count,
            "last_position": last_position,
            "digest": format_digest(covered, running),
        }
    )


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _record_problems(record: Any) -> list[str]:
    if not isinstance(record, dict):
        return ["not a JSON object"]
    if set(record) != set(EVENT_COLUMNS):
        missing, extra = sorted(set(EVENT_COLUMNS) - set(record)), sorted(set(record) - set(EVENT_COLUMNS))
        return [f"fields differ from an exported event (missing: {missing or 'none'}, unexpected: {extra or 'none'})"]
    problems = []
    for name in EVENT_COLUMNS:
        value = record[name]
        if name in INTEGER_FIELDS:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append(f"{name} is not a positive integer")
        elif value is None:
            if name not in NULLABLE_FIELDS:
                problems.append(f"{name} is null")
        elif not isinstance(value, str):
            problems.append(f"{name} is not a string")
        elif name in STRING_LIMITS and len(value) > STRING_LIMITS[name]:
            problems.append(f"{name} is longer than {STRING_LIMITS[name]} characters")
        elif "\x00" in value:
            problems.append(f"{name} contains a NUL character")
    if problems:
        return problems
    if not GOAL_ID_PATTERN.fullmatch(record["goal_id"]):
        problems.append(f"goal_id {record['goal_id']!r} is not a valid goal id")
    try:
        # The ledger stores canonical JSON only; anything else was not written by it.
        payload = json.loads(record["payload"])
        if canonical_json(payload) != record["payload"]:
            problems.append("payload is not canonical JSON")
    except (ValueError, RecursionError):
        return [*problems, "payload is not JSON (or nested too deeply)"]
    return problems + _kind_problems(record["kind"], record["schema_version"], payload)


# The schema_version the ledger records for an event of each kind it writes itself (an artifact's is its kind's, or
# for a kind without a fixed one the one its payload declares: ``ingest.member_event``).
_RECORDED_SCHEMAS: dict[str, str | None] = {
    **KIND_SCHEMAS, BATCH_KIND: BATCH_SCHEMA, retraction.KIND: retraction.SCHEMA, ROW_KIND: None,
    **dict.fromkeys(goal_archive.KINDS, goal_archive.SCHEMA),
}


def _kind_problems(kind: str, schema_version: str | None, payload: Any) -> list[str]:
    """An event of a kind this benchledger does not know, or recorded under another schema_version than it records:
    its hashes may be consistent, but no fold of this code reads it as the ledger that wrote it meant."""
    if kind not in catalog.EVENT_KINDS:
        return [f"kind {kind!r} is not an event kind this benchledger knows (one of: {', '.join(catalog.EVENT_KINDS)})"]
    if kind in _RECORDED_SCHEMAS:
        expected = _RECORDED_SCHEMAS[kind]
    else:
        declared = payload.get("schema_version") if isinstance(payload, dict) else None
        expected = declared if isinstance(declared, str) else None
    if schema_version != expected:
        return [f"schema_version {schema_version!r} is not the one this benchledger records for kind {kind!r} ({expected!r})"]
    return []


def _trailer_problems(trailer: dict[str, Any]) -> list[str]:
    if set(trailer) != set(TRAILER_FIELDS) or trailer[TRAILER_KEY] != TRAILER_FORMAT:
        return [f"the trailer is not a {TRAILER_FORMAT} trailer (fields: {', '.join(TRAILER_FIELDS)})"]
    counts = (trailer["events"], trailer["last_position"])
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in counts):
        return ["the trailer's events and last_position are not counts"]
    if not isinstance(trailer["digest"], str) or (trailer["goal_id"] is not None and not isinstance(trailer["goal_id"], str)):
        return ["the trailer's digest or goal_id is not a string"]
    return []


def export_records(path: str, byte_hash: Any, name: str) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed JSON or the reason it is not)`` for each line of the file (called ``name`` in messages);
    ``byte_hash`` sees every byte."""
    with open_regular_file(path, name) as handle:
        for number, line in read_lines(handle, name, limit=None, line_limit=MAX_EXPORT_LINE_BYTES):
            byte_hash.update(line + b"\n")
            try:
                yield number, json.loads(line.decode("utf-8"))
            except ValueError as exc:  # (UnicodeDecodeError is one)
                yield number, exc
            except RecursionError:
                yield number, ValueError("nested too deeply to be an exported event")


@dataclass
class _Scan:
    """What the first pass learns of a file: small, whatever the file's size."""

    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    events: int = 0
    last_position: int = 0
    goals: set[str] = field(default_factory=set)
    positions_one_to_n: bool = True
    trailer: dict[str, Any] | None = None
    sha256: str = ""
    # goal -> (its last stream version, that event's chain hash) in the file
    tails: dict[str, tuple[int, str]] = field(default_factory=dict)

    malformed_lines: bool = False

    def problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_LISTED:
            self.problems.append(text)

    def malformed(self, text: str) -> None:
        self.malformed_lines = True
        self.problem(text)


def _stored(record: dict[str, Any]) -> StoredEvent:
    return StoredEvent(**{("payload_text" if name == "payload" else name): value for name, value in record.items()})


def _scan(path: str, scan: _Scan, byte_hash: Any, name: str) -> Iterator[StoredEvent]:
    """The file's events, renumbered 1..N, for the chain check; every other finding goes into ``scan``.

    After a malformed line the chain check stops (it would only repeat the
    line's problem as broken links); the lines are still all checked.
    """
    for number, value in export_records(path, byte_hash, name):
        if isinstance(value, Exception):
            scan.malformed(f"line {number}: invalid JSON: {value}")
        elif scan.trailer is not None:
            scan.malformed(f"line {number}: follows the export trailer (the trailer must be the last line)")
        elif isinstance(value, dict) and TRAILER_KEY in value:
            scan.trailer = value
            for text in _trailer_problems(value):
                scan.malformed(f"line {number}: {text}")
        elif problems := _record_problems(value):
            for text in problems:
                scan.malformed(f"line {number}: {text}")
        elif value["position"] <= scan.last_position:
            scan.malformed("positions are not in increasing order")
        else:
            scan.events += 1
            scan.positions_one_to_n &= value["position"] == scan.events
            scan.last_position = value["position"]
            scan.goals.add(value["goal_id"])
            if not scan.malformed_lines:
                yield _stored({**value, "position": scan.events})


def verify_export(path: str, *, unverifiable_tail: bool = False, name: str | None = None) -> _Scan:
    """Read the whole file once and verify it: each line, every goal's chain, positions, the trailer.

    Raises :class:`ExportRefused` listing the first problems and counting all; messages call the file
    ``name``, by default ``path`` (``import-ndjson -`` reads a spooled copy of standard input).
    """
    name = name or path
    refused = not_json_lines(
        path,
        what="an export",
        shape="one event a line, as `benchledger export` writes",
        empty="the file is empty: an export holds at least its trailer line (`benchledger export > FILE` writes one)",
        limit=MAX_EXPORT_LINE_BYTES,
    )
    if refused is not None:
        raise ExportRefused(name, [refused])
    scan, byte_hash, tails = _Scan(), hashlib.sha256(), {}

    def heads() -> Iterator[dict[str, Any]]:
        # The heads the records imply (each goal's last event), known once the events are read.
        yield from tails.values()

    def tracked() -> Iterator[StoredEvent]:
        for event in _scan(path, scan, byte_hash, name):
            tails[event.goal_id] = {
                "goal_id": event.goal_id, "last_version": event.stream_version,
                "last_chain_hash": event.chain_hash, "last_position": event.position, "last_recorded_at": event.recorded_at,
            }
            yield event

    report = verify_events(tracked(), heads())
    for p in report.problems:
        scan.problem(f"{p.kind} (goal {p.goal_id}, position {p.position}): {p.detail}")
    if not scan.malformed_lines:
        if not scan.positions_one_to_n and len(scan.goals) > 1:
            scan.problem("positions are not 1..N: an event of this whole-ledger export is missing")
        _check_trailer(scan, report.digest, unverifiable_tail)
    if scan.problem_count:
        raise ExportRefused(name, scan.problems, scan.problem_count)
    scan.sha256 = byte_hash.hexdigest()
    scan.tails = {goal: (tail["last_version"], tail["last_chain_hash"]) for goal, tail in tails.items()}
    return scan


def _check_trailer(scan: _Scan, digest: str, unverifiable_tail: bool) -> None:
    trailer = scan.trailer
    if trailer is None:
        if not unverifiable_tail:
            scan.problem(
                "no export trailer: the file is cut short, or was written by a benchledger older than the trailer "
                "(to import such a file anyway, knowing that a missing tail cannot be detected, pass --unverifiable-tail)"
            )
        return
    if trailer["events"] != scan.events:
        scan.problem(f"the trailer counts {trailer['events']} event(s), the file holds {scan.events}: lines are missing or added")
    if trailer["last_position"] != scan.last_position:
        scan.problem(f"the trailer's last position is {trailer['last_position']}, the file's last event is at {scan.last_position}")
    if trailer["goal_id"] is not None and scan.goals - {trailer["goal_id"]}:
        scan.problem(f"the trailer says this is an export of goal {trailer['goal_id']!r}, the file holds {sorted(scan.goals)}")
    # Renumbered 1..N, the file's digest counts its events: for a whole-ledger
    # export that is its last position, for a goal's export the goal's last version.
    if trailer["digest"] != digest:
        scan.problem(f"the trailer's digest {trailer['digest']} is not the digest of the events above it ({digest})")


def import_export(ledger: Store, path: str, *, unverifiable_tail: bool = False, name: str | None = None) -> ImportedExport:
    """Import an export file into an empty ledger, exactly (module docstring); all or nothing.

    ``unverifiable_tail`` accepts a file without a trailer (written before
    benchledger had one): every line still verifies, but lost last lines cannot be noticed.
    Messages call the file ``name``, by default ``path``.
    """
    name = name or path
    if ledger.event_count():
        raise NotEmpty(_not_empty_message(ledger.event_count()))
    scan = verify_export(path, unverifiable_tail=unverifiable_tail, name=name)
    goals = sorted(scan.goals)
    digest: list[str] = []

    def attempt() -> None:
        byte_hash, running, count = hashlib.sha256(), canonical.GENESIS_HASH, 0

        def records(tx: Transaction) -> Iterator[dict[str, Any]]:
            """The second pass: the event records again (the store numbers them 1..N), adding up the digest."""
            nonlocal running, count
            if tx.last_position():  # (under the append lock: another writer appended since the check above)
                raise NotEmpty(_not_empty_message(tx.last_position()))
            for _number, value in export_records(path, byte_hash, name):
                if TRAILER_KEY not in value:
                    count += 1
                    running = canonical.digest_step(running, value["chain_hash"])
                    yield value

        def check_and_rebuild(tx: Transaction) -> None:
            if byte_hash.hexdigest() != scan.sha256:
                raise ExportRefused(name, ["the file changed while it was being imported"])
            for step in rebuild_projections(tx, goals):
                del step  # the rows are written as each step is rebuilt; one step in memory at a time

        ledger.insert_verbatim(records, chunk=INSERT_CHUNK, within=check_and_rebuild)
        digest[:] = [format_digest(count, running)]

    ledger.retrying_when_locked(attempt)
    return ImportedExport(scan.events, goals, digest[0], tail_verified=scan.trailer is not None)


def _not_empty_message(count: int) -> str:
    return (
        f"the target ledger already holds {count} event(s); import-ndjson restores only into an empty ledger "
        "(point --database-url at a new database)"
    )
