"""Runs as ``benchledger runs`` lists them: one record per run, whatever evidence it came from.

Two event kinds describe a benchmark run:

* ``benchmark_run_ledger_row_v0``: a row of a LoopX run ledger
  (``benchmark_run_ledger_v0``), imported verbatim by ``benchledger import-loopx``.
  It is LoopX's own reduction of a run: it names its arm, status, score status,
  archive state and attempt-accounting flags.
* ``run``: a compact ``benchmark_run_v0`` ingested by benchledger. Compaction
  keeps no run id, arm, status or accounting, so those are derived here the way
  LoopX derives them when it writes a ledger row (status and score status from
  the score, the runner's return status and the trial progress; the case from
  the job name when the run names none), and the arm falls back to the run's
  mode.

Pure functions over events (anything with ``kind``, ``payload``, ``event_id``,
``position``, ``goal_id`` and ``recorded_at``); no database.

The current countable run per arm (``current_runs``, with ``countable`` set
by ``run_view``) follows the rule stated once, for users and maintainers alike,
in docs/interop.md ("The current countable run per arm").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

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


def _not_countable_reason(view: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
    if view["archived"]:
        return "archived"
    if view["status"] == "running":
        return "running"
    for flag in NOT_COUNTABLE_FLAGS:
        if payload.get(flag) is False:
            return f"{flag}=false"
    return None


def run_view(event: EventLike) -> dict[str, Any]:
    """The ``runs`` record of one run event (keys are the ``--format json`` field names)."""
    payload = event.payload if isinstance(event.payload, Mapping) else {}
    if event.kind == ROW_KIND:
        view = {
            "run_id": _text(payload.get("run_id")),
            "benchmark_id": _text(payload.get("benchmark_id")),
            "case_id": _text(payload.get("case_id")),
            "arm": _text(payload.get("arm_id")) or _text(payload.get("mode")),
            "mode": _text(payload.get("mode")),
            "run_group_id": _text(payload.get("run_group_id")),
            "status": _text(payload.get("status")),
            **dict(zip(("score_status", "official_score", "official_passed"), run_outcome(ROW_KIND, payload))),
            "failure_scope": _text(payload.get("failure_scope")),
            "failure_class": _text(payload.get("failure_class")),
            "recorded_at": _text(payload.get("recorded_at")) or event.recorded_at,
            "archived": payload.get("archive_state") == "archived" or _text(payload.get("archived_at")) is not None,
            "archived_at": _text(payload.get("archived_at")),
        }
    else:
        score_status, score, passed = run_outcome(RUN_KIND, payload)
        view = {
            # A compact run carries no run id: its event id stands in.
            "run_id": event.event_id,
            "benchmark_id": _text(payload.get("benchmark_id")),
            # Without a case id LoopX files a run under its job name; so does this view.
            "case_id": _text(payload.get("case_id")) or _text(payload.get("job_name")),
            "arm": _text(payload.get("mode")),
            "mode": _text(payload.get("mode")),
            "run_group_id": None,
            "status": compact_run_status(payload, score),
            "score_status": score_status,
            "official_score": score,
            "official_passed": passed,
            "failure_scope": None,
            "failure_class": None,
            "recorded_at": event.recorded_at,
            "archived": False,
            "archived_at": None,
        }
    reason = _not_countable_reason(view, payload)
    return {
        "goal_id": event.goal_id,
        "event_id": event.event_id,
        "position": event.position,
        "kind": event.kind,
        **view,
        "countable": reason is None,
        "not_countable_reason": reason,
    }


def _version_key(view: Mapping[str, Any]) -> tuple[str, str, str]:
    # A LoopX ledger upserts a row by run id; importing the updated file appends
    # the new version as a new event, which supersedes the older one.
    return (view["goal_id"], view["kind"], view["run_id"] if view["kind"] == ROW_KIND else view["event_id"])


def _time_key(view: Mapping[str, Any]) -> tuple[datetime, int]:
    return (utc_instant(view["recorded_at"]) or datetime.min.replace(tzinfo=UTC), view["position"])


def run_views(events: Iterable[EventLike]) -> list[dict[str, Any]]:
    """Every run's latest version, ordered by benchmark, case, ``recorded_at`` and position."""
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for event in events:
        if event.kind in RUN_KINDS:
            view = run_view(event)
            key = _version_key(view)
            if key not in latest or latest[key]["position"] < view["position"]:
                latest[key] = view
    return sorted(
        latest.values(),
        key=lambda v: (v["goal_id"], v["benchmark_id"] or "", v["case_id"] or "", _time_key(v)),
    )


def matches(
    view: Mapping[str, Any],
    *,
    benchmark: str | None = None,
    case: str | None = None,
    arm: str | None = None,
    mode: str | None = None,
    status: str | None = None,
) -> bool:
    """Whether a run passes the filters; ``status`` matches the run status or the score status."""
    return (
        (benchmark is None or view["benchmark_id"] == benchmark)
        and (case is None or view["case_id"] == case)
        and (arm is None or view["arm"] == arm)
        and (mode is None or view["mode"] == mode)
        and (status is None or status in (view["status"], view["score_status"]))
    )


