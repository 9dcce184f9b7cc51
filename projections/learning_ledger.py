"""``learning-ledger``: what did a paired outcome teach, and may budget be spent on it?

Spec: learning-ledger.md. The row starts from the claim review of the same
comparison and runs (:func:`projections.claim_review.review_claim`), pools the
failure labels of the comparison and of every run, derives ordered generic
repair candidates, then the lifecycle gate, the learning-quota gate, the
learning status, the overhead label and the routing of the next attempt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchledger.projections.artifacts.safe import claim_number
from benchledger.projections.boundaries import compact_read_boundary, refused_input_payload
from benchledger.projections.claim_review import (
    ATTRIBUTION_CAVEAT,
    BOUNDARY_MISMATCH,
    MISSING_WORKER_EVIDENCE,
    paired_inputs,
    review_claim,
)
from benchledger.projections.claim_review import SCHEMA_VERSION as CLAIM_REVIEW_SCHEMA_VERSION
from benchledger.projections.markdown import code, document, get, text
from benchledger.projections.run_classifiers import failure_labels

NAME = "learning-ledger"
VERSION = 1
SCHEMA_VERSION = "benchmark_learning_ledger_v0"
LIFECYCLE_GATE_SCHEMA_VERSION = "benchmark_lifecycle_gate_v0"
LEARNING_QUOTA_GATE_SCHEMA_VERSION = "benchmark_learning_quota_gate_v0"
DEFAULT_OPTIONS: dict[str, Any] = {"require_actionable_learning": False}

# Repair candidates (§3.3).
ENVIRONMENT_SETUP_CONTRACT = "benchmark_environment_setup_contract"
ADAPTER_STARTUP_CONTRACT = "adapter_startup_argument_contract"
LIFECYCLE_MATERIALIZATION_GATE = "benchmark_lifecycle_materialization_gate"
SUBMIT_BOUNDARY_INVARIANT = "runner_owned_submit_boundary_invariant"
WORKER_EVIDENCE_GATE = "worker_visible_loopx_evidence_gate"
VERIFIER_ATTRIBUTION_REVIEW = "compact_verifier_attribution_review"
COST_OVERHEAD_GUARD = "claim_cost_overhead_guard"

ENVIRONMENT_SETUP_LABEL = "environment_setup_failed_before_worker"
ADAPTER_STARTUP_LABELS = frozenset(
    {
        "pre_worker_agent_setup_failed",
        "treatment_pre_worker_agent_setup_failed",
        "agent_setup_timeout_before_worker_start",
        "agent_setup_failed_before_worker_start",
        "pre_worker_startup_blocker_recorded",
        "agent_setup_timeout_score_failure",
        "agent_setup_score_failure",
    }
)
LIFECYCLE_MATERIALIZATION_LABELS = frozenset(
    {
        "runner_compact_result_missing",
        "harbor_job_root_missing",
        "post_launch_job_dir_materialization_missing",
        "reducer_validation_failed",
    }
)
# Claim blocker -> the repair candidate it calls for, in rule order (rules 4-6).
BLOCKER_CANDIDATES = (
    (BOUNDARY_MISMATCH, SUBMIT_BOUNDARY_INVARIANT),
    (MISSING_WORKER_EVIDENCE, WORKER_EVIDENCE_GATE),
    (ATTRIBUTION_CAVEAT, VERIFIER_ATTRIBUTION_REVIEW),
)

# Gate reasons (§3.4, §3.6).
MISSING_SCORE_OR_BLOCKER = "missing_compact_score_or_blocker_evidence"
NO_LEARNING_SIGNAL = "compact_result_has_no_loopx_learning_signal"
GENERIC_REPAIR_REASON = "generic_repair_candidate"
CLEAN_EVIDENCE = "clean_score_recovery_evidence"
CANDIDATE_NEEDS_REVIEW = "candidate_score_recovery_needs_review"

# Learning statuses (§3.5).
COST_OVERHEAD_GUARD_STATUS = "loop_validation_cost_overhead_guard"
REPAIR_REQUIRED_STATUS = "generic_loopx_repair_or_attribution_required"
LOOP_EVIDENCE_ONLY_STATUS = "loop_validation_or_overhead_evidence_only"
NO_GAIN_STATUS = "no_loopx_validation_gain"

# Routing actions (§3.7).
SELECT_NEXT_OR_COST_HYPOTHESIS = "select_next_candidate_or_add_named_cost_control_hypothesis_before_repeat"
REPAIR_OR_VALIDATE_PREFIX = "repair_or_validate_"
WRITE_BLOCKER_FIRST = "write_compact_blocker_before_repeat_or_new_candidate"
STOP_WITHOUT_SPEND = "stop_without_spend_and_record_no_learning_signal"
RECORD_CLEAN_THEN_NEXT_LANE = "record_clean_evidence_then_select_next_benchmark_lane"
REPEAT_WITH_HYPOTHESIS = "only_repeat_with_named_attribution_or_stability_hypothesis"

# Overhead labels (§3.8).
EXTRA_COST_WITHOUT_GAIN = "extra_cost_without_official_gain"
EXTRA_TIME_WITHOUT_GAIN = "extra_wall_time_without_official_gain"
POSITIVE_DELTA_WITH_OVERHEAD = "positive_delta_with_overhead"
TREATMENT_CHEAPER = "treatment_cheaper"
OVERHEAD_UNKNOWN = "overhead_not_material_or_unknown"


def _non_empty_string(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def label_pool(comparison: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every failure signal of the attempt: comparison labels, and each run's labels and first blocker.

    The reference also pools a run-level ``worker_start_status``, which
    compaction always drops, so it is not read here.
    """
    pool = {label for label in comparison.get("failure_attribution_labels") or [] if isinstance(label, str)}
    for run in runs:
        pool.update(failure_labels(run))
        if _non_empty_string(run.get("first_blocker")):
            pool.add(run["first_blocker"])
    return pool


