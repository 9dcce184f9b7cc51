"""Compaction of ``benchmark_run_v0`` artifacts, as LoopX 0.4.8 does it.

Every review that reads a run reads the compact form produced here, so these
rules decide what a review can ever see: fields are copied only when they have
the expected JSON type, text passes the public-safe filter (local paths and
secret-looking values vanish), lists and trials are capped, and a few
benchmark-specific rewrites correct the attribution fields before any review
runs. Spec: common-inputs.md §3 and common-inputs-part1.md §5.1.

Layout: value rules and field tables; the section compactors (trials, counters,
bridge outcome, validation, ...); the derived rewrites A-F, each guarded by a
named predicate; and :func:`compact_run`, which applies them in the
reference's order. Sub-objects that only feed the rewrites (task staging,
preflight, prerequisites, compose diagnostic, lifecycle contract, runner
failure) are kept with just the fields the rewrites read.

Deliberately not reproduced, because no rule or review reads them: the
derived ``solution_quality_signals`` block (it only makes every matching
source compactable, which :func:`run_source` already decides), the other
informational sub-objects (agent, episode policy, debug gates, ...), and
rewrite D's edits of ``attempt_accounting`` failure labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from benchledger.projections.artifacts import IntakeError, NotCompactable
from benchledger.projections.artifacts.safe import as_object, is_int, is_number, numeric_map, safe_list, safe_text

RUN_SCHEMA = "benchmark_run_v0"
RUN_ENVELOPE_KEY = "benchmark_run"

# ---------------------------------------------------------------------------
# Value rules: each maps a raw JSON value to its compact value, or to ``None``
# when the field is omitted (empty lists, maps and objects are omitted too).
# ---------------------------------------------------------------------------

Rule = Callable[[Any], Any]


def text(limit: int) -> Rule:
    """Public-safe text of at most ``limit`` characters."""
    return lambda value: safe_text(value, limit)


def text_list(max_items: int) -> Rule:
    """Public-safe list of at most ``max_items`` strings."""
    return lambda value: safe_list(value, max_items) or None


def text_items(max_items: int, limit: int) -> Rule:
    """Public-safe ``limit``-character texts of a JSON array, at most ``max_items``."""

    def rule(value: Any) -> list[str] | None:
        if not isinstance(value, list):
            return None
        kept = [item for item in (safe_text(raw, limit) for raw in value) if item is not None]
        return kept[:max_items] or None

    return rule


def boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def integer(value: Any) -> int | None:
    return value if is_int(value) else None


def positive_integer(value: Any) -> int | None:
    return value if is_int(value) and value > 0 else None


def number(value: Any) -> int | float | None:
    return value if is_number(value) else None


def boolean_or_number(value: Any) -> Any:
    return value if isinstance(value, bool) or is_number(value) else None


def number_or_text(limit: int) -> Rule:
    """Numbers verbatim, anything else as public-safe text."""
    return lambda value: value if is_number(value) else safe_text(value, limit)


def numbers(keys: tuple[str, ...] | None = None) -> Rule:
    """Numeric map of an object over ``keys`` (every key when ``None``)."""
    return lambda value: numeric_map(value, keys) or None


Fields = tuple[tuple[str, Rule], ...]


def fields(rule: Rule, *names: str) -> Fields:
    """Table rows giving every name in ``names`` the same rule."""
    return tuple((name, rule) for name in names)


def compact_fields(source: Mapping[str, Any], table: Fields) -> dict[str, Any]:
    """Apply a field table: the present keys, in table order, that their rule keeps."""
    compact: dict[str, Any] = {}
    for name, rule in table:
        if name in source:
            value = rule(source[name])
            if value is not None:
                compact[name] = value
    return compact


def subset(table: Fields) -> Rule:
    """An object compacted with ``table``; omitted when not an object or when nothing survives."""
    return lambda value: (compact_fields(value, table) or None) if isinstance(value, Mapping) else None


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


# ---------------------------------------------------------------------------
# Shared facts and edits used by the rewrites.
# ---------------------------------------------------------------------------

LABELS = "failure_attribution_labels"
MAX_LABELS = 5
ATTRIBUTION = "score_failure_attribution"
FIRST_BLOCKER = "first_blocker"
REPEAT_BLOCKED_BY = "repeat_blocked_by"
COMPARABILITY_FLAGS = (
    "official_score_comparable_to_native_codex",
    "official_score_comparable_to_loopx_treatment",
)


def official_score_missing(run: Mapping[str, Any]) -> bool:
    """Neither ``official_task_score.value`` nor ``official_score`` is a (non-boolean) number."""
    task_score = as_object(run.get("official_task_score"))
    return not is_number(task_score.get("value")) and not is_number(run.get("official_score"))


def labels_of(run: Mapping[str, Any]) -> list[str]:
    return list(run.get(LABELS, ()))


def store_labels(run: dict[str, Any], labels: list[str], cap: int | None = MAX_LABELS) -> None:
    """Store ``labels`` (cut to ``cap`` unless it is ``None``), removing the field when empty."""
    labels = labels[:cap]
    if labels:
        run[LABELS] = labels
    else:
        run.pop(LABELS, None)


def with_leading_labels(leading: list[str], previous: list[str], dropped: frozenset[str]) -> list[str]:
    """``leading`` then the previous labels that are neither leading nor ``dropped``."""
    return leading + [label for label in previous if label not in leading and label not in dropped]


def block_score_comparability(run: dict[str, Any], blocker: str) -> None:
    """Make ``blocker`` the attribution and both blockers, and mark the score not comparable."""
    for field in (ATTRIBUTION, FIRST_BLOCKER, REPEAT_BLOCKED_BY):
        run[field] = blocker
    for flag in COMPARABILITY_FLAGS:
        run[flag] = False


def mark_validation(run: dict[str, Any], marks: Mapping[str, Any]) -> None:
    """Set ``marks`` in compact validation, creating it when absent."""
    run.setdefault("validation", {}).update(marks)


# ---------------------------------------------------------------------------
# Rewrite D: SkillsBench pre-agent setup block.
# ---------------------------------------------------------------------------

SKILLSBENCH_APP_SERVER_GOAL_BASELINE = "skillsbench_codex_app_server_goal_baseline"
PRE_AGENT_SETUP_LABELS = {
    "compose_setup_blocked_before_agent_rounds": "skillsbench_compose_setup_blocked_before_agent_rounds",
    "runner_setup_blocked_before_agent_rounds": "skillsbench_runner_setup_blocked_before_agent_rounds",
}
PRE_AGENT_MATERIALIZATION_LABEL = "skillsbench_app_server_goal_pre_agent_materialization_blocked"
RUNNER_SETUP_ERROR_LABEL = "skillsbench_runner_setup_error"
PRE_AGENT_REPLACEABLE_ATTRIBUTIONS = frozenset({"none", "score_missing", "skillsbench_runner_error"})
NATIVE_GOAL_WORKER_ATTRIBUTION_PREFIX = "skillsbench_native_goal_worker_"
PRE_AGENT_BLOCKED_FLAGS = ("pre_agent_setup_materialization_blocked", "native_goal_worker_pre_agent_setup_blocked")


def is_pre_agent_blocked(run: Mapping[str, Any]) -> bool:
    return run.get(PRE_AGENT_BLOCKED_FLAGS[0]) is True


def native_goal_worker_fact(run: Mapping[str, Any], name: str) -> Any:
    """A native-goal-worker fact from the compact top level if present there, else from validation."""
    if name in run:
        return run[name]
    return as_object(run.get("validation")).get(name)


def pre_agent_setup_label(run: Mapping[str, Any]) -> str | None:
    """The pre-agent setup block label when rewrite D applies, else ``None``."""
    diagnostic = as_object(run.get("compose_setup_diagnostic"))
    label = PRE_AGENT_SETUP_LABELS.get(diagnostic.get("status"))
    trace_count = native_goal_worker_fact(run, "native_goal_worker_trace_count")
    applies = (
        label is not None
        and run.get("mode") == SKILLSBENCH_APP_SERVER_GOAL_BASELINE
        and native_goal_worker_fact(run, "native_goal_worker_route") is True
        and native_goal_worker_fact(run, "native_goal_worker_connected") is not True
        and not (is_int(trace_count) and trace_count > 0)
        and diagnostic.get("agent_rounds_started") is not True
        and official_score_missing(run)
    )
    return label if applies else None


def pre_agent_attribution_replaceable(attribution: str | None) -> bool:
    return (
        not attribution
        or attribution in PRE_AGENT_REPLACEABLE_ATTRIBUTIONS
        or attribution.startswith(NATIVE_GOAL_WORKER_ATTRIBUTION_PREFIX)
    )


def rewrite_pre_agent_setup_block(run: dict[str, Any]) -> None:
    label = pre_agent_setup_label(run)
    if label is None:
        return
    if pre_agent_attribution_replaceable(run.get(ATTRIBUTION)):
        run[ATTRIBUTION] = label
        run[FIRST_BLOCKER] = label
    labels = labels_of(run)
    for added in (label, PRE_AGENT_MATERIALIZATION_LABEL, RUNNER_SETUP_ERROR_LABEL):
        if added not in labels:
            labels.append(added)
    store_labels(run, labels)
    validation = run.get("validation")
    if validation is not None:
        checks = [
            check for check in validation.get("failed_checks", ()) if check != NATIVE_GOAL_WORKER_PUBLIC_TRACE_MISSING
        ]
        if PRE_AGENT_SETUP_MATERIALIZATION_BLOCKED not in checks:
            checks.append(PRE_AGENT_SETUP_MATERIALIZATION_BLOCKED)
        validation["failed_checks"] = checks[:MAX_FAILED_CHECKS]
        validation["all_passed"] = False
    for flag in PRE_AGENT_BLOCKED_FLAGS:
        run[flag] = True


# ---------------------------------------------------------------------------
# Rewrite F: product-mode lifecycle repair.
# ---------------------------------------------------------------------------

PRODUCT_MODE_LIFECYCLE_MISSING = "skillsbench_product_mode_lifecycle_missing"
PRODUCT_MODE_STALE_LABELS = frozenset(
    {
        PRODUCT_MODE_LIFECYCLE_MISSING,
        "skillsbench_product_mode_uncountable_treatment",
        "skillsbench_case_local_loopx_state_not_observed",
        "skillsbench_remote_bridge_agent_no_requests",
        "skillsbench_remote_bridge_agent_operation_trace_missing",
    }
)
SOLVER_ACTIVITY_GAP = "skillsbench_product_mode_solver_activity_gap"
OFFICIAL_VERIFIER_SOLUTION_FAILURE = "official_verifier_solution_failure"
SOLVER_ACTIVITY_GAP_SUPERSEDED_LABELS = frozenset(
    {OFFICIAL_VERIFIER_SOLUTION_FAILURE, "official_score_zero_case_failure"}
)
SOLVER_ACTIVITY_MISSING_REASON = "missing_task_facing_activity_or_agent_closeout_before_declared_done"
# Zero counts of these bridge operations show the solver never acted.
SOLVER_ACTIVITY_ZERO_COUNTS = (
    "remote_command_file_bridge_agent_task_facing_operation_count",
    "remote_command_file_bridge_agent_todo_closeout_count",
)
RESOLVED_LIFECYCLE_MISSING_REASONS = frozenset(
    {"missing_case_local_loopx_closeout", "remote_command_file_bridge_agent_operation_trace_missing"}
)
CLOSEOUT_COUNTS = (
    "agent_bridge_todo_closeout_count",
    "agent_bridge_refresh_state_count",
    "agent_bridge_quota_spend_slot_count",
)


def positive(value: Any) -> bool:
    return is_number(value) and value > 0


def lifecycle_contract_fulfilled(contract: Mapping[str, Any]) -> bool:
    """Required, traced (or trace not required), state read and written, and closed out."""
    trace_ok = contract.get("agent_operation_trace_missing") is not True and (
        contract.get("agent_operation_trace_satisfied") is True
        or contract.get("agent_operation_trace_required") is not True
    )
    closed_out = contract.get("closeout_satisfied") is True or all(
        positive(contract.get(name)) for name in CLOSEOUT_COUNTS
    )
    return (
        contract.get("required") is True
        and trace_ok
        and positive(contract.get("state_read_count"))
        and positive(contract.get("state_write_count"))
        and closed_out
    )


def normalize_lifecycle_contract(run: dict[str, Any]) -> None:
    """Mark a fulfilled product-mode lifecycle contract satisfied and countable."""
    contract = run.get("product_mode_lifecycle_contract")
    if contract is None or not lifecycle_contract_fulfilled(contract):
        return
    contract.update(satisfied=True, countable_treatment=True, closeout_satisfied=True)
    if contract.get("missing_reason") in RESOLVED_LIFECYCLE_MISSING_REASONS:
        del contract["missing_reason"]


def lifecycle_repair_applies(run: Mapping[str, Any]) -> bool:
    contract = as_object(run.get("product_mode_lifecycle_contract"))
    return (
        all(contract.get(name) is True for name in ("required", "satisfied", "countable_treatment"))
        and run.get(ATTRIBUTION) == PRODUCT_MODE_LIFECYCLE_MISSING
    )


def solver_activity_gap(run: Mapping[str, Any]) -> bool:
    counters = as_object(run.get("interaction_counters"))
    if counters.get("product_mode_solver_activity_gap") is not True:
        return False
    return (
        counters.get("product_mode_solver_activity_missing_reason") == SOLVER_ACTIVITY_MISSING_REASON
        or positive(counters.get("product_mode_solver_activity_gap_count"))
        or any(name in counters and counters[name] == 0 for name in SOLVER_ACTIVITY_ZERO_COUNTS)
    )


def rewrite_product_mode_lifecycle(run: dict[str, Any]) -> None:
    normalize_lifecycle_contract(run)
    if not lifecycle_repair_applies(run):
        return
    labels = [label for label in safe_list(run.get(LABELS), MAX_LABELS) if label not in PRODUCT_MODE_STALE_LABELS]
    if solver_activity_gap(run):
        replacement = SOLVER_ACTIVITY_GAP
        labels = [label for label in labels if label not in SOLVER_ACTIVITY_GAP_SUPERSEDED_LABELS]
    elif is_number(run.get("official_score")) and run["official_score"] == 0:
        replacement = OFFICIAL_VERIFIER_SOLUTION_FAILURE
    else:
        replacement = "none"
    run[ATTRIBUTION] = replacement
    if replacement != "none" and replacement not in labels:
        labels.insert(0, replacement)
    store_labels(run, labels)


# ---------------------------------------------------------------------------
# Rewrite B: runner source fingerprint mismatch.
# ---------------------------------------------------------------------------

FINGERPRINT_MISMATCH_STATUS = "mismatched_expected"
RUNNER_SOURCE_GIT_HEAD_MISMATCH = "loopx_runner_source_git_head_mismatch"
FINGERPRINT_MISMATCH_LABELS = ("skillsbench_runner_source_fingerprint_mismatch", RUNNER_SETUP_ERROR_LABEL)
VERIFIER_BOOTSTRAP_LABELS = frozenset(
    {
        "verifier_dependency_bootstrap_timeout",
        "verifier_dependency_install_failure",
        "verifier_uv_install_or_download_failure",
        "skillsbench_verifier_bootstrap_missing_official_score",
        "skillsbench_verifier_bootstrap_preflight_blocked",
        "skillsbench_verifier_package_install_risk",
    }
)


def runner_source_fact(run: Mapping[str, Any], name: str) -> Any:
    """A runner-source fingerprint fact from the prerequisites, else from the runner config."""
    return as_object(run.get("runner_prerequisites")).get(name) or as_object(run.get("runner_config")).get(name)


def runner_source_mismatch_blocker(run: Mapping[str, Any]) -> str | None:
    """The git-head mismatch blocker when rewrite B applies, else ``None``."""
    status = runner_source_fact(run, "loopx_runner_source_fingerprint_status")
    blocker = runner_source_fact(run, "loopx_runner_source_first_blocker")
    applies = (
        status == FINGERPRINT_MISMATCH_STATUS
        and blocker == RUNNER_SOURCE_GIT_HEAD_MISMATCH
        and official_score_missing(run)
    )
    return blocker if applies else None


def rewrite_runner_source_mismatch(run: dict[str, Any]) -> None:
    blocker = runner_source_mismatch_blocker(run)
    if blocker is None:
        return
    block_score_comparability(run, blocker)
    labels = with_leading_labels([blocker, *FINGERPRINT_MISMATCH_LABELS], labels_of(run), VERIFIER_BOOTSTRAP_LABELS)
    store_labels(run, labels)
    mark_validation(run, {"runner_source_fingerprint_mismatch": True, "all_passed": False})


# ---------------------------------------------------------------------------
# Rewrite C: egress preflight block (reads the raw runner_config).
# ---------------------------------------------------------------------------

ENVIRONMENT_SETUP_ERROR_LABEL = "skillsbench_environment_setup_error"
EGRESS_STALE_LABELS = frozenset(
    {
        "skillsbench_product_mode_uncountable_treatment",
        "skillsbench_remote_bridge_agent_operation_trace_missing",
        "skillsbench_verifier_package_install_risk",
        "skillsbench_verifier_uv_install_or_download_failure",
        "verifier_dependency_install_failure",
    }
)


@dataclass(frozen=True)
class EgressPreflight:
    """One egress preflight of the runner config and the labels its block produces."""

    prefix: str  # the config keys are ``<prefix>_required``, ``<prefix>_ready``, ``<prefix>_status``
    blocked_statuses: frozenset[str]
    label: str
    status_label_prefix: str
    validation_check: str

    def blocked_status(self, config: Mapping[str, Any]) -> str | None:
        """The blocking status when this preflight was required, not ready and failed."""
        status = safe_text(config.get(f"{self.prefix}_status"), 120)
        required = config.get(f"{self.prefix}_required") is True
        ready = config.get(f"{self.prefix}_ready") is True
        return status if required and not ready and status in self.blocked_statuses else None


# In precedence order: the benchmark proxy wins when both are blocked.
EGRESS_PREFLIGHTS = (
    EgressPreflight(
        "benchmark_egress_proxy",
        frozenset(
            {
                "failed",
                "invalid_proxy_value",
                "missing_required_proxy",
                "proxy_auth_required",
                "proxy_connect_rejected",
                "unsupported_proxy_scheme",
            }
        ),
        label="skillsbench_benchmark_egress_proxy_preflight_blocked",
        status_label_prefix="skillsbench_benchmark_egress_proxy_",
        validation_check="benchmark_egress_proxy_preflight_blocked",
    ),
    EgressPreflight(
        "codex_api_egress_preflight",
        frozenset(
            {
                "failed",
                "missing_reverse_tunnel_proxy",
                "proxy_auth_required",
                "proxy_connect_rejected",
                "unsupported_egress_mode",
                "unsupported_proxy_scheme",
            }
        ),
        label="skillsbench_codex_api_egress_preflight_blocked",
        status_label_prefix="skillsbench_codex_api_egress_",
        validation_check="codex_api_egress_preflight_blocked",
    ),
)


def blocked_egress_preflight(run: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[EgressPreflight, str] | None:
    """The first blocked egress preflight and its status when rewrite C applies, else ``None``."""
    if not official_score_missing(run):
        return None
    for preflight in EGRESS_PREFLIGHTS:
        status = preflight.blocked_status(config)
        if status is not None:
            return preflight, status
    return None


def rewrite_egress_preflight_block(run: dict[str, Any], raw_runner_config: Any) -> None:
    blocked = blocked_egress_preflight(run, as_object(raw_runner_config))
    if blocked is None:
        return
    preflight, status = blocked
    block_score_comparability(run, preflight.label)
    leading = [preflight.label, ENVIRONMENT_SETUP_ERROR_LABEL, preflight.status_label_prefix + status]
    store_labels(run, with_leading_labels(leading, labels_of(run), EGRESS_STALE_LABELS))
    mark_validation(run, {preflight.validation_check: True, "raw_verifier_output_read": False, "all_passed": False})


# ---------------------------------------------------------------------------
# Rewrite A: verifier bootstrap with a missing official score.
# ---------------------------------------------------------------------------

FINAL_VERIFIER_TIMEOUT = "skillsbench_final_verifier_timeout"
VERIFIER_DEPENDENCY_BOOTSTRAP_TIMEOUT = "verifier_dependency_bootstrap_timeout"
VERIFIER_DEPENDENCY_INSTALL_FAILURE = "verifier_dependency_install_failure"
BOOTSTRAP_MISSING_SCORE_LABEL = "skillsbench_verifier_bootstrap_missing_official_score"
UV_INSTALL_LABEL = "verifier_uv_install_or_download_failure"
PACKAGE_INSTALL_RISK_LABEL = "skillsbench_verifier_package_install_risk"
BOOTSTRAP_PREFLIGHT_BLOCKED_LABEL = "skillsbench_verifier_bootstrap_preflight_blocked"
BOOTSTRAP_TIMEOUT_SCORE_KIND = "skillsbench_verifier_bootstrap_timeout_reward_missing"
BOOTSTRAP_SCORE_KIND = "skillsbench_verifier_bootstrap_reward_missing"
VERIFIER_BOOTSTRAP_RISK = "verifier_bootstrap_risk"
VERIFIER_BOOTSTRAP_RISK_DETECTED = "verifier_bootstrap_risk_detected"
BOOTSTRAP_LIGHT_BLOCKING_RISKS = frozenset({"verifier_package_install_risk_detected", VERIFIER_BOOTSTRAP_RISK_DETECTED})
# Generic "no score" outcomes a verifier-bootstrap diagnosis may replace.
GENERIC_MISSING_SCORE_LABELS = frozenset(
    {
        "official_score_missing",
        "skillsbench_result_json_missing_after_runner_exit",
        "skillsbench_runner_error",
        "skillsbench_runner_failed_before_agent_install",
        "skillsbench_runner_interrupted_before_official_result",
        RUNNER_SETUP_ERROR_LABEL,
        "skillsbench_verifier_reward_missing",
    }
)
PRE_AGENT_REPLACEABLE_LABELS = frozenset(
    {
        PRODUCT_MODE_LIFECYCLE_MISSING,
        "skillsbench_product_mode_uncountable_treatment",
        "skillsbench_remote_bridge_agent_operation_trace_missing",
    }
)
FINAL_TIMEOUT_REPLACEABLE_LABELS = frozenset({FINAL_VERIFIER_TIMEOUT, "skillsbench_verifier_timeout"})
VERIFIER_COUNTERS = ("verifier_failure_attribution_count", "verifier_dependency_failure_count")


class BootstrapRisk:
    """What the compact task staging (S) and setup preflight (P) say about the verifier bootstrap."""

    def __init__(self, run: Mapping[str, Any]):
        staging = as_object(run.get("task_staging"))
        preflight = as_object(run.get("task_setup_preflight"))
        self.uv = (
            staging.get("verifier_uv_bootstrap_risk_detected") is True
            or preflight.get("verifier_uv_bootstrap_risk_detected") is True
        )
        self.package = preflight.get("verifier_package_install_risk_detected") is True
        bootstrap = (
            staging.get("verifier_bootstrap_risk_detected") is True
            or preflight.get("verifier_bootstrap_risk_detected") is True
        )
        explicit = (
            staging.get("verifier_bootstrap_risk_preflight_blocked") is True
            or preflight.get("first_blocker") == VERIFIER_BOOTSTRAP_RISK
        )
        self.pre_agent = (
            explicit
            or staging.get("staged") is False
            or preflight.get("bootstrap_light_candidate_eligible") is False
            or not BOOTSTRAP_LIGHT_BLOCKING_RISKS.isdisjoint(preflight.get("bootstrap_light_blocking_fields", ()))
        )
        self.blocked = explicit or (
            bootstrap and self.pre_agent and preflight.get("status") == VERIFIER_BOOTSTRAP_RISK_DETECTED
        )
        self.diagnosed = self.uv or self.blocked or (self.package and bootstrap)


class BootstrapDiagnosis:
    """Rewrite A's view of a run whose official score is missing."""

    def __init__(self, run: Mapping[str, Any]):
        self.attribution = run.get(ATTRIBUTION) or ""
        self.labels = labels_of(run)
        self.final_timeout = FINAL_VERIFIER_TIMEOUT in (self.attribution, *self.labels)
        self.risk = BootstrapRisk(run)

    def replaceable_labels(self) -> frozenset[str]:
        labels = set(GENERIC_MISSING_SCORE_LABELS)
        if self.risk.pre_agent:
            labels |= PRE_AGENT_REPLACEABLE_LABELS
        if self.final_timeout:
            labels |= FINAL_TIMEOUT_REPLACEABLE_LABELS
        return frozenset(labels)

    def replaceable_attributions(self) -> frozenset[str]:
        attributions = set(GENERIC_MISSING_SCORE_LABELS) | {"", "none"}
        if self.risk.pre_agent:
            attributions |= {PRODUCT_MODE_LIFECYCLE_MISSING, "skillsbench_remote_bridge_agent_operation_trace_missing"}
        if self.final_timeout:
            attributions.add(FINAL_VERIFIER_TIMEOUT)
        return frozenset(attributions)

    def added_labels(self) -> list[str]:
        added = [self.attribution_label(), BOOTSTRAP_MISSING_SCORE_LABEL]
        if self.risk.uv:
            added.append(UV_INSTALL_LABEL)
        if self.risk.package:
            added.append(PACKAGE_INSTALL_RISK_LABEL)
        if self.risk.blocked:
            added.append(BOOTSTRAP_PREFLIGHT_BLOCKED_LABEL)
        return added

    def attribution_label(self) -> str:
        return VERIFIER_DEPENDENCY_BOOTSTRAP_TIMEOUT if self.final_timeout else VERIFIER_DEPENDENCY_INSTALL_FAILURE

    def score_kind(self) -> str:
        return BOOTSTRAP_TIMEOUT_SCORE_KIND if self.final_timeout else BOOTSTRAP_SCORE_KIND


