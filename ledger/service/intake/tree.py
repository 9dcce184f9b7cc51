"""``ingest --batch-per-directory ROOT``: a job tree's batches (one per directory holding input files), in a stated order."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from benchledger.errors import InvalidInput, capped
from benchledger.ledger.service.intake.files import InputFileError, SourceDocument, directory_files, read_each_document
from benchledger.projections.artifacts import IntakeError
from benchledger.projections.history import ARTIFACT_TIME_FIELDS
from benchledger.projections.runs import utc_instant

# Where a document states its own time (top level, an ISO-8601 time with its UTC offset); a launch record states
# when it launched. Compact runs state none: a job's time is that of its lifecycle records or raw runs.
BATCH_TIME_FIELDS = (*ARTIFACT_TIME_FIELDS, "launched_at")


class NoBatchTime(InvalidInput):
    """``--order time`` over directories none of whose documents states its time (a usage error: exit 2)."""


def batch_time(files: Sequence[str]) -> datetime | None:
    """The earliest time the documents of ``files`` state (:data:`BATCH_TIME_FIELDS`), if any.

    Read one document at a time; a file or a line that does not read is passed over
    here (the ingest that follows refuses it, naming why).
    """
    earliest: datetime | None = None
    for file in files:
        try:
            for document in read_each_document(file):
                value = document.value if isinstance(document, SourceDocument) else None
                if not isinstance(value, dict):
                    continue
                for name in BATCH_TIME_FIELDS:
                    moment = utc_instant(value.get(name))
                    if moment is not None and (earliest is None or moment < earliest):
                        earliest = moment
        except IntakeError:
            continue
    return earliest


def directory_batches(root: str, *, include: Sequence[str] = (), order: str = "name") -> list[tuple[str, list[str]]]:
    """Each directory below ``root`` that directly holds files to read (``include``: ``--include``), with those files
    sorted, in ``order``: ``name`` (the directories' paths, sorted) or ``time`` (the earliest time their documents
    state, :func:`batch_time`; ties by name). In time order a directory whose documents state no time is refused
    (:class:`NoBatchTime`), naming it: its place cannot be told."""
    base = Path(root).expanduser()
    if not base.is_dir():
        raise InputFileError(root, "not a directory (--batch-per-directory takes the root of a job tree)")
    by_directory: dict[Path, list[str]] = {}
    for file in directory_files(base, include):
        by_directory.setdefault(file.parent, []).append(str(file))
    batches = [(str(directory), files) for directory, files in sorted(by_directory.items())]
    if order == "name":
        return batches
    if order != "time":
        raise InvalidInput(f"order {order!r}: batches are ordered by 'name' or 'time'")
    timed = [(batch_time(files), directory, files) for directory, files in batches]
    untimed = [directory for moment, directory, _ in timed if moment is None]
    if untimed:
        raise NoBatchTime(
            f"--order time: no document in {', '.join(capped(untimed))} states its time ({', '.join(BATCH_TIME_FIELDS)}, "
            "with a UTC offset); order the batches by directory name (--order name, the default)"
        )
    return [(directory, files) for _, directory, files in sorted(timed, key=lambda t: (t[0], t[1]))]
