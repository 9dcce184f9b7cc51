"""``attempt-learning-gate``: may one benchmark attempt be counted against the budget?

An attempt only earns a place in the campaign's budget (and only opens the way
to a repeat or a new candidate) once it has left actionable learning behind.
The gate reads one compact ``benchmark_run_v0`` (the attempt) and, optionally,
the compact ``benchmark_learning_ledger_v0`` row written for it, and answers in
three steps: is the attempt countable (does it carry a compact score or
blocker), is there a learning row, and is that row actionable (the learning
quota lets the budget be spent and the routing names a next action). It also
lists generic repair candidates read off the run alone.

Inputs (normalized payloads): ``run`` — the compacted attempt (the last one
wins, like the command's non-repeatable flag; none at all reads as an empty
run, which is simply not countable); ``learning-ledger`` — the compacted
learning row (the last one wins; absent means "no row yet"). The gate never
matches the row to the run: any compactable row counts as present.
Options: ``require_budget_count_allowed`` (bool).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchledger.projections.artifacts.safe import as_object, is_int
from benchledger.projections.boundaries import compact_read_boundary, refused_input_payload, require_gate
from benchledger.projections.markdown import code, document, get, text
from benchledger.projections.run_classifiers import failure_labels

NAME = "attempt-learning-gate"
# 2: the linking rules feed each attempt the learning ledger of its own batch, not the goal's latest.
VERSION = 2
SCHEMA_VERSION = "benchmark_attempt_learning_gate_v0"

# The command's flags (python names) at their defaults.
DEFAULT_OPTIONS = {"require_budget_count_allowed": False}

MARKDOWN_TITLE = "Benchmark Attempt Learning Gate"

# Classifications (first matching row of the decision table wins).
NOT_COUNTABLE = "benchmark_attempt_not_countable"
LEARNING_ROW_MISSING = "benchmark_attempt_learning_row_missing"
LEARNING_ROW_NONACTIONABLE = "benchmark_attempt_learning_row_nonactionable"
LEARNING_READY = "benchmark_attempt_learning_ready"

# Next required actions of the three non-ready classifications; a ready
# attempt follows the learning row's own routing.
RECORD_SCORE_OR_BLOCKER = "record_compact_score_or_blocker_before_budget_count"
BUILD_LEARNING_ROW = "build_compact_benchmark_learning_ledger_before_repeat_or_new_candidate"
STOP_OR_NAME_REPAIR = "stop_without_spend_or_add_named_repair_caveat_before_repeat"

# Repair candidates and the run labels that point at them.
ENVIRONMENT_SETUP_CONTRACT = "benchmark_environment_setup_contract"
ADAPTER_STARTUP_ARGUMENT_CONTRACT = "adapter_startup_argument_contract"
LIFECYCLE_MATERIALIZATION_GATE = "benchmark_lifecycle_materialization_gate"
SUBMIT_BOUNDARY_INVARIANT = "runner_owned_submit_boundary_invariant"
FAILURE_ATTRIBUTION_REVIEW = "compact_failure_attribution_review"

ENVIRONMENT_SETUP_LABELS = frozenset({"environment_setup_failed_before_worker"})
ADAPTER_STARTUP_LABELS = frozenset({"pre_worker_agent_setup_failed", "treatment_pre_worker_agent_setup_failed"})
LIFECYCLE_MATERIALIZATION_LABELS = frozenset(
    {
        "runner_compact_result_missing",
        "harbor_job_root_missing",
        "post_launch_job_dir_materialization_missing",
        "reducer_validation_failed",
    }
)

MAX_TASK_IDS = 4

CLAIM_BOUNDARY = {
    "requires_learning_row_before_budget_count": True,
    "requires_learning_row_before_repeat_or_new_candidate": True,
    "raw_trace_excluded": True,
    "leaderboard_claim_allowed": False,
}


# Payloads are decoded JSON: a dict check is several times cheaper than the Mapping ABC's.
def _nonempty_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _latest(inputs: Mapping[str, Sequence[Any]], kind: str) -> Mapping[str, Any] | None:
    payloads = inputs.get(kind) or ()
    return as_object(payloads[-1]) if payloads else None


# --- the attempt -------------------------------------------------------------


def has_compact_score(run: Mapping[str, Any]) -> bool:
    """A compacted official task score with a value or a pass flag (``0`` and ``false`` count).

    Only ``official_task_score`` counts; a bare top-level ``official_score`` does not.
    """
    score = as_object(run.get("official_task_score"))
    return score.get("value") is not None or score.get("passed") is not None


def is_countable(run: Mapping[str, Any]) -> bool:
    """Does the attempt carry a compact score or a compact blocker?

    Any non-empty ``first_blocker`` is a blocker, the literal ``none`` included.
    """
    return has_compact_score(run) or _nonempty_text(run.get("first_blocker")) is not None or bool(failure_labels(run))


def repair_candidates(run: Mapping[str, Any]) -> list[str]:
    """Generic repairs suggested by the run's failure labels and first blocker."""
    labels = set(failure_labels(run))
    first_blocker = _nonempty_text(run.get("first_blocker"))
    if first_blocker is not None:
        labels.add(first_blocker)
    mismatches = run.get("worker_submit_eligible_mismatch_count")

    candidates: list[str] = []
    if labels & ENVIRONMENT_SETUP_LABELS:
        candidates.append(ENVIRONMENT_SETUP_CONTRACT)
    elif labels & ADAPTER_STARTUP_LABELS:
        candidates.append(ADAPTER_STARTUP_ARGUMENT_CONTRACT)
    if labels & LIFECYCLE_MATERIALIZATION_LABELS:
        candidates.append(LIFECYCLE_MATERIALIZATION_GATE)
    if is_int(mismatches) and mismatches > 0:
        candidates.append(SUBMIT_BOUNDARY_INVARIANT)
    if not candidates and labels:
        candidates.append(FAILURE_ATTRIBUTION_REVIEW)
    return candidates