def score_kind_already_classified(run: Mapping[str, Any], diagnosis: BootstrapDiagnosis) -> bool:
    """A score kind that does not say ``missing`` stands, unless the final verifier timed out."""
    kind = as_object(run.get("official_task_score")).get("kind")
    return bool(kind) and "missing" not in kind and not diagnosis.final_timeout


def verifier_bootstrap_diagnosis(run: Mapping[str, Any]) -> BootstrapDiagnosis | None:
    """The diagnosis when rewrite A applies, else ``None``."""
    if run.get("official_score_status") != "missing" or "official_score" in run:
        return None
    diagnosis = BootstrapDiagnosis(run)
    if score_kind_already_classified(run, diagnosis) or not diagnosis.risk.diagnosed:
        return None
    if diagnosis.attribution not in diagnosis.replaceable_attributions():
        return None
    if not set(diagnosis.labels) <= diagnosis.replaceable_labels():
        return None
    return diagnosis


def rewrite_verifier_bootstrap(run: dict[str, Any]) -> None:
    diagnosis = verifier_bootstrap_diagnosis(run)
    if diagnosis is None:
        return
    block_score_comparability(run, diagnosis.attribution_label())
    for counter in VERIFIER_COUNTERS:
        run[counter] = max(1, run.get(counter, 0))
    replaceable = diagnosis.replaceable_labels()
    labels = [label for label in diagnosis.labels if label not in replaceable]
    for added in diagnosis.added_labels():
        if added not in labels:
            labels.append(added)
    store_labels(run, labels, cap=None)
    run["official_task_score"] = {
        **as_object(run.get("official_task_score")),
        "kind": diagnosis.score_kind(),
        "value": None,
        "passed": False,
    }
    mark_validation(run, {"raw_verifier_output_read": False, "verifier_bootstrap_missing_score_classified": True})


