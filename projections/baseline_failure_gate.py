"""``baseline-failure-gate``: is this failed baseline worth a LoopX treatment arm?

A treatment arm is only attributable to LoopX when it runs on a case whose
plain goal-mode baseline really failed, where that failure is plausibly fixable
by control-plane help, and where the treatment keeps the same task semantics,
the same runner protocol and a public-safe trace. The gate reduces one compact
baseline artifact plus the operator's explicit confirmations into a
``benchmark_comparison_v0`` row carrying a ``benchmark_baseline_failure_gate_v0``
block that says whether the case is treatment-eligible or negatively selected,
and why.

Inputs (normalized payloads): ``result`` — a compacted ``benchmark_result_v0``;
``run`` — a compacted ``benchmark_run_v0``, used only when no result was given
(the command normalizes its one file as a result when it compacts as one, else
as a run, see ``artifacts.kinds.RESULT_ELSE_RUN``: an envelope whose ``benchmark_result``
does not compact is read as its run, docs/interop.md). The first payload of
the chosen kind is the baseline. Options: the command's flags by python name (``benchmark_id``,
``goal_id``, ``baseline_mode``, ``treatment_scenario_id``, ``comparison_id``,
``failure_phase``, ``failure_class``, ``failure_attribution_label`` (list),
the four confirmation booleans, ``baseline_attempt_count``,
``minimum_next_evidence``, ``negative_selection_reason``, ``next_action``,
``evidence_ref`` (list), ``classification``, ``recommended_action``,
``delivery_batch_scale``, ``delivery_outcome``, ``dry_run``, ``execute``).

The reduced payload is the preview of the row. ``--execute`` appends that same
row as one history event of the goal: :func:`validated_goal_id`,
:func:`history_event` and :func:`executed_payload` hold the rules of that step;
the append itself (and its receipt, :data:`RECEIPT_FIELDS`) belongs to the ledger.

Longer than 500 lines: it is one LoopX command whole (run projection, gate rules,
payloads, markdown, the --execute event), each part reading the same named texts and defaults.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from benchledger.errors import InvalidGoalId
from benchledger.projections.artifacts.comparison import compact_comparison
from benchledger.projections.artifacts.kinds import RESULT_ELSE_RUN
from benchledger.projections.artifacts.safe import as_object, is_number, label
from benchledger.projections.markdown import code, document, get, text

NAME = "baseline-failure-gate"
VERSION = 1
# The payload itself has no schema_version; the row it carries is a comparison.
SCHEMA_VERSION = "benchmark_comparison_v0"
GATE_SCHEMA_VERSION = "benchmark_baseline_failure_gate_v0"

MARKDOWN_TITLE = "Benchmark Baseline Failure Gate"

# The one input file is tried as these kinds, in this order.
SOURCE_BY_KIND = {"result": "compact_benchmark_result_v0", "run": "compact_benchmark_run_v0"}
SOURCE_UNKNOWN = "compact_benchmark_result_v0_or_benchmark_run_v0"
ACCEPTED_SCHEMAS = ("benchmark_result_v0", "benchmark_run_v0")

# Error texts.
BOTH_MODES_ERROR = "benchmark baseline-failure-gate accepts either --dry-run or --execute, not both"
GOAL_ID_MISSING_ERROR = "benchmark baseline-failure-gate requires --goal-id with --execute"
NOT_AN_OBJECT_ERROR = "--baseline-result-json must contain a JSON object"
NOT_COMPACTABLE_ERROR = (
    "--baseline-result-json did not contain a compactable benchmark_result_v0 or benchmark_run_v0 object"
)
GOAL_ID_REQUIRED_ERROR = "goal id is required"
GOAL_ID_SEGMENT_ERROR = "goal id must be a single path segment"
GOAL_ID_TRAVERSAL_ERROR = "goal id must not include path traversal"

# Defaults of flags and of identity fields whose source is absent or not a label.
DEFAULT_CLASSIFICATION = "benchmark_comparison_v0"
DEFAULT_BASELINE_MODE = "codex_cli_goal_mode"
DEFAULT_TREATMENT_SCENARIO_ID = "codex_loopx"
FALLBACK_BASELINE_SCENARIO_ID = "baseline"
FALLBACK_TREATMENT_SCENARIO_ID = "treatment"
FALLBACK_BENCHMARK_ID = "benchmark"
FALLBACK_TASK_ID = "unknown_task"
UNKNOWN_TERMINAL_STATE = "unknown"
COMPARISON_ID_SUFFIX = "baseline_failure_gate"
EVIDENCE_REF_PREFIX = "benchmark_result_v0:"  # used for run baselines too

# Run -> result projection.
PASSED_STATE = "passed"
FAILED_STATE = "failed"
NON_LABELS = frozenset({"none", "unknown", "missing"})
# Baseline terminal states that mean "did not fail" (compared stripped, lower-cased).
SUCCESS_STATES = frozenset({"success", "succeeded", "passed", "resolved"})

# Failure phase / class when no flag names them.
UNKNOWN_FAILURE_PHASE = "unknown_failure_phase"
NOT_FAILED_PHASE = "not_failed"
UNCLASSIFIED_FAILURE = "unclassified_baseline_failure"
NOT_FAILED_CLASS = "baseline_not_failed"

WHY_ELIGIBLE = "Baseline failure is gate-eligible for treatment"
WHY_NEGATIVE = "Baseline is negative-selected before treatment"

DEFAULT_RECOMMENDED_ACTION = "route the baseline failure gate before any treatment run"
HEALTH_CHECK = "benchmark_comparison_v0 compact event public-safe"

# The command's flags (python names) at their defaults; ``--benchmark-id`` is
# required, so it has none. Missing options read as these.
DEFAULT_OPTIONS: dict[str, Any] = {
    "benchmark_id": None,
    "goal_id": None,
    "baseline_mode": DEFAULT_BASELINE_MODE,
    "treatment_scenario_id": DEFAULT_TREATMENT_SCENARIO_ID,
    "comparison_id": None,
    "failure_phase": None,
    "failure_class": None,
    "failure_attribution_label": [],
    "control_plane_addressable": False,
    "same_task_semantics": False,
    "same_runner_protocol": False,
    "trace_publicness_verified": False,
    "baseline_attempt_count": 1,
    "minimum_next_evidence": None,
    "negative_selection_reason": None,
    "next_action": None,
    "evidence_ref": [],
    "classification": None,
    "recommended_action": None,
    "delivery_batch_scale": None,
    "delivery_outcome": None,
    "dry_run": False,
    "execute": False,
    "no_global_sync": False,
}

MAX_LABELS = 8
MAX_EVIDENCE_REFS = 8
GATE_TEXT_LIMIT = 180

CLAIM_BOUNDARY = {
    "leaderboard_claim_allowed": False,
    "official_score_uplift_claim_allowed": False,
    "assisted_collaboration_claim_allowed": False,
    "raw_trace_excluded": True,
    "credential_values_recorded": False,
}

# Eligibility table: the first row whose condition holds on the gate facts
# gives the default minimum next evidence and negative-selection reason; when
# none holds, only trace publicness is left unconfirmed.
SELECTION_ROWS = (
    (
        lambda facts: facts["treatment_eligible"],
        "run the LoopX treatment arm on the same compactly verified task",
        "",
    ),
    (
        lambda facts: not facts["baseline_failed"],
        "select a failed goal-mode baseline before treatment",
        "baseline did not fail",
    ),
    (
        lambda facts: not facts["control_plane_addressable"],
        "attribute a control-plane-addressable goal-mode baseline failure",
        "baseline failure is not marked control-plane-addressable",
    ),
    (
        lambda facts: not facts["same_task_semantics"],
        "verify same task semantics before treatment",
        "same task semantics not verified",
    ),
    (
        lambda facts: not facts["same_runner_protocol"],
        "verify same runner protocol before treatment",
        "same runner protocol not verified",
    ),
)
TRACE_NOT_VERIFIED_DEFAULTS = ("verify trace publicness before treatment", "trace publicness not verified")

# The operator confirmations that, with a failed baseline, make it eligible.
CONFIRMATIONS = (
    "control_plane_addressable",
    "same_task_semantics",
    "same_runner_protocol",
    "trace_publicness_verified",
)


def _first_label(candidates: Iterable[Any]) -> str | None:
    """The first candidate that is a benchmark label (each one is labelled in turn)."""
    return next((value for value in map(label, candidates) if value is not None), None)


def _append_new_labels(labels: list[str], candidates: Iterable[Any], excluded: frozenset[str] = frozenset()) -> None:
    """Append each candidate's label unless absent, excluded or already listed."""
    for value in map(label, candidates):
        if value is not None and value not in excluded and value not in labels:
            labels.append(value)


