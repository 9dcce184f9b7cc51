"""What :class:`benchledger.ledger.api.Ledger` answers: frozen dataclasses, each with ``as_dict()``.

``as_dict()`` is exactly what the matching command prints with ``--format json``
(the same fields in the same order; a report's long lists cut to their first
:data:`~benchledger.errors.SHOWN_PROBLEMS` and counted, as the command prints
them), while the attributes hold everything, typed. A streamed answer
(:class:`Goals`, :class:`History`) is a :class:`Listing`: its rows are read from
one snapshot as they are iterated.

This module imports nothing of the ledger's rooms: a result is plain data.

Longer than 500 lines: one small dataclass per answer of the API (two dozen), each
with the docstring and field order its ``--format json`` document fixes; they
are the API's vocabulary, read together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from benchledger.errors import SHOWN_PROBLEMS, BenchledgerError, LedgerUnavailable

PANDAS_EXTRA = "pip install 'benchledger[pandas]'"


class PandasMissing(BenchledgerError, ModuleNotFoundError):
    """``to_pandas()`` was called where pandas is not installed: the message names the extra that brings it."""


def _data_frame(rows: list[dict[str, Any]], columns: Sequence[str], attrs: Mapping[str, Any]) -> Any:
    """A ``pandas.DataFrame`` of ``rows`` (with these ``columns``, even when there is no row), ``attrs`` in ``DataFrame.attrs``.

    pandas is imported here only: it is an optional extra, and nothing else of benchledger needs it.
    """
    try:
        import pandas
    except ModuleNotFoundError as exc:
        raise PandasMissing(f"to_pandas() needs pandas, from the pandas extra: {PANDAS_EXTRA}") from exc
    frame = pandas.DataFrame.from_records(rows, columns=list(columns))
    frame.attrs.update(attrs)
    return frame


def _frame_row(item: Any) -> dict[str, Any]:
    """A row's ``as_dict()`` with each nested run spread into ``<field>.<run field>`` columns (all ``None`` when there is no run)."""
    row = item.as_dict()
    for name in getattr(item, "NESTED_RUNS", ()):
        run = row.pop(name)
        row.update({f"{name}.{field}": None if run is None else run[field] for field in Run.__match_args__})
    return row


def _frame_columns(row_type: type) -> list[str]:
    """The columns of :func:`_frame_row`'s rows, in ``--format json`` order: a row's own fields, then its nested runs'."""
    nested = getattr(row_type, "NESTED_RUNS", ())
    own = [name for name in row_type.__match_args__ if name not in nested]
    return own + [f"{name}.{field}" for name in nested for field in Run.__match_args__]


class _Flat:
    """``as_dict()`` of a dataclass whose fields are all JSON values: the fields, in order."""

    __slots__ = ()
    __match_args__: ClassVar[tuple[str, ...]]

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__match_args__}


def _capped(items: Sequence[Any]) -> list[dict[str, Any]]:
    return [item.as_dict() for item in items[:SHOWN_PROBLEMS]]


# -- the ledger ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LedgerInfo(_Flat):
    """Which ledger this is (``benchledger info``): its URL (password redacted), backend, schema, size, and the build reading it."""

    url: str
    backend: str
    schema_revision: str | None
    schema_head: str
    events: int
    goals: int
    file_bytes: int | None  # (SQLite: the file; None on a server)
    wal_bytes: int | None  # committed writes not yet checkpointed into the file
    benchledger_version: str
    standby: bool = False  # a PostgreSQL hot standby (a read-only replica): the next two say how far it has replayed
    replayed_at: str | None = None  # commit time (UTC) of the last transaction replayed from the primary
    replay_lag_seconds: float | None = None  # 0: it replayed all it received; else the seconds since replayed_at


@dataclass(frozen=True, slots=True)
class StandbyReplay(_Flat):
    """How far a PostgreSQL hot standby has replayed its primary (``serve``'s pages say it)."""

    replayed_at: str | None  # commit time (UTC) of the last transaction replayed; None before the first
    lag_seconds: float | None  # 0: it replayed all it received; else the seconds since replayed_at


# -- streamed listings ---------------------------------------------------------------------------

Row = TypeVar("Row")


