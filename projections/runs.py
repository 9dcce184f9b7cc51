"""The runs model: runs, arms, cases, pairs and pass rates, the one way every listing counts them.

Two event kinds describe a benchmark run:

* ``benchmark_run_ledger_row_v0``: a row of a LoopX run ledger
  (``benchmark_run_ledger_v0``), imported verbatim by ``benchledger import-loopx``.
  It is LoopX's own reduction of a run: it names its arm, status, score status,
  archive state and attempt-accounting flags.
* ``run``: a compact ``benchmark_run_v0`` ingested by benchledger. Compaction
  keeps no run id, arm, status or accounting, so those are derived here the way
  LoopX derives them when it writes a ledger row (status and score status from
  the score, the runner's return status and the trial progress).

What the listings, the report, ``compare`` and the library read (docs/interop.md, "The runs model"):

* **case**: the benchmark *task*: the run's own ``case_id`` (``task_id``), else its
  first compacted trial's ``task_id``, else the ``task_id`` of the comparison its
  batch holds. A leading ``<benchmark_id>/`` is dropped, so
  ``terminal-bench@2.0/fix-git`` and a trial's ``fix-git`` are one case. Never
  the job name (it names the arm too).
* **arm**: a LoopX row's ``arm_id`` (else its mode), a compact run's mode,
  spelt as LoopX compares modes (D-MODE: lower case, ``_`` as ``-``), so
  ``codex_app_server_goal_baseline`` and ``codex-app-server-goal-baseline`` are
  one arm; the spellings recorded are kept (``arm_spelling``).
* **countable**: a run counts in a pass rate when it is the current version of
  itself (not *superseded* by a later import of the same LoopX row), not
  *retracted*, not *archived*, not still running, and LoopX's attempt
  accounting does not exclude it (:func:`not_countable_reason`). A run left out
  for several of these names one: the archive last, so that a run whose reason
  is ``archived`` is one that nothing else leaves out, which is what
  ``--include-archived`` counts (:func:`counts_in_rate`).
* **pair**: :func:`pairs`.

Pure functions over events (anything with ``kind``, ``payload``, ``event_id``,
``position``, ``goal_id`` and ``recorded_at``); no database.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from benchledger.projections import claim_review, retraction
from benchledger.projections.batch_manifest import BATCH_KIND
from benchledger.projections.run_classifiers import mode_spelling

ROW_KIND = "benchmark_run_ledger_row_v0"
# The LoopX run ledger whose rows are imported as ROW_KIND events.
LOOPX_RUN_LEDGER_SCHEMA = "benchmark_run_ledger_v0"
RUN_KIND = "run"
RUN_KINDS = (ROW_KIND, RUN_KIND)
# The compact comparison that pairs a baseline run with a treatment run (paired_runs).
COMPARISON_KIND = "comparison"

# A run row is only meaningful with these fields: they identify it and order it.
ROW_IDENTITY_FIELDS = ("run_id", "benchmark_id", "case_id", "recorded_at")
# LoopX attempt-accounting flags that, when false, take a run out of the count.
NOT_COUNTABLE_FLAGS = ("case_attempt_countable", "benchmark_budget_countable")
RUN_STATUSES = ("completed", "recorded", "blocked", "running")
# The score statuses a run gets when it says none of its own (a LoopX row may name others).
SCORE_STATUSES = ("passed", "failed", "missing")
# The score statuses a pass rate counts (any other is unscored).
SCORED_OUTCOMES = ("passed", "failed")
# Arm roles in a LoopX run group, from the arm id (see paired_runs).
BASELINE, TREATMENT = "baseline", "treatment"


class EventLike(Protocol):
    """A run or comparison event, as the runs query reads it."""

    @property
    def event_id(self) -> str: ...

    @property
    def goal_id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def position(self) -> int: ...

    @property
    def recorded_at(self) -> str: ...

    @property
    def payload(self) -> Any: ...


def utc_instant(text: Any) -> datetime | None:
    """An ISO-8601 time with a UTC offset (``Z`` included) as an aware UTC datetime; else ``None``.

    Times without an offset are refused: LoopX writes local times with their
    offset, and a naive time cannot be ordered against them.
    """
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo is not None else None


def row_problems(row: Any) -> list[str]:
    """Why a LoopX run-ledger row cannot be imported (empty when it can)."""
    if not isinstance(row, Mapping):
        return ["a run row must be a JSON object"]
    problems = [f"{name} is missing or not a non-empty string" for name in ROW_IDENTITY_FIELDS if not _text(row.get(name))]
    if _text(row.get("recorded_at")) and utc_instant(row["recorded_at"]) is None:
        problems.append(f"recorded_at {row['recorded_at']!r} is not an ISO-8601 time with a UTC offset")
    return problems


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _number(value: Any) -> float | int | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def compact_run_score(run: Mapping[str, Any]) -> tuple[float | int | None, bool | None]:
    """The official score of a compact run and whether it passed (``official_task_score`` first)."""
    task_score = run.get("official_task_score")
    if isinstance(task_score, Mapping) and _number(task_score.get("value")) is not None:
        value = task_score["value"]
        passed = _flag(task_score.get("passed"))
        return value, passed if passed is not None else value >= 1
    value = _number(run.get("official_score"))
    return (value, value >= 1) if value is not None else (None, None)


def compact_run_status(run: Mapping[str, Any], score: float | int | None) -> str:
    """``running`` while trials run, ``completed`` once scored or returned, else ``recorded``."""
    progress = run.get("progress")
    running = _number(progress.get("n_running_trials")) if isinstance(progress, Mapping) else None
    if running is not None and running > 0:
        return "running"
    if score is not None or _text(run.get("runner_return_status")):
        return "completed"
    return "recorded"


def compact_run_score_status(run: Mapping[str, Any], score: float | int | None, passed: bool | None) -> str:
    """An explicit, non-``completed`` ``official_score_status`` wins; else missing / passed / failed."""
    explicit = _text(run.get("official_score_status"))
    if explicit and explicit != "completed":
        return explicit
    if score is None:
        return "missing"
    return "passed" if passed else "failed"


def run_outcome(kind: str, payload: Mapping[str, Any]) -> tuple[str | None, float | int | None, bool | None]:
    """Score status, official score and whether it passed: a LoopX row's own, a compact run's (or result's) derived."""
    if kind == ROW_KIND:
        return _text(payload.get("score_status")), _number(payload.get("official_score")), _flag(payload.get("official_passed"))
    score, passed = compact_run_score(payload)
    return compact_run_score_status(payload, score, passed), score, passed


def score_text(score_status: str | None, score: float | int | None) -> str:
    """A run's outcome in a few characters: ``passed 1``, ``failed 0``, ``missing``."""
    if score is None:
        return score_status or ""
    return f"{score_status} {score:g}" if score_status else f"{score:g}"


# Why a run stays out of a pass rate, most telling first (a run without a score is *unscored*, not excluded). LoopX's
# attempt-accounting flags (``case_attempt_countable=false``, ...) come after ``running`` and before ``archived``: the
# archive is named only when nothing else leaves the run out, since --include-archived lifts it and nothing else.
RETRACTED, SUPERSEDED, ARCHIVED, RUNNING = "retracted", "superseded", "archived", "running"
EXCLUSION_ORDER = (RETRACTED, SUPERSEDED, RUNNING, ARCHIVED)
# How a pair's side was found (pairs): the comparison's named arm in its batch, the run the claim
# review reads as that side, the latest countable run of that task and arm before it, a LoopX run group.
BY_SCENARIO, BY_CLAIM_REVIEW, BY_EARLIER_RUN, BY_RUN_GROUP = "scenario", "claim_review", "earlier_run", "run_group"


def case_of(benchmark_id: str | None, value: Any) -> str | None:
    """The case (task) a ``case_id`` / ``task_id`` names, without a leading ``<benchmark_id>/``."""
    text = _text(value)
    if text is None:
        return None
    text = text.strip()
    if benchmark_id and text.startswith(benchmark_id + "/"):
        text = text[len(benchmark_id) + 1:]
    return text or None


def arm_of(spelling: Any) -> str | None:
    """The arm a mode (or arm id) names, spelled as LoopX compares modes (D-MODE)."""
    text = _text(spelling)
    return mode_spelling(text.strip()) if text else None


def _own_case(kind: str, payload: Mapping[str, Any], benchmark_id: str | None) -> str | None:
    if kind == ROW_KIND:
        return case_of(benchmark_id, payload.get("case_id"))
    own = _text(payload.get("case_id")) or _text(payload.get("task_id"))
    trials = payload.get("trials")
    if own is None and isinstance(trials, list):
        own = next((_text(t.get("task_id")) for t in trials if isinstance(t, Mapping) and _text(t.get("task_id"))), None)
    return case_of(benchmark_id, own)


def not_countable_reason(view: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
    """Why LoopX's accounting leaves this run out (running, an attempt-accounting flag, archived); ``None``: it counts.

    The archive comes last: an archived run that is also still running or not a countable attempt is
    left out for that (``view["archived"]`` still says it is archived), so ``archived`` names the runs
    that ``--include-archived`` counts (:func:`counts_in_rate`). Naming the archive first lost the other
    reason, and the flag counted 9 of the public ledger's SkillsBench rows LoopX does not count.
    """
    if view["status"] == RUNNING:
        return RUNNING
    for flag in NOT_COUNTABLE_FLAGS:
        if payload.get(flag) is False:
            return f"{flag}=false"
    if view["archived"]:
        return ARCHIVED
    return None


def counts_in_rate(view: Mapping[str, Any], *, include_archived: bool = False) -> bool:
    """Whether a pass rate (``runs --summary``, ``compare``) counts the run: it is countable, or (``include_archived``)
    archived and left out for nothing else (its reason is ``archived``: :func:`not_countable_reason`)."""
    return bool(view["countable"]) or (include_archived and view["not_countable_reason"] == ARCHIVED)


def run_view(event: EventLike) -> dict[str, Any]:
    """The ``runs`` record of one run event (keys are the ``--format json`` field names)."""
    payload = event.payload if isinstance(event.payload, Mapping) else {}
    get = payload.get
    benchmark = _text(get("benchmark_id"))
    # (one dict built at once, in the order of its keys: it is built for every run the model reads)
    if event.kind == ROW_KIND:
        arm_id, mode = _text(get("arm_id")), _text(get("mode"))
        spelling = arm_id or mode
        score_status, score, passed = run_outcome(ROW_KIND, payload)
        archived_at = _text(get("archived_at"))
        case = _own_case(ROW_KIND, payload, benchmark)
        view = {
            "goal_id": event.goal_id, "event_id": event.event_id, "position": event.position, "kind": event.kind,
            "run_id": _text(get("run_id")), "benchmark_id": benchmark, "case_id": case, "arm": arm_of(spelling),
            "arm_spelling": spelling, "arm_id": arm_id, "mode": mode, "job_name": _text(get("job_name")),
            "run_group_id": _text(get("run_group_id")), "status": _text(get("status")),
            "score_status": score_status, "official_score": score, "official_passed": passed,
            "failure_scope": _text(get("failure_scope")), "failure_class": _text(get("failure_class")),
            "recorded_at": _text(get("recorded_at")) or event.recorded_at,
            "archived": get("archive_state") == "archived" or archived_at is not None, "archived_at": archived_at,
        }
    else:
        score_status, score, passed = run_outcome(RUN_KIND, payload)
        mode = _text(get("mode"))
        case = _own_case(RUN_KIND, payload, benchmark)
        view = {
            "goal_id": event.goal_id, "event_id": event.event_id, "position": event.position, "kind": event.kind,
            # A compact run carries no run id: its event id stands in.
            "run_id": event.event_id, "benchmark_id": benchmark, "case_id": case, "arm": arm_of(mode),
            "arm_spelling": mode, "arm_id": None, "mode": mode, "job_name": _text(get("job_name")),
            "run_group_id": None, "status": compact_run_status(payload, score),
            "score_status": score_status, "official_score": score, "official_passed": passed,
            "failure_scope": None, "failure_class": None, "recorded_at": event.recorded_at, "archived": False, "archived_at": None,
        }
    reason = not_countable_reason(view, payload)
    view["case_from"] = "run" if case else None
    view["superseded"] = view["retracted"] = False
    view["countable"] = reason is None
    view["not_countable_reason"] = reason
    return view


def _exclude(view: dict[str, Any], why: str) -> None:
    """Take ``view`` out of the count for ``why``, keeping the most telling reason (EXCLUSION_ORDER)."""
    view[why] = True
    view["countable"] = False
    current = view["not_countable_reason"]
    if current is None or current not in EXCLUSION_ORDER or EXCLUSION_ORDER.index(why) < EXCLUSION_ORDER.index(current):
        view["not_countable_reason"] = why


def version_key(view: Mapping[str, Any]) -> tuple[str, str, str]:
    """What identifies a run across versions: a LoopX ledger upserts a row by run id, and
    importing the updated file appends the new version as a new event, which supersedes the older."""
    return (view["goal_id"], view["kind"], view["run_id"] if view["kind"] == ROW_KIND else view["event_id"])


class NewestFirst:
    """Run views of events read newest first (descending position), marked superseded or retracted.

    Read that way, a goal's retractions come before what they retract and a
    run's later version before its earlier ones, so one pass decides both
    while remembering only retracted ids and the LoopX run ids seen (compact
    runs are never superseded). A retracted version does not supersede: the
    version before it is the run's current one again.
    """

    def __init__(self) -> None:
        self._retracted: set[str] = set()
        self._versions_seen: set[tuple[str, str, str]] = set()

    def view(self, event: EventLike) -> dict[str, Any] | None:
        """The view of ``event`` if it is a run (``None`` for a retraction or anything else)."""
        if event.kind == retraction.KIND:
            self._retracted.update(retraction.retracted_by(event))
            return None
        if event.kind not in RUN_KINDS:
            return None
        view = run_view(event)
        if event.event_id in self._retracted:
            _exclude(view, RETRACTED)
        elif event.kind == ROW_KIND:
            key = version_key(view)
            if key in self._versions_seen:
                _exclude(view, SUPERSEDED)
            self._versions_seen.add(key)
        return view


def marked_views(events_oldest_first: Iterable[EventLike]) -> list[dict[str, Any]]:
    """Every run view of ``events`` (position order), superseded and retracted ones marked, oldest first."""
    marker = NewestFirst()
    # (only runs and retractions reach the marker: the model's events are as many comparisons and batches again)
    found = [marker.view(e) for e in reversed(list(events_oldest_first)) if e.kind in MARKED_KINDS]
    found.reverse()  # (in place, not reversed(found): mypyc cannot compile a comprehension over that, benchmarks/compiled_fold.py)
    return [v for v in found if v is not None]


# What NewestFirst reads: runs, and the retractions that mark them.
MARKED_KINDS = frozenset((*RUN_KINDS, retraction.KIND))


def _time_key(view: Mapping[str, Any]) -> tuple[datetime, int]:
    return (utc_instant(view["recorded_at"]) or datetime.min.replace(tzinfo=UTC), view["position"])


def listing_order(view: Mapping[str, Any]) -> tuple[Any, ...]:
    return (view["goal_id"], view["benchmark_id"] or "", view["case_id"] or "", _time_key(view))


def matches(
    view: Mapping[str, Any],
    *,
    benchmark: str | None = None,
    case: str | None = None,
    arm: str | None = None,
    mode: str | None = None,
    status: str | None = None,
) -> bool:
    """Whether a run (or pair) passes the filters.

    ``case`` matches with or without the ``<benchmark_id>/`` prefix; ``arm`` and
    ``mode`` match in any spelling (compared as arms); ``status`` the run status or the score status.
    """
    return (
        (benchmark is None or view["benchmark_id"] == benchmark)
        and (case is None or view["case_id"] == case_of(view["benchmark_id"], case))
        and (arm is None or view["arm"] == arm_of(arm))
        and (mode is None or arm_of(view["mode"]) == arm_of(mode))
        and (status is None or status in (view["status"], view["score_status"]))
    )


def _latest(candidates: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    candidates = list(candidates)
    if not candidates:
        return None
    latest = max(candidates, key=_time_key)  # (apart: inside dict() the type checker reads max's type from dict's argument)
    return dict(latest)


def _case_arm(view: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """The goal, benchmark, case and arm a run (or a :func:`current_runs` entry) is of, ``""`` for none."""
    return (view["goal_id"], view["benchmark_id"] or "", view["case_id"] or "", view["arm"] or "")


def current_runs(views: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per goal, benchmark, case and arm with its current countable run (rule: docs/interop.md)."""
    arms: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for view in views:
        arms.setdefault(_case_arm(view), []).append(view)
    entries = []
    for (goal, benchmark, case, arm), runs in sorted(arms.items()):
        countable = [v for v in runs if v["countable"]]
        entries.append(
            {
                "goal_id": goal,
                "benchmark_id": benchmark or None,
                "case_id": case or None,
                "arm": arm or None,
                "run_count": len(runs),
                "countable_run_count": len(countable),
                "archived_run_count": sum(1 for v in runs if v["archived"]),
                "current": _latest(countable),
            }
        )
    return entries


class PassRateCounts:
    """Pass rates per benchmark × arm, counted one run at a time (memory: one entry per benchmark and arm).

    A run counts when it is countable (``include_archived``: archived runs
    that nothing else leaves out count too, :func:`counts_in_rate`); ``passed`` /
    ``failed`` follow the score status and the rate is passed / (passed + failed);
    a counted run with another score status (``missing``, a LoopX probe's own) is
    *unscored*. Runs left out are counted once each, by the reason the run names
    (:func:`not_countable_reason`): ``archived``, ``superseded``, ``retracted``,
    ``not_countable`` (running, or excluded by LoopX's attempt accounting, archived
    or not). ``archived`` is therefore what ``include_archived`` moves into ``runs``
    (it still counts them there).
    """

    COLUMNS = ("runs", "passed", "failed", "unscored", ARCHIVED, SUPERSEDED, RETRACTED, "not_countable")

    def __init__(self, *, include_archived: bool = False) -> None:
        self.include_archived = include_archived
        self._groups: dict[tuple[str | None, str | None], dict[str, int]] = {}
        self._spellings: dict[tuple[str | None, str | None], set[str]] = {}

    def add(self, view: Mapping[str, Any]) -> None:
        key = (view["benchmark_id"], view["arm"])
        group = self._groups.setdefault(key, dict.fromkeys(self.COLUMNS, 0))
        if view["arm_spelling"]:
            self._spellings.setdefault(key, set()).add(view["arm_spelling"])
        reason = view["not_countable_reason"]
        if counts_in_rate(view, include_archived=self.include_archived):
            group["runs"] += 1
            outcome = view["score_status"]
            group[outcome if outcome in SCORED_OUTCOMES else "unscored"] += 1
        if reason in (ARCHIVED, SUPERSEDED, RETRACTED):
            group[reason] += 1
        elif reason is not None:
            group["not_countable"] += 1

    def entries(self) -> list[dict[str, Any]]:
        """One entry per benchmark and arm, by benchmark then arm."""
        return [
            {
                "benchmark_id": benchmark, "arm": arm, **counts,
                "pass_rate": rate(counts["passed"], counts["failed"]),
                "arm_spellings": sorted(self._spellings.get((benchmark, arm), ())),
            }
            for (benchmark, arm), counts in sorted(self._groups.items(), key=lambda item: (item[0][0] or "", item[0][1] or ""))
        ]


# Where a run names its failure labels: a compact run's failure attribution, a LoopX row's own labels.
FAILURE_LABEL_FIELDS = {RUN_KIND: "failure_attribution_labels", ROW_KIND: "failure_labels"}


class FailureLabelCounts:
    """Runs per failure label and arm, counted one run at a time, over the runs a listing shows that are not archived
    (as the pass rates count them: an archived LoopX run was set aside, a superseded one is counted in its current
    version, a retracted one not at all). A label that is no text is counted as its JSON."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str | None], int] = {}

    def add(self, view: Mapping[str, Any], payload: Any) -> None:
        if not is_shown(view) or view["archived"] or not isinstance(payload, Mapping):
            return
        listed = payload.get(FAILURE_LABEL_FIELDS[view["kind"]])
        for label in listed if isinstance(listed, list) else []:
            key = (label if isinstance(label, str) else json.dumps(label), view["arm"])
            self._counts[key] = self._counts.get(key, 0) + 1

    def entries(self) -> list[dict[str, Any]]:
        """One entry per label and arm, by label then arm."""
        ordered = sorted(self._counts.items(), key=lambda item: (item[0][0], item[0][1] or ""))
        return [{"label": label, "arm": arm, "runs": n} for (label, arm), n in ordered]


def rate(passed: int, failed: int) -> float | None:
    """passed / (passed + failed), to four places; ``None`` without a scored run."""
    return round(passed / (passed + failed), 4) if passed + failed else None


def pass_rates(views: Iterable[Mapping[str, Any]], *, include_archived: bool = False) -> list[dict[str, Any]]:
    """:class:`PassRateCounts` over ``views``."""
    counts = PassRateCounts(include_archived=include_archived)
    for view in views:
        counts.add(view)
    return counts.entries()


def current_pass_rates(
    views: Iterable[Mapping[str, Any]], *, arm: str | None = None, mode: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """``runs --current --summary``: :class:`PassRateCounts` of each case's current countable run per arm, and of the runs left out.

    ``views``: every run of the cases chosen, superseded and retracted ones included (the model's runs).
    A case's current run (:func:`current_runs`) is counted in the rate; a run that is not countable is
    counted by why, as ``runs --summary`` counts it, so the two agree on every run left out and an arm
    whose every run was left out is listed with none counted. A case's earlier countable runs are in
    neither: the current run replaces them. ``arm`` chooses the arms (an arm is the same row with or
    without it); ``mode`` and ``status`` the cases and arms whose current run matches, as ``runs
    --current`` lists them, and only their runs are counted.
    """
    views = [v for v in views if arm is None or v["arm"] == arm_of(arm)]
    entries = current_runs(filter(is_shown, views))
    current = {e["current"]["event_id"] for e in entries if e["current"] is not None}
    chosen = None if mode is None and status is None else {
        _case_arm(e) for e in entries if e["current"] is not None and matches(e["current"], mode=mode, status=status)
    }
    counts = PassRateCounts()
    for view in views:
        if (chosen is None or _case_arm(view) in chosen) and (view["event_id"] in current or not view["countable"]):
            counts.add(view)
    return counts.entries()


def arm_role(arm: str | None) -> str | None:
    """The role a LoopX arm id names: ``treatment`` if it says so, else ``baseline`` if it says so, else none.

    LoopX's arm ids carry their role (``codex_loopx_treatment``,
    ``codex_goal_mode_baseline``; ``loopx-blind-loop-treatment-baseline-safe``
    is a treatment that keeps the baseline safe); probes and observations name neither.
    """
    text = (arm or "").lower()
    return TREATMENT if TREATMENT in text else BASELINE if BASELINE in text else None


def _comparison_task(comparison: EventLike) -> tuple[str | None, str | None]:
    payload = comparison.payload if isinstance(comparison.payload, Mapping) else {}
    benchmark = _text(payload.get("benchmark_id"))
    return benchmark, case_of(benchmark, payload.get("task_id") or payload.get("case_id"))


def _batches(events: Sequence[EventLike]) -> dict[str, list[str]]:
    """Each event id → the members of the latest batch that lists it (batches say what was ingested together)."""
    batch_of: dict[str, list[str]] = {}
    for event in events:
        if event.kind == BATCH_KIND and isinstance(event.payload, Mapping) and isinstance(event.payload.get("members"), list):
            members = [m["event_id"] for m in event.payload["members"] if isinstance(m, Mapping) and isinstance(m.get("event_id"), str)]
            for event_id in members:
                batch_of[event_id] = members
    return batch_of


@dataclass(frozen=True)
class RunsModel:
    """Every run (oldest first; superseded and retracted ones marked) and every pair, of the events it was built from."""

    runs: list[dict[str, Any]]
    pairs: list[dict[str, Any]]


def runs_model(events: Iterable[EventLike]) -> RunsModel:
    """The runs and pairs of ``events`` (run, comparison, batch and retraction events, in position order).

    A compact run that names no task of its own takes the task of the comparison
    its batch holds (``case_from``: ``comparison``).
    """
    events = list(events)
    runs = marked_views(events)
    by_id = {v["event_id"]: v for v in runs}
    batch_of = _batches(events)
    retracted = retraction.retracted_ids([e for e in events if e.kind == retraction.KIND])
    comparisons = [e for e in events if e.kind == COMPARISON_KIND and e.event_id not in retracted]
    tasks = {comparison.event_id: _comparison_task(comparison) for comparison in comparisons}
    for comparison in comparisons:
        benchmark, task = tasks[comparison.event_id]
        for member in batch_of.get(comparison.event_id, ()):
            view = by_id.get(member)
            if task and view is not None and view["case_id"] is None and view["benchmark_id"] in (benchmark, None):
                view["case_id"], view["case_from"] = task, "comparison"
    payloads = {e.event_id: e.payload for e in events if e.kind == RUN_KIND}
    earlier = _EarlierRuns(runs)
    pairs = [
        _comparison_pair(c, tasks[c.event_id], [by_id[i] for i in dict.fromkeys(batch_of.get(c.event_id, ())) if i in by_id], payloads, earlier)
        for c in comparisons
    ]
    pairs.extend(_run_group_pairs(runs))
    pairs.sort(key=lambda p: (p["goal_id"], p["benchmark_id"] or "", p["case_id"] or "", p["position"], p["pair_id"]))
    return RunsModel(runs, pairs)


class _EarlierRuns:
    """The countable runs of each goal, benchmark, task and arm, in position order, to find the latest one before a comparison.

    Each list keeps its runs' :func:`_time_key` (worked out once) and, at each run, which run so far is the latest,
    so a comparison's side costs a binary search, not a scan and a parse of every earlier run of its task and arm
    (that scan was a third of building the model of 10^4 comparisons: benchmarks/runs_model.py).
    """

    def __init__(self, runs: Iterable[dict[str, Any]]) -> None:
        found: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for view in runs:
            if view["countable"] and view["case_id"] and view["arm"]:
                found.setdefault((view["goal_id"], view["benchmark_id"], view["case_id"], view["arm"]), []).append(view)
        self._lists: dict[tuple[Any, ...], tuple[list[dict[str, Any]], list[int], list[tuple[datetime, int]], list[int]]] = {}
        for key, views in found.items():
            views.sort(key=_position)
            times = [_time_key(v) for v in views]
            latest_so_far, best = [], 0
            for i, time in enumerate(times):
                if time > times[best]:
                    best = i
                latest_so_far.append(best)
            self._lists[key] = (views, [v["position"] for v in views], times, latest_so_far)

    def latest_before(self, key: tuple[Any, ...], position: int, used: Collection[str]) -> dict[str, Any] | None:
        """The latest (:func:`_time_key`) countable run of ``key`` recorded before ``position`` and not in ``used``."""
        if key not in self._lists:
            return None
        views, positions, times, latest_so_far = self._lists[key]
        before = bisect.bisect_left(positions, position)
        if not before:
            return None
        latest = views[latest_so_far[before - 1]]
        if latest["event_id"] not in used:
            return latest
        # (rare: the comparison's other side is that very run) the latest of the others
        others = [i for i in range(before) if views[i]["event_id"] not in used]
        return views[max(others, key=times.__getitem__)] if others else None


def _position(view: Mapping[str, Any]) -> int:
    return view["position"]  # type: ignore[no-any-return]


def _comparison_pair(
    comparison: EventLike, benchmark_task: tuple[str | None, str | None], batch_runs: list[dict[str, Any]], payloads: Mapping[str, Any],
    earlier: _EarlierRuns,
) -> dict[str, Any]:
    """A comparison (of ``benchmark_task``: its ``_comparison_task``) with the runs of its own task (rule: :func:`pairs`)."""
    payload = comparison.payload if isinstance(comparison.payload, Mapping) else {}
    benchmark, task = benchmark_task
    in_task = [
        v for v in batch_runs
        if v["kind"] == RUN_KIND and v["benchmark_id"] in (benchmark, None) and (task is None or v["case_id"] == task)
    ]
    live = [v for v in in_task if not v["retracted"]]
    named = {BASELINE: arm_of(payload.get("baseline_scenario_id")), TREATMENT: arm_of(payload.get("treatment_scenario_id"))}
    found: dict[str, dict[str, Any] | None] = {BASELINE: None, TREATMENT: None}
    how: dict[str, str | None] = {BASELINE: None, TREATMENT: None}
    used: set[str] = set()  # (the event ids of the runs found so far: a run takes one side at most)
    if live:  # (a batch without a live run of the task leaves both sides to the earlier runs)
        for side, arm in named.items():  # (a comparison naming one arm twice pairs two of its runs, never one with itself)
            match = next((v for v in live if v["arm"] == arm and v["event_id"] not in used), None) if arm else None
            if match is not None:
                found[side], how[side] = match, BY_SCENARIO
                used.add(match["event_id"])
        # The claim review's reading only fills a side the scenarios left empty: most comparisons name both, and skip it.
        picked = dict(zip((BASELINE, TREATMENT), claim_review.pick_runs([payloads[v["event_id"]] for v in live]))) if None in found.values() else {}
        for side, other in ((BASELINE, TREATMENT), (TREATMENT, BASELINE)):
            pick = next((v for v in live if payloads[v["event_id"]] is picked[side]), None) if found[side] is None else None
            if pick is not None and pick["event_id"] not in used and (named[other] is None or pick["arm"] != named[other]):
                found[side], how[side] = pick, BY_CLAIM_REVIEW
                used.add(pick["event_id"])
    missing: dict[str, str | None] = {side: None for side in named}
    for side, arm in named.items():
        if found[side] is not None:
            continue
        before = earlier.latest_before((comparison.goal_id, benchmark, task, arm), comparison.position, used) if arm and task else None
        if before is not None:
            found[side], how[side] = before, BY_EARLIER_RUN  # (_pair copies it)
            used.add(before["event_id"])
            continue
        withdrawn = next((v for v in in_task if v["retracted"] and (arm is None or v["arm"] == arm)), None)
        if withdrawn is not None:
            missing[side] = f"its batch's {side} run {withdrawn['event_id']} was retracted"
        elif arm:
            missing[side] = f"no {arm} run of {task or 'its task'} in its batch or recorded before it"
        else:
            missing[side] = f"the comparison names no {side} scenario and its batch holds no other run of {task or 'its task'}"
    delta = _number(payload.get("official_task_score_delta"))
    computed = _delta(found[BASELINE], found[TREATMENT])
    return _pair(
        comparison.goal_id, benchmark, task, "comparison", _text(payload.get("comparison_id")) or comparison.event_id,
        comparison.position, found, how, missing,
        {side: named[side] or (found[side] or {}).get("arm") for side in named},
        delta if delta is not None else computed, "comparison" if delta is not None else "runs" if computed is not None else None,
    )


def _pair(
    goal: str, benchmark: str | None, case: str | None, paired_by: str, pair_id: str, position: int,
    found: Mapping[str, Mapping[str, Any] | None], how: Mapping[str, str | None], missing: Mapping[str, str | None],
    arms: Mapping[str, str | None], delta: float | int | None, delta_from: str | None,
) -> dict[str, Any]:
    return {  # (keys spelt out: a pair is built per comparison)
        "goal_id": goal, "benchmark_id": benchmark, "case_id": case, "paired_by": paired_by, "pair_id": pair_id,
        "position": position, "baseline_arm": arms[BASELINE], "treatment_arm": arms[TREATMENT],
        BASELINE: _copy(found[BASELINE]), TREATMENT: _copy(found[TREATMENT]),
        "baseline_found_by": how[BASELINE], "treatment_found_by": how[TREATMENT],
        "baseline_missing": missing[BASELINE], "treatment_missing": missing[TREATMENT],
        "score_delta": delta, "delta_from": delta_from,
    }


def _copy(view: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(view) if view is not None else None


def _delta(baseline: Mapping[str, Any] | None, treatment: Mapping[str, Any] | None) -> float | int | None:
    if baseline is None or treatment is None or baseline["official_score"] is None or treatment["official_score"] is None:
        return None
    delta: float | int = treatment["official_score"] - baseline["official_score"]  # (a view's score is a number or None)
    return delta


def _run_group_pairs(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """LoopX run-ledger rows paired within their run group (rule: :func:`pairs`)."""
    groups: dict[tuple[str, str, str, str], dict[str, list[Mapping[str, Any]]]] = {}
    for view in runs:
        role = arm_role(view["arm_id"] or view["mode"])
        if view["kind"] == ROW_KIND and view["run_group_id"] and role and is_shown(view):
            key = (view["goal_id"], view["benchmark_id"] or "", view["case_id"] or "", view["run_group_id"])
            groups.setdefault(key, {BASELINE: [], TREATMENT: []})[role].append(view)
    pairs = []
    for (goal, benchmark, case, group_id), roles in sorted(groups.items()):
        if roles[BASELINE] and roles[TREATMENT]:
            found = {side: _latest(roles[side]) for side in (BASELINE, TREATMENT)}
            delta = _delta(found[BASELINE], found[TREATMENT])
            pairs.append(_pair(
                goal, benchmark or None, case or None, "run_group", group_id, max(v["position"] for r in roles.values() for v in r),
                found, dict.fromkeys(found, BY_RUN_GROUP), dict.fromkeys(found), {s: (found[s] or {}).get("arm") for s in found},
                delta, "runs" if delta is not None else None,
            ))
    return pairs


def is_shown(view: Mapping[str, Any]) -> bool:
    """Whether a listing shows the run: each run once, in its current version, never a retracted one."""
    return not (view["superseded"] or view["retracted"])


def run_views(events: Iterable[EventLike]) -> list[dict[str, Any]]:
    """The runs a listing shows: each run once, in its current version, never a retracted one, in listing order."""
    return sorted(filter(is_shown, runs_model(events).runs), key=listing_order)


def pairs(events: Iterable[EventLike]) -> list[dict[str, Any]]:
    """A task's baseline and treatment side by side, one entry per pair.

    * A **comparison** pairs the runs of its own task (its ``task_id``) from its
      own batch (the latest batch that lists it), side by side as follows, each
      side marked with how it was found (``*_found_by``):
      ``scenario``: the first run whose arm is the arm the comparison names
      (``baseline_scenario_id`` / ``treatment_scenario_id``, compared as modes);
      ``claim_review``: else the run LoopX's claim review reads as that side
      (a baseline- or treatment-looking mode, else argument order), unless it is
      the other side's run; ``earlier_run``: else, when the batch holds no such
      run, the latest countable run of that task and arm recorded before the
      comparison. Otherwise the side is missing and ``*_missing`` says why (a
      retracted run, no run of that arm, no arm named). The delta is the
      comparison's ``official_task_score_delta``, else treatment minus baseline
      score (``delta_from``).
    * **LoopX run-ledger rows** pair within their run group (same goal,
      benchmark, case and ``run_group_id``): the latest baseline-role and latest
      treatment-role run (:func:`arm_role` of the arm id); a group without both
      is no pair. Superseded and retracted rows take no part.
    """
    return runs_model(events).pairs


def arm_pairs(found_pairs: Iterable[Mapping[str, Any]]) -> list[tuple[str | None, str, str]]:
    """The (benchmark, baseline arm, treatment arm) that pairs name, each once, sorted."""
    named = {
        (p["benchmark_id"], p["baseline_arm"], p["treatment_arm"])
        for p in found_pairs if p["baseline_arm"] and p["treatment_arm"] and p["baseline_arm"] != p["treatment_arm"]
    }
    return sorted(named, key=lambda t: (t[0] or "", t[1], t[2]))


def task_outcomes(
    views: Iterable[Mapping[str, Any]], benchmark: str | None, arms: Sequence[str], *, include_archived: bool = False
) -> dict[str, dict[str, list[bool]]]:
    """Per task of ``benchmark``, each of ``arms``' trial outcomes (passed?): the countable, scored runs with a task."""
    outcomes: dict[str, dict[str, list[bool]]] = {}
    for view in views:
        if counts_in_rate(view, include_archived=include_archived) and view["benchmark_id"] == benchmark and view["arm"] in arms and view["case_id"] and view["score_status"] in SCORED_OUTCOMES:
            outcomes.setdefault(view["case_id"], {arm: [] for arm in arms})[view["arm"]].append(view["score_status"] == "passed")
    return outcomes