def current_runs(views: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per goal, benchmark, case and arm with its current countable run (rule: module docstring)."""
    arms: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for view in views:
        key = (view["goal_id"], view["benchmark_id"] or "", view["case_id"] or "", view["arm"] or "")
        arms.setdefault(key, []).append(view)
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


def pass_rates(views: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per benchmark and arm: how many runs passed and failed, and the pass rate over those with a score.

    ``passed`` / ``failed`` follow the score status (what ``--status`` matches);
    runs with another score status (``missing``, a LoopX probe's own) are
    ``unscored`` and stay out of the rate.
    """
    counts: dict[tuple[str | None, str | None], dict[str, int]] = {}
    for view in views:
        group = counts.setdefault((view["benchmark_id"], view["arm"]), {"runs": 0, "passed": 0, "failed": 0})
        group["runs"] += 1
        if view["score_status"] in SCORED_OUTCOMES:
            group[view["score_status"]] += 1
    return sorted(
        (pass_rate_entry(benchmark, arm, **group) for (benchmark, arm), group in counts.items()),
        key=lambda entry: (entry["benchmark_id"] or "", entry["arm"] or ""),
    )


def pass_rate_entry(benchmark_id: str | None, arm: str | None, *, runs: int, passed: int, failed: int) -> dict[str, Any]:
    """One entry of :func:`pass_rates` from its counts (also what the report's SQL aggregate of them becomes)."""
    scored = passed + failed
    return {
        "benchmark_id": benchmark_id, "arm": arm, "runs": runs, "passed": passed, "failed": failed,
        "unscored": runs - scored, "pass_rate": round(passed / scored, 4) if scored else None,
    }


def arm_role(arm: str | None) -> str | None:
    """The role a LoopX arm id names: ``treatment`` if it says so, else ``baseline`` if it says so, else none.

    LoopX's arm ids carry their role (``codex_loopx_treatment``,
    ``codex_goal_mode_baseline``; ``loopx-blind-loop-treatment-baseline-safe``
    is a treatment that keeps the baseline safe); probes and observations name neither.
    """
    text = (arm or "").lower()
    return TREATMENT if TREATMENT in text else BASELINE if BASELINE in text else None


def _delta(baseline: Mapping[str, Any] | None, treatment: Mapping[str, Any] | None) -> float | int | None:
    if baseline is None or treatment is None or baseline["official_score"] is None or treatment["official_score"] is None:
        return None
    delta: float | int = treatment["official_score"] - baseline["official_score"]  # (a view's score is a number or None)
    return delta


def _latest(candidates: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    candidates = list(candidates)
    if not candidates:
        return None
    latest = max(candidates, key=_time_key)  # (apart: inside dict() the type checker reads max's type from dict's argument)
    return dict(latest)


def _compared_run(
    views: list[Mapping[str, Any]], comparison: EventLike, benchmark: str | None, mode: str | None
) -> dict[str, Any] | None:
    """The goal's latest compact run of ``benchmark`` in ``mode`` at or before the comparison's position.

    Modes are compared as LoopX compares them (D-MODE): ``codex_goal_mode`` and
    ``Codex-Goal-Mode`` name one arm.
    """
    if mode is None:
        return None
    spelling = mode_spelling(mode)
    return _latest(
        v for v in views
        if v["kind"] == RUN_KIND and v["goal_id"] == comparison.goal_id and v["position"] <= comparison.position
        and v["benchmark_id"] == benchmark and mode_spelling(v["mode"]) == spelling
    )


def paired_runs(views: Iterable[Mapping[str, Any]], comparisons: Iterable[EventLike]) -> list[dict[str, Any]]:
    """A task's baseline and treatment side by side, one entry per pair:

    * each ingested comparison pairs the goal's latest runs, at or before it in
      the ledger, of its benchmark whose mode is its ``baseline_scenario_id``
      and ``treatment_scenario_id``; the delta is the comparison's
      ``official_task_score_delta`` (else treatment minus baseline score);
    * LoopX run-ledger rows pair within their run group (same goal, benchmark,
      case and ``run_group_id``): the latest baseline-role and latest
      treatment-role run (:func:`arm_role`); a group without both is no pair.
    """
    views = list(views)
    pairs = []
    for comparison in comparisons:
        payload = comparison.payload if isinstance(comparison.payload, Mapping) else {}
        benchmark = _text(payload.get("benchmark_id"))
        baseline = _compared_run(views, comparison, benchmark, _text(payload.get("baseline_scenario_id")))
        treatment = _compared_run(views, comparison, benchmark, _text(payload.get("treatment_scenario_id")))
        delta = _number(payload.get("official_task_score_delta"))
        pairs.append(
            {
                "goal_id": comparison.goal_id,
                "benchmark_id": benchmark,
                "case_id": _text(payload.get("task_id")) or _text(payload.get("case_id")),
                "paired_by": "comparison",
                "pair_id": _text(payload.get("comparison_id")) or comparison.event_id,
                "baseline": baseline,
                "treatment": treatment,
                "score_delta": delta if delta is not None else _delta(baseline, treatment),
            }
        )
    groups: dict[tuple[str, str, str, str], dict[str, list[Mapping[str, Any]]]] = {}
    for view in views:
        group_id = view["run_group_id"]
        role = arm_role(view["arm"])
        if view["kind"] == ROW_KIND and group_id and role:
            key = (view["goal_id"], view["benchmark_id"] or "", view["case_id"] or "", group_id)
            groups.setdefault(key, {BASELINE: [], TREATMENT: []})[role].append(view)
    for (goal, benchmark, case, group_id), roles in sorted(groups.items()):
        if roles[BASELINE] and roles[TREATMENT]:
            baseline, treatment = _latest(roles[BASELINE]), _latest(roles[TREATMENT])
            pairs.append(
                {
                    "goal_id": goal,
                    "benchmark_id": benchmark or None,
                    "case_id": case or None,
                    "paired_by": "run_group",
                    "pair_id": group_id,
                    "baseline": baseline,
                    "treatment": treatment,
                    "score_delta": _delta(baseline, treatment),
                }
            )
    return sorted(pairs, key=lambda p: (p["goal_id"], p["benchmark_id"] or "", p["case_id"] or "", p["pair_id"]))