# --- §3: a run seen as a result -------------------------------------------------


def _run_task_id(run: Mapping[str, Any]) -> str:
    trials = run.get("trials")
    first_trial = as_object(trials[0]) if isinstance(trials, list) and trials else {}
    case_ids = run.get("case_ids")
    first_case = case_ids[0] if isinstance(case_ids, list) and case_ids else None
    candidates = (first_trial.get("task_id"), run.get("task_id"), first_case, run.get("job_name"))
    return _first_label(candidates) or FALLBACK_TASK_ID


def _run_passed(run: Mapping[str, Any]) -> bool | None:
    """The explicit ``passed`` boolean, else whether the official score is positive."""
    score_object = as_object(run.get("official_task_score"))
    passed = score_object.get("passed")
    if isinstance(passed, bool):
        return passed
    value = score_object.get("value")
    score = value if is_number(value) else run.get("official_score")
    return score > 0 if is_number(score) else None


def _run_terminal_state(run: Mapping[str, Any], passed: bool | None) -> str:
    if passed is not None:
        return PASSED_STATE if passed else FAILED_STATE
    # The first truthy status is chosen before labelling: a status that is
    # not a label does not fall through to the next one.
    status = next((s for s in (run.get("runner_return_status"), run.get("official_score_status")) if s), None)
    return label(status) or UNKNOWN_TERMINAL_STATE