class Listing(Generic[Row]):
    """Rows read from one snapshot as they are iterated (once), never all in memory.

    The snapshot is released when the rows run out, on :meth:`close`, at the
    end of a ``with`` block, or when the ledger that made the listing is closed;
    reading on after that raises :class:`~benchledger.errors.LedgerUnavailable`
    (the snapshot's connection is gone: the rows are not silently cut short).
    ``as_dict()`` reads the rest of the rows into the listing's ``--format json``
    document: :meth:`head`, then the rows under :attr:`rows_name`.
    """

    rows_name: ClassVar[str]

    def __init__(self, rows: Iterator[Row], close: Callable[[], None]) -> None:
        self._close: Callable[[], None] | None = close
        self._rows = self._closing(rows)

    def _closing(self, rows: Iterator[Row]) -> Iterator[Row]:
        try:
            for row in rows:
                yield row
                if self._close is None:  # closed while the caller held a row: the next one cannot be read
                    raise LedgerUnavailable(
                        "this listing was closed before it was read to its end (close(), the end of its `with`, "
                        "or the close of the ledger that made it): read it again from an open ledger"
                    )
        finally:
            self.close()

    def __iter__(self) -> Iterator[Row]:
        return self._rows

    @property
    def closed(self) -> bool:
        """True once its snapshot is released (read to its end, or closed)."""
        return self._close is None

    def close(self) -> None:
        close, self._close = self._close, None
        if close is not None:
            close()

    def __enter__(self) -> Listing[Row]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def head(self) -> dict[str, Any]:
        """The document's fields before its rows."""
        return {}

    def as_dict(self) -> dict[str, Any]:
        return {**self.head(), self.rows_name: [row.as_dict() for row in self]}  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class GoalRow(_Flat):
    """One goal as ``benchledger goals`` lists it: its stream head, current lifecycle and latest verdicts."""

    goal_id: str
    event_count: int
    last_position: int
    last_activity: str
    attempts: int | None  # how many attempts it holds (projections/attempts.py); None: not projected by this version yet
    attempt: str | None  # its latest attempt, whose lifecycle and verdicts follow (the goal's current ones)
    current_phase: str | None
    first_blocker: str | None
    claim_strength: str | None
    learning_status: str | None
    faulted: bool  # its lifecycle row is faulted (``show`` says why)
    archived: bool = False  # ``goals archive`` hid it (listed only when archived goals are asked for)


class Goals(Listing[GoalRow]):
    """Every goal, by id (``benchledger goals``)."""

    rows_name = "goals"


@dataclass(frozen=True, slots=True)
class Lifecycle(_Flat):
    """The goal's lifecycle after an event: phase, first blocker, next transition, and each gate (open: ``True``)."""

    current_phase: str | None
    first_blocker: str | None
    next_required_transition: str | None
    gates: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Outcome(_Flat):
    """A run's or result's outcome: its score status (``passed``, ``failed``, ``missing``, ...) and score."""

    score_status: str | None
    score: float | int | None


@dataclass(frozen=True, slots=True)
class RetractedBy(_Flat):
    """The retraction that withdrew an event: its id, its position, and why."""

    event_id: str
    position: int
    reason: str | None


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One event of a goal's history and the lifecycle after it (``None``: its lifecycle row is faulted)."""

    position: int
    stream_version: int
    recorded_at: str  # when the ledger recorded it (UTC)
    kind: str
    event_id: str
    attempt: str | None  # the attempt of the goal the event belongs to (None: its lifecycle row is faulted)
    summary: str
    outcome: Outcome | None
    artifact_time: str | None  # the time the artifact itself states, as written
    lifecycle: Lifecycle | None
    lifecycle_status: str
    phase_changed: bool
    gates_changed: list[str]
    retracted_by: RetractedBy | None = None  # the retraction (at or before an --as-of) that withdrew the event

    def as_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "stream_version": self.stream_version,
            "recorded_at": self.recorded_at,
            "kind": self.kind,
            "event_id": self.event_id,
            "attempt": self.attempt,
            "summary": self.summary,
            "outcome": None if self.outcome is None else self.outcome.as_dict(),
            "artifact_time": self.artifact_time,
            "lifecycle": None if self.lifecycle is None else self.lifecycle.as_dict(),
            "lifecycle_status": self.lifecycle_status,
            "phase_changed": self.phase_changed,
            "gates_changed": self.gates_changed,
            "retracted_by": None if self.retracted_by is None else self.retracted_by.as_dict(),
        }


