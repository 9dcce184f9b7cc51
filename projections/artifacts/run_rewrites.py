"""The derived rewrites A-F of ``benchmark_run_v0`` compaction (common-inputs.md §3.8, §3.9).

Each rewrite edits the compact run in place and is guarded by a named
predicate; :func:`benchledger.projections.artifacts.run.compact_run` applies
them in the reference's order (D, F, D again, B, C, A, E)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchledger.projections.artifacts.run_tables import (
    MAX_FAILED_CHECKS,
    NATIVE_GOAL_WORKER_PUBLIC_TRACE_MISSING,
    PRE_AGENT_SETUP_MATERIALIZATION_BLOCKED,
)
from benchledger.projections.artifacts.safe import as_object, is_int, is_number, safe_list, safe_text

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
# Looked up with the diagnostic's status as written (any JSON value).
PRE_AGENT_SETUP_LABELS: dict[object, str] = {
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
        self.final_timeout = self.attribution == FINAL_VERIFIER_TIMEOUT or FINAL_VERIFIER_TIMEOUT in self.labels
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
    if not kind:
        return False
    return "missing" not in kind and not diagnosis.final_timeout


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


def runner_failure_blocker(run: Mapping[str, Any]) -> object:
    """The root blocker of a runner failure without an official score, as the run states it; ``None`` unless rewrite E applies."""
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
