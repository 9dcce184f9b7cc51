"""``benchledger import-loopx``: bring existing LoopX history into a goal, all or nothing.

Two LoopX stores are understood:

* a **run ledger** file (``benchmark_run_ledger_v0``): every run row of every
  case becomes one ``benchmark_run_ledger_row_v0`` event whose payload is the
  row exactly as LoopX wrote it (archived rows and their archive fields
  included), in ``recorded_at`` order (file order breaks ties);
* a **runtime history** folder (``goals/<goal>/runs/index.jsonl`` and the
  per-run JSON records ``loopx history`` writes beside it): the compact
  artifacts a record embeds (``benchmark_run``, ``benchmark_comparison``,
  ``benchmark_result``, ``benchmark_learning_ledger``) go through ingest's
  normalizers and guards and become ordinary events of their kinds, one batch
  per record (a record is what one LoopX command wrote: its runs and
  comparison belong together, as an ingest's files do). Index rows that repeat
  an earlier record — LoopX sometimes appends a run's index line twice — are
  taken once and counted.

Every row must pass the store's guard, as every event does (``ledger.storage.guard``):
a row holding a local path or a secret-like string anywhere, free-text notes
included, is refused with the row and the JSON path of the offending field, and
nothing is written. Rows of the wrong shape are refused before, all listed at once. Importing the
same history again appends nothing: events are content-addressed. A newer run
ledger that brings back an older version of a row (an un-archive) appends it
again, so that it is the run's current version (``_older_versions_restated``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchledger.ledger.service.ingest import Ingest, batch_events
from benchledger.ledger.service.intake.artifacts import to_artifact
from benchledger.ledger.service.intake.files import (
    MAX_DOCUMENT_BYTES,
    MAX_NDJSON_BYTES,
    InputFileError,
    SourceDocument,
    embedded_document,
    open_regular_file,
    parse_document,
    read_documents,
    read_lines,
)
from benchledger.ledger.storage.canonical import canonical_json, sha256_hex
from benchledger.ledger.storage.event_records import NewEvent
from benchledger.ledger.storage.guard import Storable, storage_problems
from benchledger.ledger.storage.store import Store
from benchledger.projections import runs
from benchledger.projections.artifacts import Artifact, IntakeError
from benchledger.projections.artifacts.kinds import KIND_SPECS, detect_kind

RUN_LEDGER_SCHEMA = "benchmark_run_ledger_v0"
HISTORY_FORMAT = "loopx_runtime_history"
INDEX_NAME = "index.jsonl"
IMPORT_SOURCE = "cli import-loopx"


@dataclass
class ImportPlan:
    """What an import would append, and what it found on the way (no ledger involved)."""

    source_format: str
    events: list[NewEvent] = field(default_factory=list)  # a run ledger's rows, appended as they are
    batches: list[list[Artifact]] = field(default_factory=list)  # a history's records, a batch each
    rows_read: int = 0
    duplicate_rows: int = 0
    rows_without_artifacts: int = 0
    refused: list[dict[str, str]] = field(default_factory=list)

    def refuse(self, source: str, reason: str) -> None:
        self.refused.append({"source": source, "reason": reason})


@dataclass(frozen=True)
class ImportReport:
    goal_id: str
    plan: ImportPlan
    # events appended / already in the goal (counts: a large import holds no list of its events)
    appended: int
    already_present: int
    dry_run: bool
    archived_goals: tuple[str, ...] = ()  # the goal, when it is archived and this import appended to it (``IngestOutcome``)

    @property
    def ok(self) -> bool:
        return not self.plan.refused

    def as_dict(self) -> dict[str, Any]:
        """The ``--format json`` report (stable field names)."""
        plan = self.plan
        return {
            "ok": self.ok,
            "dry_run": self.dry_run,
            "goal_id": self.goal_id,
            "source_format": plan.source_format,
            "rows_read": plan.rows_read,
            "duplicate_rows": plan.duplicate_rows,
            "rows_without_artifacts": plan.rows_without_artifacts,
            "events_appended": self.appended,
            "events_already_present": self.already_present,
            "refused": list(plan.refused),
            "archived_goals": list(self.archived_goals),
        }


def import_plan(ledger: Store, goal_id: str, plan: ImportPlan, *, dry_run: bool = False, new_goal: bool = False) -> ImportReport:
    """Append a :func:`plan_import` plan to ``goal_id`` in one transaction (in chunks), with the goal's projections.

    A plan with any refused row writes nothing: the report has ``ok`` false.
    What the store's guard refuses (``ledger.storage.guard``) is reported the
    same way.
    """
    if plan.refused:
        return ImportReport(goal_id, plan, 0, 0, dry_run)
    new_events = _older_versions_restated(ledger, goal_id, plan.events) if plan.source_format == RUN_LEDGER_SCHEMA else plan.events
    unit = Ingest(ledger, IMPORT_SOURCE, dry_run=dry_run)
    unit.add_events(goal_id, new_events, new_goal=new_goal)
    for artifacts in plan.batches:
        unit.add(goal_id, artifacts, new_goal=new_goal)
    outcome = unit.commit()
    if not outcome.ok:
        for where, problem in outcome.errors:
            plan.refuse(where, problem)
        return ImportReport(goal_id, plan, 0, 0, dry_run)
    # (the counts are of events: a batch's manifest is one, or the earlier batch that groups its members already)
    manifests = [b.batch.status for b in outcome.batches]
    return ImportReport(
        goal_id,
        plan,
        outcome.appended_count + manifests.count("appended"),
        outcome.duplicate_count + manifests.count("duplicate"),
        dry_run,
        outcome.archived_goals,
    )


def _older_versions_restated(ledger: Store, goal_id: str, new_events: list[NewEvent]) -> list[NewEvent]:
    """Rows that bring back an older version of a run (an un-archive), keyed on the file's bytes so they become new events.

    A row event is identified by its content, so a row equal to one the goal
    already holds is not stored again. That is right while the held event is
    the run's current version; when a later version superseded it (LoopX
    archived the run, and a newer ledger file un-archives it), the newer file
    states the older content anew, and ``runs`` must show it: such a row is
    appended again under an id that covers the file's SHA-256 (importing the
    same file twice still appends nothing).
    """
    if ledger.head(goal_id) is None:
        return new_events
    current = {v["run_id"]: v["event_id"] for v in runs.run_views(ledger.read_goal(goal_id)) if v["kind"] == runs.ROW_KIND}
    current_digest = {e.event_id: e.payload_sha256 for e in ledger.events_by_id(current.values()).values()}
    stored = ledger.events_by_id(new.event_id(goal_id) for new in new_events)
    restated = []
    for new in new_events:
        superseded = new.event_id(goal_id) in stored and current_digest.get(current.get(new.payload["run_id"])) != new.canonical[1]
        restated.append(replace(new, keyed_on_source=True) if superseded else new)
    return restated


def plan_import(path: str, goal_id: str) -> ImportPlan:
    """Read ``path`` (a run-ledger file, a history folder or its ``index.jsonl``) into an :class:`ImportPlan`.

    Raises :class:`InputFileError` when ``path`` is neither, or cannot be read.
    A plan that refuses any row lists, besides, what the store would refuse of
    the others (``ledger.storage.guard``): every refusal is listed at once.
    """
    plan = _plan(path, goal_id)
    if plan.refused:
        events = [*plan.events, *(e for artifacts in plan.batches for e in batch_events(goal_id, artifacts))]
        storables = (Storable(goal_id, e.kind, e.schema_version, IMPORT_SOURCE, e.payload, e.canonical[0], e.origin) for e in events)
        for where, problem in storage_problems(storables):
            plan.refuse(where, problem)
    return plan


def _plan(path: str, goal_id: str) -> ImportPlan:
    location = Path(path).expanduser()
    if location.is_dir() or location.name == INDEX_NAME:
        return _plan_history(_find_index(location, goal_id))
    document = next(read_documents(path), None)
    if document is None:
        raise InputFileError(path, "holds no JSON document")
    value = document.value
    schema = value.get("schema_version") if isinstance(value, dict) else None
    if schema != RUN_LEDGER_SCHEMA:
        raise InputFileError(
            path,
            f"not a LoopX run ledger (schema_version is {schema!r}, expected {RUN_LEDGER_SCHEMA!r}); "
            f"for a LoopX runtime history pass its folder or its {INDEX_NAME}",
        )
    return _plan_run_ledger(document)


# -- run ledger -------------------------------------------------------------------


def _plan_run_ledger(document: SourceDocument) -> ImportPlan:
    plan = ImportPlan(RUN_LEDGER_SCHEMA)
    benchmarks = document.value.get("benchmarks")
    if not isinstance(benchmarks, dict):
        raise InputFileError(document.source, "benchmarks is not an object")
    accepted: list[tuple[Any, int, dict[str, Any], str]] = []
    seen: set[str] = set()
    for benchmark_id, benchmark in benchmarks.items():
        cases = benchmark.get("cases") if isinstance(benchmark, dict) else None
        if not isinstance(cases, dict):
            plan.refuse(f"{document.source}: benchmarks[{benchmark_id}]", "cases is not an object")
            continue
        for case_id, case in cases.items():
            where = f"{document.source}: benchmarks[{benchmark_id}].cases[{case_id}]"
            rows = case.get("runs") if isinstance(case, dict) else None
            if not isinstance(rows, list):
                plan.refuse(where, "runs is not a list")
                continue
            for index, row in enumerate(rows):
                plan.rows_read += 1
                label = f"{where}.runs[{index}]"
                problems = runs.row_problems(row) or _misfiled(row, benchmark_id, case_id)
                if problems:
                    plan.refuse(label, "; ".join(problems))
                    continue
                digest = sha256_hex(canonical_json(row))
                if digest in seen:
                    plan.duplicate_rows += 1
                    continue
                seen.add(digest)
                accepted.append((runs.utc_instant(row["recorded_at"]), len(accepted), row, label))
    # Sorting on (instant, file order) keeps rows recorded at the same second in file order.
    accepted.sort(key=lambda item: item[:2])
    plan.events = [NewEvent(runs.ROW_KIND, row, None, document.sha256, origin=label) for _, _, row, label in accepted]
    return plan


def _misfiled(row: dict[str, Any], benchmark_id: str, case_id: str) -> list[str]:
    """A row filed under another benchmark or case than it names would be listed under the wrong one."""
    if (row["benchmark_id"], row["case_id"]) == (benchmark_id, case_id):
        return []
    return [f"the row names benchmark {row['benchmark_id']!r} case {row['case_id']!r} but is filed under {benchmark_id!r} / {case_id!r}"]


# -- runtime history ------------------------------------------------------------------


def _find_index(location: Path, goal_id: str) -> Path:
    """The ``index.jsonl`` that ``location`` names: the file, a ``runs`` folder, a goal folder or a runtime root."""
    if location.name == INDEX_NAME:
        return location
    for candidate in (location / INDEX_NAME, location / "runs" / INDEX_NAME):
        # exists(), not is_file(): an index that is a FIFO or a device is named and refused by the reader.
        if candidate.exists():
            return candidate
    indexes = sorted((location / "goals").glob(f"*/runs/{INDEX_NAME}"))
    named = location / "goals" / goal_id / "runs" / INDEX_NAME
    if named in indexes:
        return named
    if len(indexes) == 1:
        return indexes[0]
    if not indexes:
        raise InputFileError(str(location), f"no LoopX history here (no {INDEX_NAME}, runs/{INDEX_NAME} or goals/*/runs/{INDEX_NAME})")
    goals = ", ".join(p.parent.parent.name for p in indexes)
    raise InputFileError(str(location), f"holds the history of several LoopX goals ({goals}); pass the folder goals/<goal> of one")


def _index_rows(index: Path) -> Iterator[SourceDocument | InputFileError]:
    """Each non-blank line of the index, parsed with ingest's strict rules, or why it could not be (read as needed)."""
    with open_regular_file(index, str(index)) as handle:
        for number, line in read_lines(handle, str(index), limit=MAX_NDJSON_BYTES, line_limit=MAX_DOCUMENT_BYTES):
            try:
                yield parse_document(line, f"{index}:{number}")
            except InputFileError as exc:
                yield exc