def _run_failure_labels(run: Mapping[str, Any]) -> list[str]:
    outcome = as_object(run.get("worker_bridge_outcome"))
    listed = run.get("failure_attribution_labels")
    candidates = (
        run.get("score_failure_attribution"),
        run.get("failure_class"),
        *(listed if isinstance(listed, list) else ()),
        outcome.get("score_failure_attribution"),
        outcome.get("worker_bridge_failure_attribution"),
        outcome.get("worker_bridge_materialization_blocker"),
        outcome.get("pre_worker_startup_blocker"),
    )
    labels: list[str] = []
    _append_new_labels(labels, candidates, excluded=NON_LABELS)
    return labels[:MAX_LABELS]


def result_from_run(run: Mapping[str, Any]) -> dict[str, Any]:
    """The result-shaped view of a compacted run that the gate reads."""
    passed = _run_passed(run)
    result: dict[str, Any] = {
        "task_id": _run_task_id(run),
        # The mode as written: LoopX keeps each goal-mode spelling a scenario of its own
        # (no D-MODE here), and a job name never stands in for it (docs/interop.md).
        "scenario_id": label(run.get("mode")) or FALLBACK_BASELINE_SCENARIO_ID,
        "terminal_state": _run_terminal_state(run, passed),
    }
    if passed is not None:
        result["official_task_score"] = {"passed": passed}
    result["failure_attribution_labels"] = _run_failure_labels(run)
    return result


# --- §4: the raw gate comparison -------------------------------------------------


