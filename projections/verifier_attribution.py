"""``review-verifier-attribution``: is a baseline's score failure the verifier's fault?

A "treatment recovered the score" claim only means something when the
baseline's zero is the model's or agent's doing (wrong solution, timeout,
setup failure, crash), not the verifier's (broken dependency install,
platform probe, verifier infrastructure), not a worker/verifier disagreement,
and not simply unexplained. This review classifies every compact run's score
failure from compact evidence only, picks the baseline run, decides whether
the baseline's attribution caveat is resolved and routes the next action
(spec: verifier-attribution.md; reference: LoopX 0.4.8).

Why one module of ~700 lines: the classification, the baseline choice, the
caveat and the routing are one decision table read top to bottom (each step
consumes the previous step's labels); split across files, a reader would
have to hold four modules open to follow one verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchledger.projections.artifacts.safe import as_object, count, score_number
from benchledger.projections.boundaries import compact_read_boundary, refused_input_payload
from benchledger.projections.markdown import code, document, get, text
from benchledger.projections.run_classifiers import (
    AGENT_EXCEPTION,
    AGENT_SETUP_FAILED_LABEL,
    AGENT_SETUP_FAILURE,
    AGENT_SETUP_SCORE_FAILURE,
    AGENT_SETUP_TIMEOUT,
    AGENT_SETUP_TIMEOUT_LABEL,
    AGENT_SETUP_TIMEOUT_SCORE_FAILURE,
    AGENT_TIMEOUT,
    AGENT_TIMEOUT_LABEL,
    AGENT_TIMEOUT_SCORE_FAILURE,
    ENVIRONMENT_SETUP_FAILED_LABEL,
    ENVIRONMENT_SETUP_FAILURE,
    NO_EXCEPTION_TEXTS,
    PRE_WORKER_STARTUP_BLOCKER_RECORDED,
    RunFailure,
    exception_kind,
    failure_labels,
    is_baseline_run,
    worker_start_kind,
)

NAME = "review-verifier-attribution"
VERSION = 1
SCHEMA_VERSION = "benchmark_verifier_attribution_review_v0"
TRIAL_EXCEPTION_SUMMARY_SCHEMA = "compact_trial_exception_summary_v0"
SCORE_ZERO_SIGNAL_SCHEMA = "runner_completed_score_zero_signal_v0"
# The command has no flags that change the review (its only flag names the input files).
DEFAULT_OPTIONS: dict[str, Any] = {}

# How much of each list the review looks at or reports.
MAX_TRIALS = 8
MAX_LABELS = 12
MAX_EXCEPTION_TYPES = 8
MAX_TASK_IDS = 4
MAX_FAILED_CHECKS = 12

# Label a trial contributes for an exception that is neither a timeout nor a setup failure.
AGENT_EXCEPTION_LABEL = "agent_exception_before_solution_completion"
VERIFIER_PREFIX = "verifier_"
COMPLETED = "completed"

# Attribution classes.
NO_SCORE_FAILURE = "no_score_failure"
VERIFIER_DEPENDENCY_INSTALL_FAILURE = "verifier_dependency_install_failure"
VERIFIER_PLATFORM_PROBE_FAILURE = "verifier_platform_probe_failure"
VERIFIER_INFRASTRUCTURE_FAILURE = "verifier_infrastructure_failure"
WORKER_SELF_VALIDATION_MISMATCH = "worker_self_validation_official_score_mismatch"
WORKER_VALIDATION_SCOPE_AMBIGUOUS = "worker_validation_scope_ambiguous_official_score_failure"
MODEL_OR_SOLUTION_FAILURE = "model_or_solution_failure"
AGENT_EXCEPTION_SCORE_FAILURE = "agent_exception_score_failure"
UNATTRIBUTED_SCORE_FAILURE = "unattributed_score_failure"
RUNNER_COMPLETED_SCORE_ZERO = "runner_completed_official_score_zero_unattributed"
MISSING_OFFICIAL_SCORE = "missing_official_score"

VERIFIER_CLASSES = frozenset(
    {VERIFIER_DEPENDENCY_INSTALL_FAILURE, VERIFIER_PLATFORM_PROBE_FAILURE, VERIFIER_INFRASTRUCTURE_FAILURE}
)
AGENT_SETUP_CLASSES = frozenset({AGENT_SETUP_TIMEOUT_SCORE_FAILURE, AGENT_SETUP_SCORE_FAILURE})

# Recorded attributions (and labels) with a fixed meaning.
VERIFIER_FAILURE = "verifier_failure"
WORKER_BRIDGE_CONNECTED_SCORE_FAILURE = "worker_bridge_connected_official_score_failure"
VERIFIER_INFRASTRUCTURE_ATTRIBUTIONS = frozenset({VERIFIER_INFRASTRUCTURE_FAILURE, VERIFIER_FAILURE})
SOLUTION_FAILURE_ATTRIBUTIONS = frozenset(
    {
        "model_solution_failure",
        "agent_solution_failure",
        AGENT_TIMEOUT_LABEL,
        "task_solution_failure",
        "solution_incorrect",
        "official_verifier_solution_failure",
    }
)
AGENT_SETUP_LABELS = frozenset(
    {AGENT_SETUP_FAILED_LABEL, ENVIRONMENT_SETUP_FAILED_LABEL, PRE_WORKER_STARTUP_BLOCKER_RECORDED}
)

# Labels a single compact trial contributes, by exception kind and by worker-start kind (a trial of no kind: None).
EXCEPTION_KIND_LABELS: dict[str | None, str] = {
    AGENT_SETUP_TIMEOUT: AGENT_SETUP_TIMEOUT_LABEL,
    AGENT_SETUP_FAILURE: AGENT_SETUP_FAILED_LABEL,
    AGENT_TIMEOUT: AGENT_TIMEOUT_LABEL,
    AGENT_EXCEPTION: AGENT_EXCEPTION_LABEL,
}
WORKER_START_KIND_LABELS: dict[str | None, str] = {
    AGENT_SETUP_FAILURE: AGENT_SETUP_FAILED_LABEL,
    ENVIRONMENT_SETUP_FAILURE: ENVIRONMENT_SETUP_FAILED_LABEL,
}
# The summary counter each exception kind increments.
EXCEPTION_KIND_COUNTERS: dict[str | None, str] = {
    AGENT_TIMEOUT: "agent_timeout_count",
    AGENT_SETUP_TIMEOUT: "agent_setup_timeout_count",
    AGENT_SETUP_FAILURE: "agent_setup_failure_count",
    AGENT_EXCEPTION: "agent_exception_count",
}
SUMMARY_COUNTERS = tuple(EXCEPTION_KIND_COUNTERS.values())

PROGRESS_COUNTERS = (
    ("completed_trials", "n_completed_trials"),
    ("errored_trials", "n_errored_trials"),
    ("running_trials", "n_running_trials"),
    ("pending_trials", "n_pending_trials"),
)
# Worker counters reported per run; only their labels influence the class.
WORKER_MISMATCH_COUNTERS = (
    "worker_submit_eligible_mismatch_count",
    "worker_self_validation_official_score_mismatch_count",
    "worker_validation_scope_ambiguous_official_score_failure_count",
    "worker_bridge_connected_official_score_failure_count",
)

# Decision blockers.
MISSING_BASELINE_RUN = "missing_compact_baseline_run"
VERIFIER_CAVEAT_BLOCKER = "baseline_verifier_attribution_caveat"
ALIGNMENT_CAVEAT_BLOCKER = "baseline_worker_verifier_alignment_caveat"
SCOPE_CAVEAT_BLOCKER = "baseline_worker_validation_scope_ambiguous_caveat"
UNATTRIBUTED_BLOCKER = "baseline_score_failure_unattributed"
SCORE_MISSING_BLOCKER = "baseline_official_score_missing"
SUBMIT_MISMATCH_BLOCKER = "baseline_submit_boundary_mismatch"
# A caveat of these kinds still lets the budget go to a new candidate.
NEW_CANDIDATE_BLOCKERS = frozenset({VERIFIER_CAVEAT_BLOCKER, ALIGNMENT_CAVEAT_BLOCKER, SCOPE_CAVEAT_BLOCKER})


# ---------------------------------------------------------------- per-run evidence


# Payloads are decoded JSON: objects are recognized as ``dict``, which is several
# times cheaper than an ``isinstance`` against the ``Mapping`` ABC.
def _stripped(value: Any) -> str | None:
    """The stripped text of a non-blank string, else ``None``."""
    return (value.strip() or None) if isinstance(value, str) else None


def _texts(value: Any) -> list[str]:
    """``str()`` of the string and number items of a list (booleans and other types skipped)."""
    if not isinstance(value, list):
        return []
    return [str(item) for item in value if isinstance(item, (str, int, float)) and not isinstance(item, bool)]


# Records are slotted, not frozen: they are built for every run reviewed, and a frozen
# dataclass pays a setattr call per field.
@dataclass(slots=True)
class CompactTrial:
    """A compact trial with its exception and worker start classified once (D-EXC, D-WSS)."""

    fields: Mapping[str, Any]
    exception_type: str | None  # stripped, non-blank
    exception_kind: str | None
    worker_start_kind: str | None

    @classmethod
    def of(cls, trial: Mapping[str, Any]) -> CompactTrial:
        exception_type = trial.get("exception_type")
        return cls(
            trial,
            _stripped(exception_type),
            exception_kind(exception_type),
            worker_start_kind(trial.get("worker_start_status")),
        )


def compact_trials(run: Mapping[str, Any]) -> list[CompactTrial]:
    trials = run.get("trials")
    if not isinstance(trials, list):
        return []
    return [CompactTrial.of(trial) for trial in trials[:MAX_TRIALS] if isinstance(trial, dict)]


def trial_labels(trial: CompactTrial) -> list[str]:
    """The verifier-attribution labels one compact trial contributes."""
    labels = _texts(trial.fields.get("verifier_failure_attribution_labels"))
    attribution = _stripped(trial.fields.get("verifier_failure_attribution"))
    if attribution is not None:
        labels.append(attribution)
    exception_label = EXCEPTION_KIND_LABELS.get(trial.exception_kind)
    if exception_label is not None:
        labels.append(exception_label)
    start_label = WORKER_START_KIND_LABELS.get(trial.worker_start_kind)
    if start_label is not None:
        labels.append(start_label)
    return labels


def attribution_labels(run: Mapping[str, Any], failure: RunFailure, trials: Sequence[CompactTrial]) -> list[str]:
    """The run's labels, its bridge outcome's labels and its trials' labels: a sorted set, at most 12."""
    labels = set(failure.labels())
    outcome = run.get("worker_bridge_outcome")
    if isinstance(outcome, dict):
        labels.update(failure_labels(outcome))
    for trial in trials:
        labels.update(trial_labels(trial))
    return sorted(labels)[:MAX_LABELS]