class History(Listing[HistoryEntry]):
    """A goal's lifecycle history (``benchledger history``): the entries selected, oldest first."""

    rows_name = "entries"

    def __init__(
        self, goal_id: str, as_of_position: int | None, rows: Iterator[HistoryEntry], close: Callable[[], None],
        as_of_time: str | None = None, as_of_period: str | None = None, as_of_after_last_event: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(rows, close)
        self.goal_id = goal_id
        self.as_of_position = as_of_position  # the position ``as_of`` named, or None
        self.as_of_time = as_of_time  # the instant an ``as_of`` TIME named (recorded_at, UTC), or None
        self.as_of_period = as_of_period  # the day, hour, minute or second that TIME took in whole, or None
        # the ledger's last event (position, recorded_at) when ``as_of`` is after it: the current state, as without it
        self.as_of_after_last_event = as_of_after_last_event

    def head(self) -> dict[str, Any]:
        return {
            "goal_id": self.goal_id, "as_of_position": self.as_of_position, "as_of_time": self.as_of_time,
            "as_of_period": self.as_of_period, "as_of_after_last_event": self.as_of_after_last_event,
        }


# -- a goal's projections ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProjectionRow:
    """One stored (or, as of a position, replayed) row of a projection: its payload, or why it is faulted."""

    key: str
    position: int
    status: str  # "ok" or "faulted"
    payload: Any = None
    error: str | None = None

    @property
    def faulted(self) -> bool:
        return self.status == "faulted"

    def as_dict(self) -> dict[str, Any]:
        row = {"key": self.key, "position": self.position, "status": self.status}
        if self.faulted:
            row["error"] = self.error
        else:
            row["payload"] = self.payload
        return row


@dataclass(frozen=True, slots=True)
class Attempt(_Flat):
    """One attempt of a goal and its own lifecycle: the position of its last event, phase, first blocker and gates (or why faulted)."""

    attempt: str
    position: int
    status: str  # "ok" or "faulted"
    current_phase: str | None
    first_blocker: str | None
    next_required_transition: str | None
    gates: dict[str, Any] | None
    error: str | None


@dataclass(frozen=True, slots=True)
class GoalView:
    """A goal's projections (``benchledger show``): rows by projection name, how many rows each holds, and its latest attempts."""

    goal_id: str
    as_of_position: int | None
    head_position: int
    projections: dict[str, list[ProjectionRow]]
    counts: dict[str, int]
    attempts: list[Attempt]  # the latest first, at most 20 (``--projection attempt-lifecycle-state`` lists them all)
    as_of_time: str | None = None  # the instant an ``as_of`` TIME named (recorded_at, UTC)
    as_of_period: str | None = None  # the day, hour, minute or second that TIME took in whole
    as_of_after_last_event: dict[str, Any] | None = None  # the ledger's last event when ``as_of`` is after it (``History``)

    def as_dict(self) -> dict[str, Any]:
        return {
            "goal_id": self.goal_id,
            "as_of_position": self.as_of_position,
            "as_of_time": self.as_of_time,
            "as_of_period": self.as_of_period,
            "as_of_after_last_event": self.as_of_after_last_event,
            "head_position": self.head_position,
            "projections": {name: [row.as_dict() for row in rows] for name, rows in self.projections.items()},
            "counts": self.counts,
            "attempts": [attempt.as_dict() for attempt in self.attempts],
        }


# -- runs ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run(_Flat):
    """One run (an imported LoopX run-ledger row or an ingested compact run), in its latest version."""

    goal_id: str
    event_id: str
    position: int
    kind: str
    run_id: str | None
    benchmark_id: str | None
    case_id: str | None  # the benchmark task, without a leading "<benchmark_id>/"
    arm: str | None  # the mode as LoopX compares modes (lower case, "_" as "-")
    arm_spelling: str | None  # the mode (else arm id) as recorded
    arm_id: str | None
    mode: str | None
    job_name: str | None
    run_group_id: str | None
    status: str | None
    score_status: str | None
    official_score: float | int | None
    official_passed: bool | None
    failure_scope: str | None
    failure_class: str | None
    recorded_at: str | None
    archived: bool
    archived_at: str | None
    case_from: str | None  # "run" (its own task id or trial's) or "comparison" (its batch's comparison's task)
    superseded: bool
    retracted: bool
    countable: bool
    not_countable_reason: str | None

    @classmethod
    def of(cls, view: Mapping[str, Any] | None) -> Run | None:
        return None if view is None else cls(**view)


def _run_dict(run: Run | None) -> dict[str, Any] | None:
    return None if run is None else run.as_dict()


@dataclass(frozen=True, slots=True)
class CurrentRun:
    """A goal's benchmark, case and arm, with its current countable run (``None``: none counts)."""

    NESTED_RUNS: ClassVar[tuple[str, ...]] = ("current",)  # spread into columns by ``RunListing.to_pandas()``

    goal_id: str
    benchmark_id: str | None
    case_id: str | None
    arm: str | None
    run_count: int
    countable_run_count: int
    archived_run_count: int
    current: Run | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "goal_id": self.goal_id,
            "benchmark_id": self.benchmark_id,
            "case_id": self.case_id,
            "arm": self.arm,
            "run_count": self.run_count,
            "countable_run_count": self.countable_run_count,
            "archived_run_count": self.archived_run_count,
            "current": _run_dict(self.current),
        }