def task_ids(run: Mapping[str, Any]) -> list[str]:
    """Distinct non-empty task ids of the compacted trials, in order (run-level ids are not used)."""
    trials = run.get("trials")
    if not isinstance(trials, list):
        return []
    ids = dict.fromkeys([_nonempty_text(trial.get("task_id")) for trial in trials if isinstance(trial, dict)])
    return [task_id for task_id in ids if task_id is not None][:MAX_TASK_IDS]


# --- the learning row ----------------------------------------------------------


def actionable_next_action(ledger: Mapping[str, Any] | None) -> str | None:
    """The row's next action when the row is actionable, else ``None``.

    Actionable: the learning quota allows spending (JSON ``true`` only) and the
    routing names a next action (compaction already removed a blank one).
    """
    row = as_object(ledger)
    spend_allowed = as_object(row.get("learning_quota_gate")).get("spend_allowed")
    action = as_object(row.get("routing")).get("next_allowed_action")
    if spend_allowed is not True:
        return None
    return action if isinstance(action, str) and action.strip() else None


def routing_allows(ledger: Mapping[str, Any] | None, permission: str, actionable: bool) -> bool:
    """The row's routing grants ``permission`` (JSON ``true`` only) and the row is ``actionable``.

    Countability is deliberately not required: routing permissions survive a
    non-countable attempt.
    """
    return actionable and as_object(as_object(ledger).get("routing")).get(permission) is True


def classify(countable: bool, ledger: Mapping[str, Any] | None, row_action: str | None) -> tuple[str, str]:
    """Classification and next required action: first matching row of the decision table.

    ``row_action`` is the row's :func:`actionable_next_action`.
    """
    if not countable:
        return NOT_COUNTABLE, RECORD_SCORE_OR_BLOCKER
    if ledger is None:
        return LEARNING_ROW_MISSING, BUILD_LEARNING_ROW
    if row_action is None:
        return LEARNING_ROW_NONACTIONABLE, STOP_OR_NAME_REPAIR
    return LEARNING_READY, row_action


# --- the review ----------------------------------------------------------------


def reduce(inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    run = _latest(inputs, "run") or {}
    ledger = _latest(inputs, "learning-ledger")
    require_budget_count_allowed = bool({**DEFAULT_OPTIONS, **options}["require_budget_count_allowed"])

    countable = is_countable(run)
    row_action = actionable_next_action(ledger)
    actionable = row_action is not None
    budget_count_allowed = countable and actionable
    classification, next_action = classify(countable, ledger, row_action)

    payload: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "benchmark_id": run.get("benchmark_id"),
        "mode": run.get("mode"),
        "task_ids": task_ids(run),
        "classification": classification,
        "countable_attempt": countable,
        "learning_row_present": ledger is not None,
        "learning_row_actionable": actionable,
        "budget_count_allowed": budget_count_allowed,
        "repeat_allowed": routing_allows(ledger, "repeat_allowed", actionable),
        "new_candidate_allowed": routing_allows(ledger, "new_candidate_allowed", actionable),
        "repair_candidates": repair_candidates(run),
        "next_required_action": next_action,
        "claim_boundary": dict(CLAIM_BOUNDARY),
        "read_boundary": compact_read_boundary(),
        "ok": True,
    }
    # The gate names the reason: the (non-ready) classification.
    return require_gate(
        payload, "require_budget_count_allowed", require_budget_count_allowed, budget_count_allowed, classification
    )


def error_payload(message: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return refused_input_payload(SCHEMA_VERSION, message)


def render_markdown(payload: Mapping[str, Any]) -> str:
    return document(
        MARKDOWN_TITLE,
        [
            code("Schema", get(payload, "schema_version")),
            code("Benchmark", get(payload, "benchmark_id")),
            code("Mode", get(payload, "mode")),
            code("Classification", get(payload, "classification")),
            code("Countable attempt", get(payload, "countable_attempt")),
            code("Learning row present", get(payload, "learning_row_present")),
            code("Learning row actionable", get(payload, "learning_row_actionable")),
            code("Budget count allowed", get(payload, "budget_count_allowed")),
            code("Repair candidates", get(payload, "repair_candidates")),
            text("Next action", get(payload, "next_required_action")),
            code("Compact only", get(payload, "read_boundary", "compact_only")),
            code("Raw artifacts read", get(payload, "read_boundary", "raw_artifacts_read")),
        ],
    )