def exception_types(trials: Sequence[CompactTrial]) -> list[str]:
    """Trimmed non-blank trial exception types, in trial order (duplicates kept)."""
    return [trial.exception_type for trial in trials if trial.exception_type is not None]


def exception_summary(trials: Sequence[CompactTrial]) -> dict[str, Any]:
    """Counts of trial exceptions by kind; an environment/agent setup start failure also counts as a setup failure."""
    counters = dict.fromkeys(SUMMARY_COUNTERS, 0)
    for trial in trials:
        counter = EXCEPTION_KIND_COUNTERS.get(trial.exception_kind)
        if counter is not None:
            counters[counter] += 1
        if trial.worker_start_kind in WORKER_START_KIND_LABELS:
            counters["agent_setup_failure_count"] += 1
    return {
        "schema_version": TRIAL_EXCEPTION_SUMMARY_SCHEMA,
        "trial_count": len(trials),
        **counters,
        "exception_types": list(dict.fromkeys(exception_types(trials)))[:MAX_EXCEPTION_TYPES],
    }


def trial_exception_summary(run: Mapping[str, Any]) -> dict[str, Any]:
    """The :func:`exception_summary` of a run's compact trials."""
    return exception_summary(compact_trials(run))


def official_score(run: Mapping[str, Any]) -> float | None:
    score = run.get("official_task_score")
    return score_number(score.get("value")) if isinstance(score, dict) else None