def _record(row: SourceDocument, runs_dir: Path) -> SourceDocument:
    """The run record an index row stands for: the JSON file its ``json_path`` names, else the row itself.

    LoopX writes absolute paths of the machine that ran it, so the record is
    looked up by file name beside the index, never at the recorded path.
    """
    if not isinstance(row.value, dict):
        raise IntakeError("an index row must be a JSON object")
    reference = row.value.get("json_path")
    if not isinstance(reference, str) or not reference.strip():
        return row
    name = posixpath.basename(reference.replace("\\", "/"))
    if not name.endswith(".json"):
        raise IntakeError(f"json_path does not name a .json run record ({name!r})")
    record_path = runs_dir / name
    if not record_path.exists():  # (a FIFO or a device is refused by the reader, by name)
        raise IntakeError(f"the run record {name} that json_path names is not in {runs_dir}")
    return next(read_documents(str(record_path)))


def _artifacts(record: SourceDocument) -> list[Any]:
    """The compact artifacts a record embeds, normalized and guarded exactly as ingest does."""
    if not isinstance(record.value, dict):
        raise IntakeError("a run record must be a JSON object")
    embedded = [
        (kind, record.value[spec.envelope_key])
        for kind, spec in KIND_SPECS.items()
        if spec.envelope_key and isinstance(record.value.get(spec.envelope_key), dict)
    ]
    if embedded:
        # An embedded artifact's source is its own object, not the record around it: LoopX writes
        # a run into its run's record and again into the comparison's, and that is one observation.
        return [
            to_artifact(embedded_document(record.source, value), kind)
            for kind, value in embedded
        ]
    # A record that is itself an artifact (top-level schema_version) is taken as one.
    return [to_artifact(record, None)] if detect_kind(record.value) else []


def _plan_history(index: Path) -> ImportPlan:
    plan = ImportPlan(HISTORY_FORMAT)
    seen: set[str] = set()
    for row in _index_rows(index):
        plan.rows_read += 1
        if isinstance(row, InputFileError):
            plan.refuse(row.source, row.reason)
            continue
        try:
            record = _record(row, index.parent)
            digest = sha256_hex(canonical_json(record.value))  # (a hash: records may be megabytes each)
            if digest in seen:
                plan.duplicate_rows += 1
                continue
            seen.add(digest)
            artifacts = _artifacts(record)
        except IntakeError as exc:
            plan.refuse(row.source, str(exc))
            continue
        if not artifacts:
            # Operator gates, quota spends and other non-benchmark history: nothing to keep here.
            plan.rows_without_artifacts += 1
            continue
        plan.batches.append(artifacts)
    return plan
