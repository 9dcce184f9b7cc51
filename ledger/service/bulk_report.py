"""What ``ingest-batches`` did (``service.bulk``): its counts, its refusals, and the archived goals it appended to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchledger.errors import SHOWN_PROBLEMS


@dataclass
class BatchFileIngest:
    """What ``service.bulk.ingest_batch_file`` did (``--format json`` of ``ingest-batches``); ``errors`` holds the first 20 refusals."""

    path: str
    batches: int = 0
    artifacts: int = 0
    appended: int = 0  # artifacts appended (as ``ingest`` counts them) ...
    duplicates: int = 0
    batches_appended: int = 0  # ... and batches: each one an ingest_batch event more (:attr:`events_appended`)
    transactions: int = 0
    error_count: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    taken_once_count: int = 0  # artifacts a line listed again, taken once (``ingest`` takes a folder's copies of a run once) ...
    taken_once: list[dict[str, Any]] = field(default_factory=list)  # ... and the first 20 of them
    archived_goals: set[str] = field(default_factory=set)  # goals it appended to that are archived (``IngestOutcome``)

    @property
    def ok(self) -> bool:
        return not self.error_count

    @property
    def events_appended(self) -> int:
        """Every event appended: the artifacts and the batches' ingest_batch events (what ``info`` and ``goals`` count)."""
        return self.appended + self.batches_appended

    def refuse(self, line: int | None, error: str) -> None:
        self.error_count += 1
        if len(self.errors) < SHOWN_PROBLEMS:
            self.errors.append({"line": line, "error": error})

    def take_once(self, line: int, repeats: Sequence[tuple[str, str]]) -> None:
        self.taken_once_count += len(repeats)
        room = SHOWN_PROBLEMS - len(self.taken_once)
        self.taken_once += [{"line": line, "source": source, "reason": reason} for source, reason in repeats[:max(room, 0)]]

    def refuse_lines(self, refusals: Sequence[tuple[int, str]]) -> None:
        """Refusals of lines found once every line was read (``service.bulk``'s check of the attempts), merged with the others in line order:
        the report still lists the first :data:`SHOWN_PROBLEMS` of the file and counts them all."""
        self.error_count += len(refusals)
        merged = self.errors + [{"line": line, "error": error} for line, error in refusals[:SHOWN_PROBLEMS]]
        # (stable: a line's own refusals keep their order; a refusal of the file, no line, stays after the lines read)
        self.errors = sorted(merged, key=lambda e: (e["line"] is None, e["line"] or 0))[:SHOWN_PROBLEMS]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "file": self.path,
            "batches": self.batches,
            "artifacts": self.artifacts,
            "appended": self.appended,
            "duplicates": self.duplicates,
            "batches_appended": self.batches_appended,
            "events_appended": self.events_appended,
            "transactions": self.transactions,
            "error_count": self.error_count,
            "errors": self.errors,
            "taken_once_count": self.taken_once_count,
            "taken_once": self.taken_once,
            "archived_goals": sorted(self.archived_goals),
        }