def baseline_failed(result: Mapping[str, Any]) -> bool:
    """Failed per the explicit ``passed`` boolean, else per a non-success terminal state."""
    passed = as_object(result.get("official_task_score")).get("passed")
    if isinstance(passed, bool):
        return not passed
    state = result.get("terminal_state")
    state = state.strip().lower() if isinstance(state, str) else ""
    return bool(state) and state not in SUCCESS_STATES


def _gate_labels(result: Mapping[str, Any], options: Mapping[str, Any]) -> list[str]:
    """Flag labels first (duplicates kept), then the baseline's labels not yet listed."""
    labels = [value for value in map(label, options.get("failure_attribution_label") or ()) if value is not None]
    listed = result.get("failure_attribution_labels")
    _append_new_labels(labels, listed if isinstance(listed, list) else ())
    return labels


def _selection_defaults(facts: Mapping[str, bool]) -> tuple[str, str]:
    """Default (minimum next evidence, negative-selection reason) of the first matching row."""
    return next(
        ((evidence, reason) for condition, evidence, reason in SELECTION_ROWS if condition(facts)),
        TRACE_NOT_VERIFIED_DEFAULTS,
    )


def _evidence_refs(options: Mapping[str, Any], baseline_scenario_id: str) -> list[str]:
    refs = [ref for ref in (label(r, GATE_TEXT_LIMIT) for r in options.get("evidence_ref") or ()) if ref is not None]
    return (refs or [EVIDENCE_REF_PREFIX + baseline_scenario_id])[:MAX_EVIDENCE_REFS]


def _attempt_count(options: Mapping[str, Any]) -> int:
    count = options.get("baseline_attempt_count")
    return max(1, count if isinstance(count, int) else 1)


def _gate_block(result: Mapping[str, Any], options: Mapping[str, Any], baseline_scenario_id: str) -> dict[str, Any]:
    failed = baseline_failed(result)
    confirmations = {name: bool(options.get(name)) for name in CONFIRMATIONS}
    facts = {"baseline_failed": failed, **confirmations, "treatment_eligible": failed and all(confirmations.values())}
    labels = _gate_labels(result, options)
    default_evidence, default_reason = _selection_defaults(facts)
    reason = label(options.get("negative_selection_reason") or default_reason, GATE_TEXT_LIMIT)
    next_action = label(options.get("next_action"), GATE_TEXT_LIMIT)

    gate: dict[str, Any] = {
        "schema_version": GATE_SCHEMA_VERSION,
        "baseline_mode": label(options.get("baseline_mode")) or DEFAULT_BASELINE_MODE,
        "baseline_scenario_id": baseline_scenario_id,
        "baseline_terminal_state": label(result.get("terminal_state")) or UNKNOWN_TERMINAL_STATE,
        "baseline_failed": failed,
        "failure_phase": label(options.get("failure_phase"))
        or (UNKNOWN_FAILURE_PHASE if failed else NOT_FAILED_PHASE),
        "failure_class": label(options.get("failure_class"))
        or (labels[0] if labels else None)
        or (UNCLASSIFIED_FAILURE if failed else NOT_FAILED_CLASS),
        "control_plane_addressable": confirmations["control_plane_addressable"],
        "treatment_eligible": facts["treatment_eligible"],
        "same_task_semantics": confirmations["same_task_semantics"],
        "same_runner_protocol": confirmations["same_runner_protocol"],
        "trace_publicness_verified": confirmations["trace_publicness_verified"],
        "baseline_attempt_count": _attempt_count(options),
        "minimum_next_evidence": label(options.get("minimum_next_evidence"), GATE_TEXT_LIMIT) or default_evidence,
    }
    if reason is not None:
        gate["negative_selection_reason"] = reason
    if labels:
        gate["failure_attribution_labels"] = labels[:MAX_LABELS]
    gate["evidence_refs"] = _evidence_refs(options, baseline_scenario_id)
    if next_action is not None:
        gate["next_action"] = next_action
    return gate