@dataclass(frozen=True, slots=True)
class RunPair:
    """A task's baseline and treatment runs side by side, paired by a comparison or a LoopX run group.

    ``*_found_by`` says how each side was found (``scenario``, ``claim_review``,
    ``earlier_run``, ``run_group``), ``*_missing`` why a side is missing.
    """

    NESTED_RUNS: ClassVar[tuple[str, ...]] = ("baseline", "treatment")  # spread into columns by ``RunListing.to_pandas()``

    goal_id: str
    benchmark_id: str | None
    case_id: str | None
    paired_by: str  # "comparison" or "run_group"
    pair_id: str
    position: int
    baseline_arm: str | None
    treatment_arm: str | None
    baseline: Run | None
    treatment: Run | None
    baseline_found_by: str | None
    treatment_found_by: str | None
    baseline_missing: str | None
    treatment_missing: str | None
    score_delta: float | int | None
    delta_from: str | None  # "comparison" (its official_task_score_delta) or "runs"

    def as_dict(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name) for name in self.__match_args__},
            "baseline": _run_dict(self.baseline),
            "treatment": _run_dict(self.treatment),
        }


@dataclass(frozen=True, slots=True)
class PassRate(_Flat):
    """Countable runs of one benchmark and arm: passed / (passed + failed); unscored runs stay out of the rate.

    ``archived``, ``superseded``, ``retracted`` and ``not_countable`` count the
    runs left out, by why (archived ones are in ``runs`` when asked for).
    """

    benchmark_id: str | None
    arm: str | None
    runs: int
    passed: int
    failed: int
    unscored: int
    archived: int
    superseded: int
    retracted: int
    not_countable: int
    pass_rate: float | None
    arm_spellings: list[str]


# What each ``runs`` listing lists (RunListing.name -> its row type).
LISTED: dict[str, type] = {"runs": Run, "current_runs": CurrentRun, "pairs": RunPair, "pass_rates": PassRate}