def official_passed(run: Mapping[str, Any]) -> bool | None:
    score = run.get("official_task_score")
    return bool(score.get("passed")) if isinstance(score, dict) else None


def verifier_reward_present(trial: Mapping[str, Any]) -> bool:
    reward = trial.get("reward")
    return trial.get("verifier_reward_present") is True or (isinstance(reward, dict) and bool(reward))


@dataclass(slots=True)
class RunEvidence:
    """The compact facts the attribution class is decided from, each derived once per run."""

    score: float | None
    attribution: str
    labels: tuple[str, ...]
    verifier_failures: int
    verifier_dependency_failures: int
    summary: Mapping[str, Any]
    trials: list[CompactTrial]

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> RunEvidence:
        trials = compact_trials(run)
        failure = RunFailure.of(run)
        # Positional, in field order: a keyword call to a class costs several times more.
        return cls(
            official_score(run),
            failure.attribution(),
            tuple(attribution_labels(run, failure, trials)),
            count(run.get("verifier_failure_attribution_count")),
            count(run.get("verifier_dependency_failure_count")),
            exception_summary(trials),
            trials,
        )

    def names(self, name: str) -> bool:
        """Is ``name`` the run's attribution or one of its labels?"""
        return self.attribution == name or name in self.labels

    def names_verifier_label(self) -> bool:
        """Does one of the run's labels name a verifier-side cause?"""
        for label in self.labels:
            if label.startswith(VERIFIER_PREFIX):
                return True
        return False

    def counted(self, counter: str) -> bool:
        value: int = self.summary[counter]  # (exception_summary's counters are counts)
        return value > 0

    def has_explicit_cause(self) -> bool:
        return (
            bool(self.labels)
            or self.verifier_failures > 0
            or self.verifier_dependency_failures > 0
            or any(self.counted(counter) for counter in SUMMARY_COUNTERS)
        )


