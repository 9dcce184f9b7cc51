"""What compaction keeps of a ``benchmark_run_v0`` source: the field tables of each section
(common-inputs.md §3.2-§3.8), source selection (§3.1) and the section compactors that apply them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchledger.projections.artifacts import IntakeError
from benchledger.projections.artifacts.run_rules import (
    Fields,
    boolean,
    boolean_or_number,
    compact_fields,
    fields,
    integer,
    number,
    number_or_text,
    numbers,
    positive_integer,
    subset,
    text,
    text_items,
    text_list,
)
from benchledger.projections.artifacts.safe import numeric_map, safe_list, safe_text

RUN_SCHEMA = "benchmark_run_v0"
RUN_ENVELOPE_KEY = "benchmark_run"

# ---------------------------------------------------------------------------
# Sub-object tables (§3.4-§3.8).
# ---------------------------------------------------------------------------

# The environment-setup context's fields; lifecycle-state reads the same names
# when it re-labels a context, so they are named once, here.
ENVIRONMENT_SETUP_TEXT_FIELDS = (
    "surface",
    "failure_kind",
    "diagnostic_granularity",
    "exception_type",
    "timeout_signal",
    "resource_signal",
    "environment_setup_duration_tier",
    "next_probe",
)
ENVIRONMENT_SETUP_TEXT_LIMIT = 140
ENVIRONMENT_SETUP_BOOLEAN_FIELDS = (
    "environment_setup_present",
    "environment_setup_started",
    "environment_setup_finished",
    "agent_setup_started",
    "agent_execution_started",
    "worker_trace_present",
    "worker_benchmark_run_present",
)
ENVIRONMENT_SETUP_DURATION_FIELD = "environment_setup_duration_seconds"
ENVIRONMENT_SETUP_FAILURE_CONTEXT_FIELDS: Fields = (
    fields(text(ENVIRONMENT_SETUP_TEXT_LIMIT), "schema_version", *ENVIRONMENT_SETUP_TEXT_FIELDS)
    + fields(boolean, *ENVIRONMENT_SETUP_BOOLEAN_FIELDS)
    + fields(number, ENVIRONMENT_SETUP_DURATION_FIELD)
)
environment_setup_failure_context = subset(ENVIRONMENT_SETUP_FAILURE_CONTEXT_FIELDS)

OFFICIAL_TASK_SCORE_FIELDS: Fields = (
    ("kind", text(80)),
    ("value", boolean_or_number),
    ("passed", boolean_or_number),
)

PROGRESS_KEYS = (
    "n_total_trials",
    "n_completed_trials",
    "n_errored_trials",
    "n_running_trials",
    "n_pending_trials",
    "n_cancelled_trials",
    "n_retries",
)

# --- trials (§3.3) ---

OFFICIAL_ZERO_OBSERVATION_FIELDS: Fields = (
    ("schema_version", text(140)),
    ("detected", boolean),
    ("verifier_completed", boolean),
    ("raw_logs_read", boolean),
    ("reward_value", number_or_text(140)),
)

TRIAL_METRIC_KEYS = ("input_tokens", "cache_tokens", "output_tokens", "cost_usd")

TRIAL_FIELDS: Fields = (
    fields(
        text(140),
        "task_id",
        "trial_name",
        "source",
        "exception_type",
        "worker_start_status",
        "verifier_failure_attribution",
    )
    + fields(text_list(5), "verifier_failure_attribution_labels", "agent_failure_attribution_labels")
    + (("reward", numbers()), ("metrics", numbers(TRIAL_METRIC_KEYS)))
    + fields(
        boolean,
        "trajectory_present",
        "verifier_reward_present",
        "artifact_manifest_present",
        "trial_result_present",
    )
    + (
        ("environment_setup_failure_context", environment_setup_failure_context),
        ("official_zero_observation", subset(OFFICIAL_ZERO_OBSERVATION_FIELDS)),
    )
)
MAX_TRIALS = 3

# --- interaction_counters (§3.4; the F rewrite reads the solver-activity keys) ---

MAX_CLI_CALL_RECORDS = 8
LOOPX_CLI_CALL_RECORD_FIELDS: Fields = (
    ("round", positive_integer),
    ("command", text(120)),
    ("flags", text_items(8, 60)),
    ("raw_title_copied", boolean),
    ("raw_output_copied", boolean),
)


def loopx_cli_calls(value: Any) -> Any:
    """A numeric map for an object; for an array, its first non-empty call records."""
    if isinstance(value, Mapping):
        return numeric_map(value) or None
    if isinstance(value, list):
        records = [compact_fields(item, LOOPX_CLI_CALL_RECORD_FIELDS) for item in value if isinstance(item, Mapping)]
        return [record for record in records if record][:MAX_CLI_CALL_RECORDS] or None
    return None


INTERACTION_COUNTER_FIELDS: Fields = (
    (("schema_version", text(100)),)
    + fields(boolean, "controller_trace_present", "loopx_automation_loop", "product_mode_solver_activity_gap")
    + fields(
        integer,
        "controller_action_decisions",
        "heartbeat_count",
        "loopx_state_reads",
        "loopx_state_writes",
        "product_mode_solver_activity_gap_count",
        "remote_command_file_bridge_agent_task_facing_operation_count",
        "remote_command_file_bridge_agent_todo_closeout_count",
    )
    + (
        ("product_mode_solver_activity_missing_reason", text(140)),
        ("loopx_cli_calls", loopx_cli_calls),
    )
)

# --- active_user_observation (§3.2) ---

ACTIVE_USER_OBSERVATION_FIELDS: Fields = (
    fields(text(140), "schema_version", "bridge_surface", "channel_surface", "next_action")
    + fields(
        boolean,
        "feed_present",
        "feed_path_recorded",
        "observed_after_worker_start",
        "worker_observation_proof",
    )
    + fields(
        integer,
        "worker_start_seq",
        "valid_intervention_count",
        "invalid_line_count",
        "observed_intervention_count",
    )
)

# --- worker_bridge_outcome (§3.5) ---

WORKER_BRIDGE_OUTCOME_FIELDS: Fields = (
    fields(
        text(160),
        "schema_version",
        "bridge_surface",
        "runner_return_status",
        "official_score_status",
        "trace_publicness",
        "next_action",
        "score_failure_attribution",
        "worker_submit_eligible_mismatch_reason",
        "worker_bridge_writeback_loss_reason",
        "worker_bridge_materialization_status",
        "worker_bridge_materialization_blocker",
        "worker_bridge_failure_attribution",
        "prompt_driven_first_blocker",
        "controller_last_decision",
        "repeat_blocked_by",
        "pre_worker_startup_blocker",
    )
    + fields(
        boolean,
        "worker_bridge_verified",
        "prompt_driven_loopx_trace_observed",
        "prompt_driven_loopx_lifecycle_observed",
        "counter_trace_present",
        "runner_return_completed",
        "official_score_completed",
        "side_effect_audit_passed",
        "raw_paths_recorded",
        "raw_trace_recorded",
        "credential_values_recorded",
        "runner_side_writeback_guaranteed",
        "worker_submit_eligible_mismatch_observed",
        "worker_bridge_writeback_loss_observed",
        "loopx_controller_trace_present",
        "loopx_controller_trace_public_safe",
        "controller_turn_completed_observed",
    )
    + fields(
        integer,
        "worker_loopx_cli_call_total",
        "loopx_prompt_driven_case_cli_call_count",
        "required_worker_loopx_cli_call_total_min",
        "worker_self_validation_official_score_mismatch_count",
        "worker_validation_scope_ambiguous_official_score_failure_count",
        "worker_bridge_connected_official_score_failure_count",
        "worker_startup_blocker_count",
        "worker_setup_diagnostic_file_count",
        "worker_setup_diagnostic_schema_ok_count",
        "worker_submit_eligible_mismatch_count",
        "worker_bridge_writeback_loss_count",
        "environment_setup_failure_before_worker_count",
        "pre_worker_agent_setup_failure_count",
        "worker_runtime_exception_before_checkpoint_count",
        "verifier_failure_attribution_count",
        "verifier_dependency_failure_count",
        "controller_max_round_observed",
        "controller_max_rounds_budget",
        "controller_followup_prompt_count",
    )
    + fields(number, "controller_round_timeout_sec", "official_score_value")
    + (
        ("failure_attribution_labels", text_list(5)),
        ("environment_setup_failure_context", environment_setup_failure_context),
    )
)

# --- runner_failure (§3.8; read by rewrite E) ---

RUNNER_FAILURE_FIELDS: Fields = (
    fields(text(140), "schema_version", "exception_type", "failure_class")
    + fields(boolean, "raw_error_recorded", "raw_logs_read", "raw_task_text_read", "raw_trajectory_read")
    + (
        (
            "controller_cutoff",
            subset(
                fields(text(140), "schema_version", "reason")
                + fields(integer, "max_rounds_budget", "followup_prompt_count")
                + fields(boolean, "cutoff_before_followup")
            ),
        ),
        (
            "user_loop_recovery",
            subset(
                fields(text(140), "schema_version", "exception_type")
                + fields(integer, "round", "delta_events", "delta_tool_calls")
                + fields(boolean, "raw_error_recorded", "preserved_final_verify")
            ),
        ),
        (
            "native_goal_worker",
            subset(
                fields(text(140), "schema_version", "failure_label", "first_blocker", "trace_status")
                + fields(integer, "trace_count")
            ),
        ),
    )
)

# --- inputs of the SkillsBench rewrites (§3.8, §3.9) ---

TASK_STAGING_FIELDS: Fields = (("schema_version", text(140)),) + fields(
    boolean,
    "staged",
    "verifier_uv_bootstrap_risk_detected",
    "verifier_bootstrap_risk_detected",
    "verifier_bootstrap_risk_preflight_blocked",
)

TASK_SETUP_PREFLIGHT_FIELDS: Fields = (
    fields(text(140), "schema_version", "status", "first_blocker")
    + fields(
        boolean,
        "verifier_uv_bootstrap_risk_detected",
        "verifier_package_install_risk_detected",
        "verifier_bootstrap_risk_detected",
        "bootstrap_light_candidate_eligible",
    )
    + (("bootstrap_light_blocking_fields", text_list(8)),)
)

RUNNER_SOURCE_FINGERPRINT_FIELDS: Fields = fields(
    text(140), "loopx_runner_source_fingerprint_status", "loopx_runner_source_first_blocker"
)

COMPOSE_SETUP_DIAGNOSTIC_FIELDS: Fields = fields(text(140), "schema_version", "status") + fields(
    boolean, "agent_rounds_started"
)

PRODUCT_MODE_LIFECYCLE_CONTRACT_FIELDS: Fields = (
    (("schema_version", text(140)),)
    + fields(
        boolean,
        "required",
        "satisfied",
        "countable_treatment",
        "closeout_satisfied",
        "agent_operation_trace_required",
        "agent_operation_trace_satisfied",
        "agent_operation_trace_missing",
    )
    + fields(
        integer,
        "state_read_count",
        "state_write_count",
        "agent_bridge_todo_closeout_count",
        "agent_bridge_refresh_state_count",
        "agent_bridge_quota_spend_slot_count",
    )
    + (("missing_reason", text(140)),)
)

# --- validation (§3.7) ---

# Boolean checks whose ``false`` is informational, never a failed check.
NEUTRAL_VALIDATION_CHECKS = frozenset(
    {
        "case_success_claimed",
        "case_solution_not_required_for_probe",
        "official_case_success",
        "official_verifier_validation_present",
        "native_goal_worker_route",
        "native_goal_worker_connected",
        "native_goal_worker_trace_dir_present",
        "native_goal_worker_public_trace_read",
        "native_goal_worker_trace_observed",
        "remote_command_file_bridge_consumed_by_solver",
        "remote_command_file_bridge_solver_public_trace_read",
        "loopx_controller_trace_present",
        "leaderboard_claim_allowed",
        "official_score_claim_allowed",
        "probe_contract_result_present",
        "assisted_collaboration_claim_allowed",
    }
)
MAX_FAILED_CHECKS = 5
NATIVE_GOAL_WORKER_PUBLIC_TRACE_MISSING = "native_goal_worker_public_trace_missing"
PRE_AGENT_SETUP_MATERIALIZATION_BLOCKED = "pre_agent_setup_materialization_blocked"
# Trace statuses of a connected native goal worker that left no public trace.
NATIVE_GOAL_WORKER_TRACE_MISSING_STATUSES = frozenset(
    {
        "worker_connected_trace_dir_missing",
        "worker_connected_no_public_trace",
        "worker_connected_no_prompt_trace",
        "worker_prompt_received_no_turn_trace",
        "worker_connected_no_turn_trace",
        "worker_route_selected_not_connected",
    }
)
# Native-goal-worker facts kept in compact validation (rewrite D falls back to them).
VALIDATION_FIELDS: Fields = (
    fields(boolean, "native_goal_worker_route", "native_goal_worker_connected")
    + (
        ("native_goal_worker_trace_count", integer),
        ("native_goal_worker_trace_status", text(140)),
    )
)

# --- top level (§3.2) ---

READ_BOUNDARY_FIELDS: Fields = fields(
    boolean,
    "compact_only",
    "raw_artifacts_read",
    "task_text_read",
    "trajectory_read",
    "controller_trace_read",
    "local_paths_recorded",
    "docker_invoked",
    "model_api_invoked",
    "upload_invoked",
)

IDENTITY_FIELDS: Fields = fields(text(120), "source_runner", "benchmark_id", "job_name", "mode")

ATTRIBUTION_FIELDS: Fields = fields(
    text(140),
    "worker_mode",
    "trace_publicness",
    "first_blocker",
    "score_failure_attribution",
    "worker_bridge_materialization_status",
    "worker_bridge_materialization_blocker",
    "worker_bridge_failure_attribution",
    "repeat_blocked_by",
    "pre_worker_startup_blocker",
    "runner_return_status",
    "official_score_source",
    "official_score_status",
)

SCORE_AND_COUNTER_FIELDS: Fields = (
    fields(
        boolean,
        "submit_eligible",
        "leaderboard_evidence",
        "hardened_install_baseline",
        "native_goal_worker_route",
        "native_goal_worker_connected",
        "official_score_comparable_to_native_codex",
        "official_score_comparable_to_loopx_treatment",
    )
    + fields(
        integer,
        "worker_loopx_cli_call_total",
        "worker_benchmark_run_schema_ok_count",
        "worker_self_validation_official_score_mismatch_count",
        "worker_validation_scope_ambiguous_official_score_failure_count",
        "worker_bridge_connected_official_score_failure_count",
        "worker_startup_blocker_count",
        "worker_submit_eligible_mismatch_count",
        "environment_setup_failure_before_worker_count",
        "verifier_failure_attribution_count",
        "verifier_dependency_failure_count",
        "native_goal_worker_trace_count",
    )
    + (
        ("official_score", number),
        ("official_task_score", subset(OFFICIAL_TASK_SCORE_FIELDS)),
        ("failure_attribution_labels", text_list(5)),
    )
)

# Sub-objects compacted before the first pass of rewrite D (which reads
# ``compose_setup_diagnostic``) and the later rewrites.
REWRITE_INPUT_FIELDS: Fields = (
    ("progress", numbers(PROGRESS_KEYS)),
    ("runner_failure", subset(RUNNER_FAILURE_FIELDS)),
    ("task_staging", subset(TASK_STAGING_FIELDS)),
    ("task_setup_preflight", subset(TASK_SETUP_PREFLIGHT_FIELDS)),
    ("runner_prerequisites", subset(RUNNER_SOURCE_FINGERPRINT_FIELDS)),
    ("runner_config", subset(RUNNER_SOURCE_FINGERPRINT_FIELDS)),
    ("compose_setup_diagnostic", subset(COMPOSE_SETUP_DIAGNOSTIC_FIELDS)),
)

# Sub-objects compacted between the first pass of rewrite D and rewrite F.
OBSERVATION_FIELDS: Fields = (
    ("interaction_counters", subset(INTERACTION_COUNTER_FIELDS)),
    ("active_user_observation", subset(ACTIVE_USER_OBSERVATION_FIELDS)),
    ("worker_bridge_outcome", subset(WORKER_BRIDGE_OUTCOME_FIELDS)),
    ("environment_setup_failure_context", environment_setup_failure_context),
    ("product_mode_lifecycle_contract", subset(PRODUCT_MODE_LIFECYCLE_CONTRACT_FIELDS)),
)

# ---------------------------------------------------------------------------
# Source selection (§3.1) and the one input that makes compaction fail (§3.8.1).
# ---------------------------------------------------------------------------


def run_source(value: Any) -> Mapping[str, Any] | None:
    """The ``benchmark_run_v0`` object to compact: the nested envelope first, else the value itself."""
    if not isinstance(value, Mapping):
        return None
    nested = value.get(RUN_ENVELOPE_KEY)
    if isinstance(nested, Mapping) and nested.get("schema_version") == RUN_SCHEMA:
        return nested
    if value.get("schema_version") == RUN_SCHEMA:
        return value
    return None


def check_case_event_timeline(source: Mapping[str, Any]) -> None:
    """The reference iterates ``case_event_timeline.events`` and fails on a non-iterable value."""
    timeline = source.get("case_event_timeline")
    if isinstance(timeline, Mapping) and "events" in timeline:
        events = timeline["events"]
        if events is None or isinstance(events, (bool, int, float)):
            raise IntakeError(f"'{type(events).__name__}' object is not iterable")


# ---------------------------------------------------------------------------
# Section compactors.
# ---------------------------------------------------------------------------


def compact_case_ids(source: Mapping[str, Any]) -> dict[str, Any]:
    """``case_id`` from the first source that yields text, and ``case_ids`` alongside it."""
    trials = source.get("trials")
    case_ids = source.get("case_ids")
    candidates = [source.get("case_id"), source.get("task_id")]
    if isinstance(trials, list) and trials and isinstance(trials[0], Mapping):
        candidates.append(trials[0].get("task_id"))
    if isinstance(case_ids, list) and case_ids:
        candidates.append(case_ids[0])
    case_id = next((text for text in (safe_text(raw, 120) for raw in candidates) if text), None)
    if case_id is None:
        return {}
    kept_ids = safe_list(case_ids, 5) if isinstance(case_ids, list) else []
    return {"case_id": case_id, "case_ids": kept_ids or [case_id]}


def compact_trials(value: Any) -> dict[str, Any]:
    """The first three non-empty compact trials and the raw trial count (§3.3)."""
    if not isinstance(value, list):
        return {}
    kept: list[dict[str, Any]] = []
    for raw in value:
        if len(kept) == MAX_TRIALS:
            break
        if isinstance(raw, Mapping):
            trial = compact_fields(raw, TRIAL_FIELDS)
            if trial:
                kept.append(trial)
    if not kept:
        return {}
    return {"trials": kept, "trial_count": len(value)}


def native_goal_worker_trace_missing(validation: Mapping[str, Any]) -> bool:
    """A routed native goal worker whose trace status says no public trace exists."""
    status = safe_text(validation.get("native_goal_worker_trace_status"), 140)
    return validation.get("native_goal_worker_route") is True and status in NATIVE_GOAL_WORKER_TRACE_MISSING_STATUSES


def append_failed_check(failed_checks: list[str], check: str) -> None:
    if len(failed_checks) < MAX_FAILED_CHECKS and check not in failed_checks:
        failed_checks.append(check)


def compact_validation(value: Any, pre_agent_blocked: bool) -> dict[str, Any] | None:
    """Failed checks derived from the boolean checks, plus the native-goal-worker facts (§3.7)."""
    if not isinstance(value, Mapping) or not value:
        return None
    failed_checks = [
        name for name, check in value.items() if check is False and name not in NEUTRAL_VALIDATION_CHECKS
    ][:MAX_FAILED_CHECKS]
    if pre_agent_blocked:
        append_failed_check(failed_checks, PRE_AGENT_SETUP_MATERIALIZATION_BLOCKED)
    elif native_goal_worker_trace_missing(value):
        append_failed_check(failed_checks, NATIVE_GOAL_WORKER_PUBLIC_TRACE_MISSING)
    non_neutral_passed = all(
        check for name, check in value.items() if isinstance(check, bool) and name not in NEUTRAL_VALIDATION_CHECKS
    )
    return {
        "all_passed": not failed_checks and non_neutral_passed,
        "failed_checks": failed_checks,
        **compact_fields(value, VALIDATION_FIELDS),
    }