@dataclass(frozen=True, slots=True)
class RunListing(Generic[Row]):
    """A ``benchledger runs`` listing: ``items`` under ``name`` (``runs``, ``current_runs``, ``pairs`` or ``pass_rates``)."""

    name: str
    items: list[Row]
    counted: str | None = None  # pass rates: what they count, in a sentence

    def __iter__(self) -> Iterator[Row]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def as_dict(self) -> dict[str, Any]:
        head = {} if self.counted is None else {"counted": self.counted}
        return {**head, self.name: [item.as_dict() for item in self.items]}  # type: ignore[attr-defined]

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (needs the ``pandas`` extra), one column per ``--format json`` field.

        A pair's or current run's nested run is spread into ``baseline.<field>``,
        ``treatment.<field>`` or ``current.<field>`` columns. The columns are
        there even without a row. ``attrs`` holds ``listing`` (:attr:`name`) and,
        for pass rates, ``counted``.
        """
        attrs = {"listing": self.name, **({} if self.counted is None else {"counted": self.counted})}
        return _data_frame([_frame_row(item) for item in self.items], _frame_columns(LISTED[self.name]), attrs)


@dataclass(frozen=True, slots=True)
class Comparison(_Flat):
    """A treatment arm against a baseline arm on one benchmark, over the tasks both ran (docs/statistics.md).

    Rates and differences are fractions ([0, 1], [-1, 1]); the statistics are
    ``None`` (and the verdict ``no paired tasks``) when no task has evidence in both arms.
    """

    benchmark_id: str | None
    baseline_arm: str
    treatment_arm: str
    tasks: int
    baseline_trials: int
    treatment_trials: int
    baseline_only_tasks: list[str]
    treatment_only_tasks: list[str]
    baseline_pass_rate: float | None
    treatment_pass_rate: float | None
    difference: float | None
    interval: list[float] | None
    test: str | None
    p_value: float | None
    adjusted_p_value: float | None
    discordant: list[int] | None
    minimum_detectable_difference: float | None
    verdict: str
    note: str | None  # why there is no comparison ("no paired tasks")


@dataclass(frozen=True, slots=True)
class Comparisons:
    """``benchledger compare``: its scope (goals, as-of position, options) and one :class:`Comparison` per benchmark and arm pair."""

    scope: dict[str, Any]
    comparisons: list[Comparison]

    def __iter__(self) -> Iterator[Comparison]:
        return iter(self.comparisons)

    def __len__(self) -> int:
        return len(self.comparisons)

    def as_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "comparisons": [c.as_dict() for c in self.comparisons]}

    def to_pandas(self) -> Any:
        """The comparisons as a ``pandas.DataFrame`` (needs the ``pandas`` extra), one column per ``--format json`` field.

        ``interval`` and ``discordant`` stay two-item lists (``frame.interval.str[0]``
        is the lower bound); ``attrs["scope"]`` is :attr:`scope`.
        """
        return _data_frame([c.as_dict() for c in self.comparisons], Comparison.__match_args__, {"scope": self.scope})


# -- maintenance ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FaultedRow(_Flat):
    """A projection row whose reducer raised: the goal, the row, and the error."""

    goal_id: str
    projection: str
    key: str
    error: str


@dataclass(frozen=True, slots=True)
class StaleProjection(_Flat):
    """A projection whose rows an older (or newer) reducer version stored."""

    projection: str
    stored_version: int
    code_version: int | None
    rows: int


@dataclass(frozen=True, slots=True)
class SchemaUpgrade(_Flat):
    """A ledger's schema after ``db upgrade`` (or opening it to write): the revision it is at, the one it was at when
    it was migrated (``None``: nothing was), the copy kept of a SQLite file as it was (``None`` on a server), and
    whether ``db upgrade`` made an empty database (or a SQLite file that did not exist) a new, empty ledger."""

    where: str
    from_revision: str | None
    revision: str | None
    backup: str | None
    created: bool = False

    def notice(self) -> str:
        """What was migrated, in a line (a command prints it on stderr)."""
        if self.created:
            return f"created a new, empty ledger in {self.where}"
        if self.from_revision is None:
            return f"the ledger at {self.where} is at schema revision {self.revision}"
        kept = f"; the file as it was is kept as {self.backup}" if self.backup is not None else ""
        return (
            f"upgraded the ledger at {self.where} from schema revision {self.from_revision} to {self.revision}{kept} "
            f"(a benchledger older than revision {self.revision} cannot open it)"
        )


@dataclass(frozen=True, slots=True)
class FoldedByOtherVersions(_Flat):
    """``goals`` goals (the first by id: ``first_goal``) folded by a benchledger whose projection versions differ from this one's.

    ``differences``: ``{"projection", "folded_version", "code_version"}`` each, a version ``None`` where that build
    (``folded_version``) or this one (``code_version``) does not compute the projection.
    """

    goals: int
    first_goal: str
    differences: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class MissingProjection(_Flat):
    """A projection this benchledger keeps that ``goals`` goals have no rows of (stored before it existed)."""

    projection: str
    goals: int


@dataclass(frozen=True, slots=True)
class LaggingGoal(_Flat):
    """A goal whose projections reflect an earlier position than its last event's."""

    goal_id: str
    reflects_position: int | None
    head_position: int