def score_zero_signal(run: Mapping[str, Any], evidence: RunEvidence) -> dict[str, Any]:
    """Did the runner and the official verifier complete cleanly and still score zero, with no compact cause?"""
    trials = evidence.trials
    progress = as_object(run.get("progress"))
    progress_counts = {key: count(progress.get(field)) for key, field in PROGRESS_COUNTERS}
    reward_count = len([trial for trial in trials if verifier_reward_present(trial.fields)])
    real_exceptions = [
        text for text in exception_types(trials) if text.lower() not in NO_EXCEPTION_TEXTS
    ][:MAX_EXCEPTION_TYPES]
    detected = (
        evidence.score == 0
        and _stripped(run.get("runner_return_status")) == COMPLETED
        and _stripped(run.get("official_score_status")) == COMPLETED
        and progress_counts["completed_trials"] > 0
        and progress_counts["errored_trials"] == 0
        and progress_counts["running_trials"] == 0
        and progress_counts["pending_trials"] == 0
        and reward_count > 0
        and not evidence.has_explicit_cause()
        and not real_exceptions
    )
    return {
        "schema_version": SCORE_ZERO_SIGNAL_SCHEMA,
        "detected": detected,
        "runner_return_status": run.get("runner_return_status"),
        "official_score_status": run.get("official_score_status"),
        **progress_counts,
        "verifier_reward_present_count": reward_count,
        "non_empty_exception_types": real_exceptions,
    }


# ---------------------------------------------------------------- attribution class