def repair_candidates(labels: set[str], claim_blockers: Sequence[str], assisted: bool) -> list[str]:
    """The ordered generic repair candidates (§3.3)."""
    candidates = []
    if ENVIRONMENT_SETUP_LABEL in labels:
        candidates.append(ENVIRONMENT_SETUP_CONTRACT)
    elif labels & ADAPTER_STARTUP_LABELS:
        # An environment failure explains any agent-setup symptoms, so it suppresses this one.
        candidates.append(ADAPTER_STARTUP_CONTRACT)
    if labels & LIFECYCLE_MATERIALIZATION_LABELS:
        candidates.append(LIFECYCLE_MATERIALIZATION_GATE)
    for blocker, candidate in BLOCKER_CANDIDATES:
        if blocker in claim_blockers:
            candidates.append(candidate)
    if not candidates and assisted:
        candidates.append(COST_OVERHEAD_GUARD)
    return candidates


def lifecycle_gate(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """Is there compact score or blocker evidence in the comparison itself (§3.4)?"""
    compact_score = claim_number(comparison.get("official_task_score_delta")) is not None
    compact_blocker = bool(comparison.get("failure_attribution_labels"))
    allowed = compact_score or compact_blocker
    return {
        "schema_version": LIFECYCLE_GATE_SCHEMA_VERSION,
        "paired_comparison_present": True,
        "compact_score_or_blocker_present": allowed,
        "budget_count_allowed": allowed,
        "blocked_reason": None if allowed else MISSING_SCORE_OR_BLOCKER,
    }


def learning_status(clean: bool, guard_only: bool, candidates: Sequence[str], candidate: bool, assisted: bool) -> str:
    """§3.5, first matching row (rows 4-5 are unreachable from a claim review but kept in order)."""
    if clean:
        return CLEAN_EVIDENCE
    if guard_only:
        return COST_OVERHEAD_GUARD_STATUS
    if candidates:
        return REPAIR_REQUIRED_STATUS
    if candidate:
        return CANDIDATE_NEEDS_REVIEW
    if assisted:
        return LOOP_EVIDENCE_ONLY_STATUS
    return NO_GAIN_STATUS


def learning_quota_gate(
    budget_count_allowed: bool, candidates: Sequence[str], clean: bool, candidate: bool
) -> dict[str, Any]:
    """Is spending learning budget on this attempt justified (§3.6)?"""
    reasons = [GENERIC_REPAIR_REASON] if candidates else []
    if clean:
        reasons.append(CLEAN_EVIDENCE)
    elif candidate:
        reasons.append(CANDIDATE_NEEDS_REVIEW)
    actionable = bool(reasons)
    if not budget_count_allowed:
        blocked_reason = MISSING_SCORE_OR_BLOCKER
    elif not actionable:
        blocked_reason = NO_LEARNING_SIGNAL
    else:
        blocked_reason = None
    return {
        "schema_version": LEARNING_QUOTA_GATE_SCHEMA_VERSION,
        "actionable_learning_present": actionable,
        "spend_allowed": budget_count_allowed and actionable,
        "actionable_reasons": reasons,
        "blocked_reason": blocked_reason,
    }


def routing(
    guard_only: bool, candidates: Sequence[str], budget_count_allowed: bool, spend_allowed: bool, clean: bool
) -> dict[str, Any]:
    """Where the next attempt may go (§3.7); rows 5-6 are unreachable but kept in order."""
    if guard_only:
        action, repeat = SELECT_NEXT_OR_COST_HYPOTHESIS, False
    elif candidates:
        action, repeat = REPAIR_OR_VALIDATE_PREFIX + candidates[0], False
    elif not budget_count_allowed:
        action, repeat = WRITE_BLOCKER_FIRST, False
    elif not spend_allowed:
        action, repeat = STOP_WITHOUT_SPEND, False
    elif clean:
        action, repeat = RECORD_CLEAN_THEN_NEXT_LANE, True
    else:
        action, repeat = REPEAT_WITH_HYPOTHESIS, True
    return {
        "repeat_allowed": repeat,
        "new_candidate_allowed": (not candidates or guard_only) and spend_allowed,
        "next_allowed_action": action,
    }


def overhead_label(cost: float | None, wall_time: float | None, delta: float | None) -> str:
    extra_cost = cost is not None and cost > 0
    extra_time = wall_time is not None and wall_time > 0
    positive = delta is not None and delta > 0
    if extra_cost and not positive:
        return EXTRA_COST_WITHOUT_GAIN
    if extra_time and not positive:
        return EXTRA_TIME_WITHOUT_GAIN
    if (extra_cost or extra_time) and positive:
        return POSITIVE_DELTA_WITH_OVERHEAD
    if cost is not None and cost < 0:
        return TREATMENT_CHEAPER
    return OVERHEAD_UNKNOWN


def overhead(comparison: Mapping[str, Any], delta: float | None) -> dict[str, Any]:
    """Cost and wall-time overhead of the treatment (§3.8)."""
    cost = claim_number(comparison.get("cost_delta_usd"))
    # The reference prefers ``wall_time_delta_seconds``, but compaction never keeps it.
    wall_time = claim_number(comparison.get("with_loopx_overhead_ms"))
    return {
        "cost_delta_usd": cost,
        "wall_time_delta_seconds_or_ms": wall_time,
        "label": overhead_label(cost, wall_time, delta),
    }


def learning_row(comparison: Mapping[str, Any], runs: Sequence[Mapping[str, Any]], claim: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``benchmark_learning_ledger_v0`` row (without the ``--require-actionable-learning`` gate).

    ``claim`` is the claim review of these very ``comparison`` and ``runs`` when the caller holds it (a fold has just
    reduced it for the batch's ``review-claim`` row: worked out again, it would be the same); it is read, never changed:
    lists taken from it are copied.
    """
    claim = review_claim(comparison, runs) if claim is None else claim
    verdict = claim["decision"]
    delta = claim["official_task_score_delta"]
    clean = verdict["clean_validation_enhancement"]
    candidate = verdict["validation_enhancement_candidate"]
    assisted = claim["treatment_worker_evidence"]["present"]

    candidates = repair_candidates(label_pool(comparison, runs), verdict["blockers"], assisted)
    guard_only = candidates == [COST_OVERHEAD_GUARD]
    gate = lifecycle_gate(comparison)
    quota = learning_quota_gate(gate["budget_count_allowed"], candidates, clean, candidate)
    return {
        "schema_version": SCHEMA_VERSION,
        "input_schema_versions": {
            "benchmark_comparison": claim["input_schema_versions"]["benchmark_comparison"],
            "benchmark_runs": list(claim["input_schema_versions"]["benchmark_runs"]),
            "claim_review": CLAIM_REVIEW_SCHEMA_VERSION,
        },
        "task_id": claim["task_id"],
        "comparison_id": claim["comparison_id"],
        "official_task_score_delta": delta,
        "control_plane_score_delta": claim["control_plane_score_delta"],
        "learning_status": learning_status(clean, guard_only, candidates, candidate, assisted),
        "repair_candidates": candidates,
        "lifecycle_gate": gate,
        "claim_strength": verdict["claim_strength"],
        "claim_blockers": list(verdict["blockers"]),
        "learning_quota_gate": quota,
        "overhead": overhead(comparison, delta),
        "routing": routing(guard_only, candidates, gate["budget_count_allowed"], quota["spend_allowed"], clean),
        "read_boundary": compact_read_boundary(),
        "ok": True,
    }


def reduce(inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any], claim: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The learning ledger of ``inputs``; ``claim``: their claim review, when the caller holds it (:func:`learning_row`)."""
    row = learning_row(*paired_inputs(inputs), claim)
    options = {**DEFAULT_OPTIONS, **options}
    if options["require_actionable_learning"] and row["learning_quota_gate"]["spend_allowed"] is not True:
        row["ok"] = False
        row["error"] = row["learning_quota_gate"]["blocked_reason"]
    return row


def error_payload(message: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return refused_input_payload(SCHEMA_VERSION, message)


def render_markdown(payload: Mapping[str, Any]) -> str:
    return document(
        "Benchmark Learning Ledger",
        [
            code("Schema", get(payload, "schema_version")),
            code("Task", get(payload, "task_id")),
            code("Comparison", get(payload, "comparison_id")),
            code("Official delta", get(payload, "official_task_score_delta")),
            code("Learning status", get(payload, "learning_status")),
            code("Claim strength", get(payload, "claim_strength")),
            code("Repair candidates", get(payload, "repair_candidates")),
            code("Claim blockers", get(payload, "claim_blockers")),
            code("Budget count allowed", get(payload, "lifecycle_gate", "budget_count_allowed")),
            code("Learning spend allowed", get(payload, "learning_quota_gate", "spend_allowed")),
            code("Actionable reasons", get(payload, "learning_quota_gate", "actionable_reasons")),
            code("Overhead label", get(payload, "overhead", "label")),
            code("Repeat allowed", get(payload, "routing", "repeat_allowed")),
            code("New candidate allowed", get(payload, "routing", "new_candidate_allowed")),
            text("Next action", get(payload, "routing", "next_allowed_action")),
            code("Compact only", get(payload, "read_boundary", "compact_only")),
            code("Raw artifacts read", get(payload, "read_boundary", "raw_artifacts_read")),
        ],
    )