@dataclass(frozen=True, slots=True)
class StatusReport:
    """``benchledger status``: what ``replay`` would fix (``ok``: nothing)."""

    ok: bool
    stale: list[StaleProjection]
    folded_by_other_versions: list[FoldedByOtherVersions]
    missing: list[MissingProjection]
    faulted: list[FaultedRow]
    lagging_goals: list[LaggingGoal]

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "stale": [s.as_dict() for s in self.stale],
            "folded_by_other_versions": [f.as_dict() for f in self.folded_by_other_versions],
            "missing": [m.as_dict() for m in self.missing],
            "faulted": _capped(self.faulted),
            "lagging_goals": _capped(self.lagging_goals),
            "faulted_count": len(self.faulted),
            "lagging_goal_count": len(self.lagging_goals),
        }


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """``benchledger replay``: what was folded, what changed, and how long it took."""

    goals: int
    events: int
    rows: int
    rows_changed: int
    counts_repaired: int  # stored row counts that were wrong
    heads_repaired: int  # stream heads that were not their goal's last event (or missing, or without events)
    log_nodes_repaired: int  # Merkle log nodes that were not what the events imply (or missing, or extra)
    faulted: list[FaultedRow]
    seconds: float
    events_per_second: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "goals": self.goals,
            "events": self.events,
            "rows": self.rows,
            "rows_changed": self.rows_changed,
            "counts_repaired": self.counts_repaired,
            "heads_repaired": self.heads_repaired,
            "log_nodes_repaired": self.log_nodes_repaired,
            "faulted": _capped(self.faulted),
            "seconds": self.seconds,
            "events_per_second": self.events_per_second,
            "faulted_count": len(self.faulted),
        }


@dataclass(frozen=True, slots=True)
class AuditProblem(_Flat):
    """One thing an audit found wrong: its kind, where (goal, position), and what."""

    kind: str
    goal_id: str | None
    position: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class AuditReport:
    """``benchledger audit``: what was checked, the digest of the history, and every problem found (``ok``: none)."""

    ok: bool
    events_checked: int
    goals_checked: int
    projections_checked: int
    digest: str
    problems: list[AuditProblem]
    expected_digest: str | None = None  # the --expect-digest given
    expected_digest_verified: bool | None = None  # whether the history still has it (None: none given)
    projections_scope: str = "checked"  # "not checked": a history-only audit (``audit --history-only``) refolded no projection

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "events_checked": self.events_checked,
            "goals_checked": self.goals_checked,
            "projections_checked": self.projections_checked,
            "projections": self.projections_scope,
            "digest": self.digest,
            "expected_digest": self.expected_digest,
            "expected_digest_verified": self.expected_digest_verified,
            "problems": _capped(self.problems),
            "problem_count": len(self.problems),
            # (rows an older benchledger stored, which `replay` rebuilds: not a sign of tampering)
            "outdated_count": sum(p.kind == "projection_outdated" for p in self.problems),
        }


# -- writes --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetractedEvent(_Flat):
    """An event a retraction withdraws: its id, position, kind and what ``history`` says of it."""

    event_id: str
    position: int
    kind: str
    summary: str


@dataclass(frozen=True, slots=True)
class Retraction:
    """The retraction ``retract`` appended (``dry_run``: would append): where, which events it withdraws, why, and the
    goal's lifecycle and verdicts before and after it."""

    goal_id: str
    event_id: str
    position: int
    retracts: list[str]
    reason: str
    dry_run: bool = False
    events: list[RetractedEvent] = field(default_factory=list)
    lifecycle_before: Lifecycle | None = None
    lifecycle_after: Lifecycle | None = None
    # The goal's claim strength and learning status (as ``goals`` lists them) before and after.
    verdicts_before: dict[str, Any] = field(default_factory=dict)
    verdicts_after: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "goal_id": self.goal_id, "event_id": self.event_id, "position": self.position, "retracts": self.retracts,
            "reason": self.reason, "dry_run": self.dry_run, "events": [e.as_dict() for e in self.events],
            "lifecycle_before": None if self.lifecycle_before is None else self.lifecycle_before.as_dict(),
            "lifecycle_after": None if self.lifecycle_after is None else self.lifecycle_after.as_dict(),
            "verdicts_before": self.verdicts_before, "verdicts_after": self.verdicts_after,
        }