def attribution_class(evidence: RunEvidence, score_zero_detected: bool) -> str:
    """Spec §3.4: the class named by the first rule that holds."""
    if evidence.score is not None and evidence.score > 0:
        return NO_SCORE_FAILURE
    if evidence.names(VERIFIER_DEPENDENCY_INSTALL_FAILURE) or evidence.verifier_dependency_failures > 0:
        return VERIFIER_DEPENDENCY_INSTALL_FAILURE
    if evidence.names(VERIFIER_PLATFORM_PROBE_FAILURE):
        return VERIFIER_PLATFORM_PROBE_FAILURE
    if evidence.attribution in VERIFIER_INFRASTRUCTURE_ATTRIBUTIONS:
        return VERIFIER_INFRASTRUCTURE_FAILURE
    if evidence.names_verifier_label() or evidence.verifier_failures > 0:
        return VERIFIER_INFRASTRUCTURE_FAILURE
    if evidence.names(WORKER_SELF_VALIDATION_MISMATCH):
        return WORKER_SELF_VALIDATION_MISMATCH
    if evidence.names(WORKER_VALIDATION_SCOPE_AMBIGUOUS):
        return WORKER_VALIDATION_SCOPE_AMBIGUOUS
    if evidence.names(WORKER_BRIDGE_CONNECTED_SCORE_FAILURE) or evidence.attribution in SOLUTION_FAILURE_ATTRIBUTIONS:
        return MODEL_OR_SOLUTION_FAILURE
    if (
        evidence.attribution == AGENT_SETUP_TIMEOUT_SCORE_FAILURE
        or evidence.counted("agent_setup_timeout_count")
        or AGENT_SETUP_TIMEOUT_LABEL in evidence.labels
    ):
        return AGENT_SETUP_TIMEOUT_SCORE_FAILURE
    if (
        evidence.attribution == AGENT_SETUP_SCORE_FAILURE
        or evidence.counted("agent_setup_failure_count")
        or not AGENT_SETUP_LABELS.isdisjoint(evidence.labels)
    ):
        return AGENT_SETUP_SCORE_FAILURE
    if evidence.counted("agent_timeout_count") or AGENT_TIMEOUT_LABEL in evidence.labels:
        return AGENT_TIMEOUT_SCORE_FAILURE
    if evidence.counted("agent_exception_count") or AGENT_EXCEPTION_LABEL in evidence.labels:
        return AGENT_EXCEPTION_SCORE_FAILURE
    if evidence.score == 0:
        # A clean runner and verifier completion that still scored zero is named apart.
        return RUNNER_COMPLETED_SCORE_ZERO if score_zero_detected else UNATTRIBUTED_SCORE_FAILURE
    return MISSING_OFFICIAL_SCORE


KEEP_VERIFIER_CAVEAT = "keep attribution caveat; require same-protocol repeat or finer compact verifier evidence"
REPAIR_SETUP_FIRST = "repair startup/setup before same-task repeat"

# class -> (verifier_caveat, claim_caveat_resolved, per-run next_action)  (spec §3.6)
CLASS_VERDICTS: dict[str, tuple[bool, bool, str]] = {
    VERIFIER_DEPENDENCY_INSTALL_FAILURE: (True, False, KEEP_VERIFIER_CAVEAT),
    VERIFIER_PLATFORM_PROBE_FAILURE: (True, False, KEEP_VERIFIER_CAVEAT),
    VERIFIER_INFRASTRUCTURE_FAILURE: (True, False, KEEP_VERIFIER_CAVEAT),
    WORKER_SELF_VALIDATION_MISMATCH: (
        True,
        False,
        "keep attribution caveat; align worker self-validation with official verifier "
        "or collect finer compact verifier-facing evidence",
    ),
    WORKER_VALIDATION_SCOPE_AMBIGUOUS: (
        True,
        False,
        "keep attribution caveat; add explicit worker validation_scope and claim_boundary before same-task repeat",
    ),
    RUNNER_COMPLETED_SCORE_ZERO: (
        True,
        False,
        "keep attribution caveat; runner and official verifier completed, "
        "but compact score-zero cause still needs finer attribution",
    ),
    UNATTRIBUTED_SCORE_FAILURE: (True, False, "keep attribution caveat; compact score failure is not yet attributed"),
    MISSING_OFFICIAL_SCORE: (True, False, "wait for compact official score before attribution review"),
    AGENT_TIMEOUT_SCORE_FAILURE: (
        False,
        True,
        "claim caveat resolved by compact agent-timeout attribution; treat as non-verifier score failure",
    ),
    AGENT_EXCEPTION_SCORE_FAILURE: (
        False,
        True,
        "claim caveat resolved by compact agent-exception attribution; "
        "inspect case-level exception context before same-task repeat",
    ),
    AGENT_SETUP_TIMEOUT_SCORE_FAILURE: (
        False,
        True,
        f"claim caveat resolved by compact agent-setup-timeout attribution; {REPAIR_SETUP_FIRST}",
    ),
    AGENT_SETUP_SCORE_FAILURE: (
        False,
        True,
        f"claim caveat resolved by compact agent-setup attribution; {REPAIR_SETUP_FIRST}",
    ),
    MODEL_OR_SOLUTION_FAILURE: (False, True, "claim caveat resolved by compact non-verifier failure attribution"),
    NO_SCORE_FAILURE: (False, False, "no score-failure caveat for this run"),
}