def raw_gate_comparison(result: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The gate comparison row before compaction (spec §4)."""
    task_id = label(result.get("task_id")) or FALLBACK_TASK_ID
    baseline_scenario_id = (
        label(result.get("scenario_id")) or label(options.get("baseline_mode")) or FALLBACK_BASELINE_SCENARIO_ID
    )
    treatment_scenario_id = label(options.get("treatment_scenario_id")) or FALLBACK_TREATMENT_SCENARIO_ID
    comparison_id = label(options.get("comparison_id")) or "_".join(
        (task_id, baseline_scenario_id, COMPARISON_ID_SUFFIX)
    )
    gate = _gate_block(result, options, baseline_scenario_id)
    eligible = gate["treatment_eligible"]

    row: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "task_id": task_id,
        "comparison_id": comparison_id[:GATE_TEXT_LIMIT],
        "benchmark_id": label(options.get("benchmark_id")) or FALLBACK_BENCHMARK_ID,
        "mode_pair": [baseline_scenario_id, treatment_scenario_id],
        "baseline_scenario_id": baseline_scenario_id,
        "treatment_scenario_id": treatment_scenario_id,
        "baseline_failure_gate": gate,
        "claim_boundary": dict(CLAIM_BOUNDARY),
        "decision": {
            "score_uplift": False,
            "validation_enhancement_point": eligible,
            "why": WHY_ELIGIBLE if eligible else WHY_NEGATIVE,
        },
    }
    if "next_action" in gate:
        row["next_action"] = gate["next_action"]
    if "failure_attribution_labels" in gate:
        row["failure_attribution_labels"] = gate["failure_attribution_labels"]
    return row


# --- payloads --------------------------------------------------------------------


def mode_error(options: Mapping[str, Any]) -> str | None:
    """The refusal of the mode flags, checked before the input is read."""
    if options.get("dry_run") and options.get("execute"):
        return BOTH_MODES_ERROR
    if options.get("execute") and not options.get("goal_id"):
        return GOAL_ID_MISSING_ERROR
    return None


def _classification(options: Mapping[str, Any]) -> str:
    return options.get("classification") or DEFAULT_CLASSIFICATION


def _cli_boundary(source: str) -> dict[str, Any]:
    return {
        "source": source,
        "accepted_schemas": list(ACCEPTED_SCHEMAS),
        "raw_artifacts_read": False,
        "task_text_read": False,
        "local_paths_recorded": False,
        "docker_invoked": False,
        "model_api_invoked": False,
        "upload_invoked": False,
    }


def _baseline(inputs: Mapping[str, Sequence[Any]]) -> tuple[str, Mapping[str, Any]] | None:
    """The source label and result-shaped baseline, from the first kind that was given."""
    for kind in RESULT_ELSE_RUN:
        payloads = inputs.get(kind) or ()
        if payloads:
            baseline = as_object(payloads[0])
            return SOURCE_BY_KIND[kind], baseline if kind == "result" else result_from_run(baseline)
    return None


def reduce(inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    options = {**DEFAULT_OPTIONS, **options}
    problem = mode_error(options)
    if problem is not None:
        return error_payload(problem, options)
    baseline = _baseline(inputs)
    if baseline is None:
        return error_payload(NOT_COMPACTABLE_ERROR, options)
    source, result = baseline
    return {
        "ok": True,
        "dry_run": True,
        "appended": False,
        "goal_id": options.get("goal_id"),
        "classification": _classification(options),
        "benchmark_comparison": compact_comparison(raw_gate_comparison(result, options)),
        "baseline_gate_cli": _cli_boundary(source),
    }


def error_payload(message: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "ok": False,
        "dry_run": not options.get("execute"),
        "appended": False,
        "goal_id": options.get("goal_id"),
        "classification": _classification(options),
        "error": message,
        "baseline_gate_cli": _cli_boundary(SOURCE_UNKNOWN),
    }


def render_markdown(payload: Mapping[str, Any]) -> str:
    comparison = get(payload, "benchmark_comparison")
    gate = get(comparison, "baseline_failure_gate")
    lines = [
        code("ok", get(payload, "ok")),
        code("dry_run", get(payload, "dry_run")),
        code("appended", get(payload, "appended")),
        code("goal_id", get(payload, "goal_id")),
        code("benchmark_id", get(comparison, "benchmark_id")),
        code("task_id", get(comparison, "task_id")),
        code("baseline_failed", get(gate, "baseline_failed")),
        code("control_plane_addressable", get(gate, "control_plane_addressable")),
        code("treatment_eligible", get(gate, "treatment_eligible")),
        code("failure_class", get(gate, "failure_class")),
    ]
    for label_text, value in (
        ("minimum_next_evidence", get(gate, "minimum_next_evidence")),
        ("negative_selection_reason", get(gate, "negative_selection_reason")),
        ("error", get(payload, "error")),
    ):
        if value:
            lines.append(text(label_text, value))
    return document(MARKDOWN_TITLE, lines)


# --- --execute ---------------------------------------------------------------------


def validated_goal_id(goal_id: str) -> str:
    """The stripped goal id, refused unless it is one plain path segment."""
    stripped = goal_id.strip()
    if not stripped:
        raise InvalidGoalId(GOAL_ID_REQUIRED_ERROR)
    if stripped in (".", "..") or "/" in stripped or "\\" in stripped:
        raise InvalidGoalId(GOAL_ID_SEGMENT_ERROR)
    if PurePosixPath(stripped).name != stripped:
        raise InvalidGoalId(GOAL_ID_TRAVERSAL_ERROR)
    return stripped


def history_event(preview: Mapping[str, Any], goal_id: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The event ``--execute`` appends to the goal's history, in field order.

    ``preview`` is an ``ok`` payload of :func:`reduce`; ``goal_id`` the
    validated id. The event's ``generated_at`` timestamp, which comes first in
    the reference's event, is stamped by the ledger when it appends.
    """
    comparison = preview["benchmark_comparison"]
    event: dict[str, Any] = {
        "goal_id": goal_id,
        "classification": _classification(options),
        "recommended_action": options.get("recommended_action")
        or comparison.get("next_action")
        or DEFAULT_RECOMMENDED_ACTION,
        "health_check": HEALTH_CHECK,
        "benchmark_comparison": comparison,
    }
    for name in ("delivery_batch_scale", "delivery_outcome"):
        if options.get(name):
            event[name] = options[name]
    return event


GLOBAL_SYNC_DISABLED = {"ok": True, "dry_run": False, "skipped": True, "reason": "disabled by --no-global-sync"}

# What the ledger reports back about an append: when it was stamped, where the
# event lives (LoopX names its registry, runtime root and three files; the
# ledger substitutes its own locator values) and the global sync result.
RECEIPT_FIELDS = ("generated_at", "registry", "runtime_root", "json_path", "markdown_path", "index_path", "global_sync")


def executed_payload(
    preview: Mapping[str, Any], event: Mapping[str, Any], receipt: Mapping[str, Any]
) -> dict[str, Any]:
    """The payload printed once ``event`` (from ``preview``) was appended, in the reference's key order."""
    payload: dict[str, Any] = {
        "ok": True,
        "dry_run": False,
        "appended": True,
        "registry": receipt.get("registry"),
        "runtime_root": receipt.get("runtime_root"),
        "goal_id": event["goal_id"],
        "classification": event["classification"],
        "recommended_action": event["recommended_action"],
        "generated_at": receipt.get("generated_at"),
        "health_check": event["health_check"],
        "json_path": receipt.get("json_path"),
        "markdown_path": receipt.get("markdown_path"),
        "index_path": receipt.get("index_path"),
        "benchmark_comparison": event["benchmark_comparison"],
    }
    for name in ("delivery_batch_scale", "delivery_outcome"):
        if name in event:
            payload[name] = event[name]
    payload["global_sync"] = receipt.get("global_sync")
    payload["baseline_gate_cli"] = preview["baseline_gate_cli"]
    return payload