@dataclass(frozen=True, slots=True)
class Refusal(_Flat):
    """An input refused, and why: nothing was written."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class LoopxImport:
    """``benchledger import-loopx``: what was read, and what was (or, ``dry_run``, would be) appended; or every refusal."""

    dry_run: bool
    goal_id: str
    source_format: str
    rows_read: int
    duplicate_rows: int
    rows_without_artifacts: int
    events_appended: int
    events_already_present: int
    refused: list[Refusal]
    archived_goals: list[str] = field(default_factory=list)  # the goal, when archived and this import appended to it

    @property
    def ok(self) -> bool:
        return not self.refused

    def as_dict(self) -> dict[str, Any]:
        document = {
            "ok": self.ok,
            "dry_run": self.dry_run,
            "goal_id": self.goal_id,
            "source_format": self.source_format,
            "rows_read": self.rows_read,
            "duplicate_rows": self.duplicate_rows,
            "rows_without_artifacts": self.rows_without_artifacts,
            "events_appended": self.events_appended,
            "events_already_present": self.events_already_present,
            "refused": _capped(self.refused),
        }
        if self.refused:
            document["refused_count"] = len(self.refused)
        if self.archived_goals:
            document["archived_goals"] = list(self.archived_goals)
        return document


@dataclass(frozen=True, slots=True)
class Review:
    """A review's LoopX-compatible payload (``as_dict()``, what the review command prints as JSON)."""

    name: str
    payload: dict[str, Any]
    # Kept with a goal (``keep_review``): the goal, when it is archived and the review appended to it, as
    # ``IngestOutcome.archived_goals`` (the listings that leave the goal out leave the review's evidence out too).
    archived_goals: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.payload.get("ok") is True

    def as_dict(self) -> dict[str, Any]:
        return self.payload


# -- proofs (docs/proofs.md) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TreeHead(_Flat):
    """``benchledger checkpoint``: the tree of the first ``tree_size`` events, as a C2SP checkpoint (``note``: its note text, or signed note)."""

    origin: str
    tree_size: int
    root_hash: str  # hex
    note: str


@dataclass(frozen=True, slots=True)
class SignedCheckpoint(_Flat):
    """A checkpoint ``checkpoint --key`` signed and kept (``checkpoints`` lists them): its number, tree, signed note, when."""

    number: int
    tree_size: int
    root_hash: str
    note: str
    recorded_at: str


@dataclass(frozen=True, slots=True)
class InclusionProof(_Flat):
    """One event's inclusion proof: its leaf (its chain hash, hashed as RFC 9162 hashes a leaf) and the path to the root."""

    event_id: str
    goal_id: str
    position: int
    leaf_index: int
    chain_hash: str
    leaf_hash: str
    proof: list[str]  # hex, from the leaf up


@dataclass(frozen=True, slots=True)
class InclusionProofs:
    """``benchledger prove``: inclusion proofs of events in the tree of the first ``tree_size`` events, whose root is ``root_hash``."""

    tree_size: int
    root_hash: str
    checkpoint: str | None  # the signed note of the checkpoint proved against (prove --checkpoint N)
    proofs: list[InclusionProof]

    def as_dict(self) -> dict[str, Any]:
        return {"tree_size": self.tree_size, "root_hash": self.root_hash, "checkpoint": self.checkpoint, "proofs": [p.as_dict() for p in self.proofs]}


@dataclass(frozen=True, slots=True)
class ConsistencyProof(_Flat):
    """``benchledger prove-consistency``: the tree of ``old_size`` events is a prefix of the tree of ``new_size`` (RFC 9162 §2.1.4)."""

    old_size: int
    new_size: int
    old_root: str
    new_root: str
    proof: list[str]


@dataclass(frozen=True, slots=True)
class ConsistencyCheck(_Flat):
    """``benchledger verify-consistency``: what was checked (``signatures_checked``: by which key, or none)."""

    origin: str
    old_size: int
    new_size: int
    old_root: str
    new_root: str
    signatures_checked: str | None


@dataclass(frozen=True, slots=True)
class ClaimBundle:
    """``benchledger publish``: the claim bundle document (docs/proofs.md, "Claim bundles"), as written to its file; and the
    kept checkpoint it is proved against, which publishing signed now or found kept (the log had not grown since)."""

    document: dict[str, Any]
    checkpoint: SignedCheckpoint
    checkpoint_reused: bool

    def as_dict(self) -> dict[str, Any]:
        return self.document


@dataclass(frozen=True, slots=True)
class ClaimCheck(_Flat):
    """``benchledger verify``: a claim bundle that held, what it was checked against, what was checked and what cannot be."""

    ok: bool
    goal_id: str
    comparison_id: str
    origin: str
    tree_size: int
    root_hash: str
    signed_by: list[str]
    events: int
    reviews: list[str]
    claim_strength: str | None
    checked: list[str]
    not_checked: list[str]