def review_run(run: Mapping[str, Any]) -> dict[str, Any]:
    """One run's review object (spec §3.7, key order as printed)."""
    evidence = RunEvidence.of(run)
    summary = evidence.summary
    signal = score_zero_signal(run, evidence)
    found_class = attribution_class(evidence, signal["detected"])
    verifier_caveat, resolved, next_action = CLASS_VERDICTS[found_class]
    job_name = run.get("job_name")
    return {
        "mode": run.get("mode"),
        "job_name_present": bool(job_name),
        "task_ids": [str(trial.fields["task_id"]) for trial in evidence.trials if trial.fields.get("task_id")][
            :MAX_TASK_IDS
        ],
        "official_score": evidence.score,
        "official_passed": official_passed(run),
        "score_failure_attribution": evidence.attribution,
        "failure_attribution_labels": list(evidence.labels),
        "compact_trial_exception_summary": summary,
        **{counter: summary[counter] for counter in SUMMARY_COUNTERS},
        "verifier_failure_attribution_count": evidence.verifier_failures,
        "verifier_dependency_failure_count": evidence.verifier_dependency_failures,
        "validation_failed_checks": _texts(as_object(run.get("validation")).get("failed_checks"))[:MAX_FAILED_CHECKS],
        "runner_completed_score_zero_signal": signal,
        **{counter: count(run.get(counter)) for counter in WORKER_MISMATCH_COUNTERS},
        "attribution_class": found_class,
        "verifier_caveat": verifier_caveat,
        "claim_caveat_resolved": resolved,
        "next_action": next_action,
    }


# ---------------------------------------------------------------- baseline, decision, routing


def baseline_index(runs: Sequence[Mapping[str, Any]]) -> int | None:
    """The first baseline-looking run, else the first run; ``None`` only without runs."""
    if not runs:
        return None
    for index, run in enumerate(runs):
        if is_baseline_run(run):
            return index
    return 0


def baseline_blocker(baseline: Mapping[str, Any] | None) -> str | None:
    """Spec §5.1: the single blocker named by the first rule that holds."""
    if baseline is None:
        return MISSING_BASELINE_RUN
    found_class = baseline["attribution_class"]
    if found_class.startswith(VERIFIER_PREFIX):
        return VERIFIER_CAVEAT_BLOCKER
    if found_class == WORKER_SELF_VALIDATION_MISMATCH:
        return ALIGNMENT_CAVEAT_BLOCKER
    if found_class == WORKER_VALIDATION_SCOPE_AMBIGUOUS:
        return SCOPE_CAVEAT_BLOCKER
    if found_class in (RUNNER_COMPLETED_SCORE_ZERO, UNATTRIBUTED_SCORE_FAILURE):
        return UNATTRIBUTED_BLOCKER
    if found_class == MISSING_OFFICIAL_SCORE:
        return SCORE_MISSING_BLOCKER
    if baseline["worker_submit_eligible_mismatch_count"] > 0:
        return SUBMIT_MISMATCH_BLOCKER
    return None


@dataclass(slots=True)
class BaselineVerdict:
    """The baseline's class, its blocker (if any) and whether its claim caveat is resolved."""

    attribution_class: str | None
    blocker: str | None
    resolved: bool

    @property
    def clean_no_failure(self) -> bool:
        return self.attribution_class == NO_SCORE_FAILURE and self.blocker is None


def verdict_for(baseline: Mapping[str, Any] | None) -> BaselineVerdict:
    blocker = baseline_blocker(baseline)
    resolved = baseline is not None and baseline["claim_caveat_resolved"] and blocker is None
    found_class = baseline["attribution_class"] if baseline is not None else None
    return BaselineVerdict(found_class, blocker, resolved)