# ---------------------------------------------------------------------------
# Rewrite E: runner-failure root blockers.
# ---------------------------------------------------------------------------

UNSET_ATTRIBUTIONS = frozenset({"none", "score_missing"})
UNSET_BLOCKERS = UNSET_ATTRIBUTIONS | {"skillsbench_runner_error"}


def runner_failure_blocker(run: Mapping[str, Any]) -> str | None:
    """The root blocker of a runner failure without an official score, when rewrite E applies."""
    if "runner_failure" not in run or not official_score_missing(run):
        return None
    attribution = run.get(ATTRIBUTION)
    if attribution is None or attribution in UNSET_ATTRIBUTIONS:
        return run["runner_failure"].get("failure_class")
    return attribution


def rewrite_runner_failure_blockers(run: dict[str, Any]) -> None:
    blocker = runner_failure_blocker(run)
    if not blocker:
        return
    for field in (FIRST_BLOCKER, REPEAT_BLOCKED_BY):
        if run.get(field) is None or run[field] in UNSET_BLOCKERS:
            run[field] = blocker


# ---------------------------------------------------------------------------
# The whole compaction.
# ---------------------------------------------------------------------------


def compact_run(value: Any) -> dict[str, Any]:
    """The reference's compact ``benchmark_run_v0`` of ``value``.

    Raises :class:`NotCompactable` when ``value`` holds no ``benchmark_run_v0``
    source, and :class:`IntakeError` with the reference's Python error text
    when compaction itself fails (§3.8.1).
    """
    source = run_source(value)
    if source is None:
        raise NotCompactable(f"no {RUN_SCHEMA} object")
    check_case_event_timeline(source)

    run: dict[str, Any] = {"schema_version": RUN_SCHEMA}
    run.update(compact_fields(source, IDENTITY_FIELDS))
    run.update(compact_case_ids(source))
    run.update(compact_fields(source, ATTRIBUTION_FIELDS))
    run.update(compact_fields(source, SCORE_AND_COUNTER_FIELDS))
    run.update(compact_fields(source, REWRITE_INPUT_FIELDS))
    rewrite_pre_agent_setup_block(run)
    run.update(compact_fields(source, OBSERVATION_FIELDS))
    rewrite_product_mode_lifecycle(run)
    validation = compact_validation(source.get("validation"), is_pre_agent_blocked(run))
    if validation is not None:
        # The second pass of D belongs to validation compaction: without a
        # validation object it does not happen (even if F reset the attribution).
        run["validation"] = validation
        rewrite_pre_agent_setup_block(run)
    rewrite_runner_source_mismatch(run)
    rewrite_egress_preflight_block(run, source.get("runner_config"))
    rewrite_verifier_bootstrap(run)
    rewrite_runner_failure_blockers(run)
    run.update(compact_trials(source.get("trials")))
    read_boundary = subset(READ_BOUNDARY_FIELDS)(source.get("read_boundary"))
    if read_boundary is not None:
        run["read_boundary"] = read_boundary
    return run
