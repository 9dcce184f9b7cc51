"""``benchledger export`` / ``import-ndjson``: the ledger as NDJSON, and back, exactly.

An export line is one stored event with every field (``StoredEvent.as_record``:
the payload as its stored canonical JSON text, the hashes, the position), in
position order: the file docs/hash-chain.md's script audits. Importing it into
an empty ledger inserts those very records (same event ids, versions,
payloads, chain hashes), rebuilds the stream heads and the projections of the
imported goals in the same transaction, and therefore reproduces the digest.

A file is only imported after it verifies as a whole (``ledger.verification``): a
tampered payload, a broken chain or a missing event refuses it, and nothing is
written. An export of the whole ledger must hold positions 1..N; an export of
one goal (``export --goal``) has the gaps other goals left and is renumbered
1..N on import — positions are outside the chain hash for exactly this reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import String
from sqlalchemy.exc import IntegrityError

from benchledger.errors import CHECK_FAILED, UnknownGoal
from benchledger.ledger.application import rebuild_projections
from benchledger.ledger.canonical import canonical_json
from benchledger.ledger.schema import events
from benchledger.ledger.store import GOAL_ID_PATTERN, Ledger, LedgerError, StoredEvent, Transaction
from benchledger.ledger.verification import ChainReport, verify_events

FIELDS = tuple(column.name for column in events.c)
INTEGER_FIELDS = ("position", "stream_version")
NULLABLE_FIELDS = tuple(column.name for column in events.c if column.nullable)
# Column widths a PostgreSQL ledger enforces; checked up front so a bad file is
# refused with a reason rather than failing half-way through the insert.
STRING_LIMITS = {column.name: column.type.length for column in events.c if isinstance(column.type, String) and column.type.length}


class NotEmpty(LedgerError):
    """The target ledger already holds events (a check said no, as for a file that does not verify)."""

    exit_code = CHECK_FAILED


class ExportRefused(LedgerError):
    """The file does not verify; ``problems`` lists every reason (``str()`` is a summary)."""

    exit_code = CHECK_FAILED

    def __init__(self, path: str, problems: list[str]) -> None:
        super().__init__(f"{path}: refused, nothing written ({len(problems)} problem(s))")
        self.problems = problems


@dataclass(frozen=True)
class ImportedExport:
    events: int
    goals: list[str]
    digest: str

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "events_imported": self.events, "goals": self.goals, "digest": self.digest}


def export_lines(ledger: Ledger, *, goal_id: str | None = None) -> Iterator[str]:
    """One JSON line per event, in position order (only ``goal_id``'s when given, which must exist)."""
    if goal_id is not None and ledger.head(goal_id) is None:
        raise UnknownGoal(f"no goal {goal_id!r} in this ledger")
    return (json.dumps(event.as_record(), ensure_ascii=False, separators=(",", ":")) for event in ledger.read_all(goal_id=goal_id))


def _record_problems(record: Any) -> list[str]:
    if not isinstance(record, dict):
        return ["not a JSON object"]
    if set(record) != set(FIELDS):
        missing, extra = sorted(set(FIELDS) - set(record)), sorted(set(record) - set(FIELDS))
        return [f"fields differ from an exported event (missing: {missing or 'none'}, unexpected: {extra or 'none'})"]
    problems = []
    for name in FIELDS:
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
        if canonical_json(json.loads(record["payload"])) != record["payload"]:
            problems.append("payload is not canonical JSON")
    except ValueError:
        problems.append("payload is not JSON")
    return problems


def read_export(path: str) -> list[dict[str, Any]]:
    """The event records of an export file; raises :class:`ExportRefused` listing every malformed line."""
    records, problems = [], []
    try:
        with Path(path).expanduser().open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    problems.append(f"line {number}: invalid JSON: {exc}")
                    continue
                line_problems = _record_problems(record)
                problems.extend(f"line {number}: {p}" for p in line_problems)
                if not line_problems:
                    records.append(record)
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportRefused(path, [getattr(exc, "strerror", None) or str(exc)]) from exc
    if problems:
        raise ExportRefused(path, problems)
    return records


def _stored(record: dict[str, Any]) -> StoredEvent:
    return StoredEvent(**{("payload_text" if name == "payload" else name): value for name, value in record.items()})


def _heads(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream heads the records imply: each goal's last event."""
    heads = {}
    for r in records:
        heads[r["goal_id"]] = {"goal_id": r["goal_id"], "last_version": r["stream_version"], "last_chain_hash": r["chain_hash"], "last_position": r["position"]}
    return list(heads.values())


def verify_export(records: list[dict[str, Any]], path: str) -> ChainReport:
    """Renumber a one-goal export 1..N, then verify every event, chain and head; raise when anything fails."""
    positions = [r["position"] for r in records]
    goals = {r["goal_id"] for r in records}
    problems = []
    if any(later <= earlier for earlier, later in zip(positions, positions[1:])):
        problems.append("positions are not in increasing order")
    elif positions != list(range(1, len(records) + 1)) and len(goals) > 1:
        problems.append("positions are not 1..N: an event of this whole-ledger export is missing")
    renumbered = [{**r, "position": n} for n, r in enumerate(records, start=1)]
    report = verify_events([_stored(r) for r in renumbered], _heads(renumbered))
    problems += [f"{p.kind} (goal {p.goal_id}, position {p.position}): {p.detail}" for p in report.problems]
    if problems:
        raise ExportRefused(path, problems)
    records[:] = renumbered
    return report


def import_export(ledger: Ledger, path: str) -> ImportedExport:
    """Import an export file into an empty ledger, exactly (module docstring); all or nothing."""
    if ledger.event_count():
        raise NotEmpty(_not_empty_message(ledger.event_count()))
    records = read_export(path)
    report = verify_export(records, path)
    goals = sorted(report.goals)

    def rebuild(tx: Transaction) -> None:
        for _step in rebuild_projections(tx, goals):
            pass  # the rows are written as each step is rebuilt

    try:
        ledger.retrying_when_locked(lambda: ledger.insert_verbatim(records, within=rebuild))
    except IntegrityError as exc:
        # Another writer appended between the emptiness check and the insert.
        raise NotEmpty(_not_empty_message(ledger.event_count())) from exc
    return ImportedExport(len(records), goals, report.digest)


def _not_empty_message(count: int) -> str:
    return (
        f"the target ledger already holds {count} event(s); import-ndjson restores only into an empty ledger "
        "(point --database-url at a new database)"
    )