def decision_action(verdict: BaselineVerdict) -> str:
    """Spec §5.2: the decision's next action, from the first rule that holds."""
    if verdict.resolved:
        if verdict.attribution_class == AGENT_EXCEPTION_SCORE_FAILURE:
            return (
                "baseline compact verifier caveat resolved as agent exception; "
                "inspect case-level exception hypothesis before same-task repeat"
            )
        return "baseline compact verifier caveat resolved; rerun claim review before upgrading proof strength"
    if verdict.blocker == VERIFIER_CAVEAT_BLOCKER:
        return "do not upgrade claim; run same-protocol repeat or collect finer compact verifier-side attribution"
    if verdict.blocker == ALIGNMENT_CAVEAT_BLOCKER:
        return (
            "do not upgrade claim; align worker self-validation with official verifier evidence "
            "before same-task repeat"
        )
    if verdict.blocker == SCOPE_CAVEAT_BLOCKER:
        return (
            "do not repeat same task; add explicit worker validation_scope and claim_boundary "
            "so bridge connectivity cannot be confused with case success"
        )
    if verdict.blocker == UNATTRIBUTED_BLOCKER:
        return "do not upgrade claim; compact baseline score failure is unattributed"
    if verdict.blocker == MISSING_BASELINE_RUN:
        return "provide a compact benchmark_run_v0 for the baseline arm"
    if verdict.clean_no_failure:
        return "no baseline score-failure caveat; do not claim same-task uplift, select a new material-ready case"
    return "keep claim blocked until compact attribution blockers are resolved"


def decision(verdict: BaselineVerdict) -> dict[str, Any]:
    return {
        "baseline_claim_caveat_resolved": verdict.resolved,
        "clean_model_failure_attribution": verdict.resolved,
        "blockers": [verdict.blocker] if verdict.blocker is not None else [],
        "next_action": decision_action(verdict),
    }


def requirement_flags(verdict: BaselineVerdict) -> dict[str, bool]:
    """What must happen before the baseline supports anything; class-based flags ignore a submit mismatch."""
    found = verdict.attribution_class
    return {
        "requires_verifier_preflight_repair": found in VERIFIER_CLASSES,
        "requires_agent_setup_repair": found in AGENT_SETUP_CLASSES,
        "requires_case_exception_research": found == AGENT_EXCEPTION_SCORE_FAILURE,
        "requires_compact_official_score": verdict.blocker == SCORE_MISSING_BLOCKER,
        "requires_compact_baseline_run": verdict.blocker == MISSING_BASELINE_RUN,
        "requires_finer_compact_attribution": verdict.blocker == UNATTRIBUTED_BLOCKER,
        "requires_worker_verifier_alignment": found == WORKER_SELF_VALIDATION_MISMATCH,
        "requires_worker_validation_scope": found == WORKER_VALIDATION_SCOPE_AMBIGUOUS,
    }


NO_REPEAT = {"repeat_allowed": False}
NO_REPEAT_NO_NEW = {"repeat_allowed": False, "new_candidate_allowed": False}
NO_REPEAT_NEW = {"repeat_allowed": False, "new_candidate_allowed": True}


def routing_row(verdict: BaselineVerdict, flags: Mapping[str, bool]) -> tuple[str, Mapping[str, bool]]:
    """Spec §6: the next allowed action and the permissions it overrides, from the first row that holds."""
    if verdict.blocker == MISSING_BASELINE_RUN:
        return "provide_compact_baseline_run", {}
    if verdict.blocker == SCORE_MISSING_BLOCKER:
        return "wait_for_compact_official_score", {}
    if verdict.blocker == SUBMIT_MISMATCH_BLOCKER:
        return "repair_submit_boundary_mismatch", {}
    if flags["requires_verifier_preflight_repair"]:
        return "repair_verifier_preflight_or_select_new_material_ready_case", NO_REPEAT
    if flags["requires_worker_verifier_alignment"]:
        return "align_worker_self_validation_with_official_verifier", NO_REPEAT_NO_NEW
    if flags["requires_worker_validation_scope"]:
        return "add_worker_validation_scope_and_claim_boundary", NO_REPEAT_NO_NEW
    if flags["requires_agent_setup_repair"]:
        return "repair_agent_setup_timeout_or_select_new_material_ready_case", NO_REPEAT_NEW
    if flags["requires_case_exception_research"]:
        return "inspect_compact_agent_exception_before_same_task_repeat", NO_REPEAT_NEW
    if verdict.blocker == UNATTRIBUTED_BLOCKER:
        return "collect_finer_compact_failure_attribution", NO_REPEAT_NO_NEW
    if verdict.clean_no_failure:
        return "select_new_material_ready_case_no_score_failure", {"treatment_eligible": False, **NO_REPEAT_NEW}
    if verdict.resolved:
        return "baseline_failure_is_control_plane_addressable", {}
    return "keep_treatment_blocked_until_attribution_resolves", NO_REPEAT_NO_NEW


def blocked_action_scope(verdict: BaselineVerdict, flags: Mapping[str, bool]) -> str:
    """What stays blocked: the scope of the first rule that holds."""
    if flags["requires_verifier_preflight_repair"]:
        return "treatment_and_same_task_repeat"
    if flags["requires_worker_verifier_alignment"]:
        return "same_task_repeat_until_worker_verifier_alignment"
    if flags["requires_worker_validation_scope"]:
        return "same_task_repeat_until_worker_validation_scope"
    if flags["requires_agent_setup_repair"]:
        return "same_task_repeat_until_setup_repair"
    if flags["requires_case_exception_research"]:
        return "same_task_repeat_until_exception_hypothesis"
    if verdict.clean_no_failure:
        return "same_task_claim"
    if verdict.blocker is not None and not verdict.resolved:
        return "treatment"
    return ""


def routing(verdict: BaselineVerdict) -> dict[str, Any]:
    flags = requirement_flags(verdict)
    allowed = {
        "treatment_eligible": verdict.resolved
        and not flags["requires_agent_setup_repair"]
        and not flags["requires_case_exception_research"],
        "repeat_allowed": verdict.resolved,
        "new_candidate_allowed": verdict.resolved or verdict.blocker in NEW_CANDIDATE_BLOCKERS,
    }
    action, overrides = routing_row(verdict, flags)
    allowed.update(overrides)
    return {
        **allowed,
        **flags,
        "next_allowed_action": action,
        "blocked_action_scope": blocked_action_scope(verdict, flags),
    }


# ---------------------------------------------------------------- review contract


def review(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    run_reviews = [review_run(run) for run in runs]
    index = baseline_index(runs)
    verdict = verdict_for(run_reviews[index] if index is not None else None)
    return {
        "schema_version": SCHEMA_VERSION,
        "input_schema_versions": {"benchmark_runs": [run.get("schema_version") for run in runs]},
        "reviewed_run_count": len(runs),
        "baseline_run_index": index,
        "run_reviews": run_reviews,
        "decision": decision(verdict),
        "routing": routing(verdict),
        "read_boundary": compact_read_boundary(),
        "ok": True,
    }


def reduce(inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    """Review the compact runs in the order given (the command has no options that change the review)."""
    return review(list(inputs.get("run", [])))


def error_payload(message: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return refused_input_payload(SCHEMA_VERSION, message)


def render_markdown(payload: Mapping[str, Any]) -> str:
    return document(
        "Benchmark Verifier Attribution Review",
        [
            code("Schema", get(payload, "schema_version")),
            code("Reviewed runs", get(payload, "reviewed_run_count")),
            code("Baseline index", get(payload, "baseline_run_index")),
            code("Baseline caveat resolved", get(payload, "decision", "baseline_claim_caveat_resolved")),
            code("Clean model attribution", get(payload, "decision", "clean_model_failure_attribution")),
            code("Blockers", get(payload, "decision", "blockers")),
            text("Next action", get(payload, "decision", "next_action")),
            code("Treatment eligible", get(payload, "routing", "treatment_eligible")),
            code("Repeat allowed", get(payload, "routing", "repeat_allowed")),
            code("New candidate allowed", get(payload, "routing", "new_candidate_allowed")),
            text("Routing action", get(payload, "routing", "next_allowed_action")),
            code("Compact only", get(payload, "read_boundary", "compact_only")),
            code("Raw artifacts read", get(payload, "read_boundary", "raw_artifacts_read")),
        ],
    )
