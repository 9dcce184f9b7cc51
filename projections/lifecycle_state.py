"""``lifecycle-state``: where is a benchmark attempt, what blocks it, which gates are open.

Spec: lifecycle-state.md. From the latest evidence of up to seven kinds
(preflight, launch, post-launch, run, comparison, claim review, learning
ledger) the reducer derives a handful of base facts, orders them as
transitions, names the first blocker and the next transition, projects a
benchmark-neutral canonical lifecycle and opens or closes the gates that
budget counting, repeats and new candidates depend on.

Preflight, launch and post-launch payloads are raw objects (never compacted);
the run, comparison and ledger are compact; the claim review is only
schema-checked. The reducer reads ``inputs`` alone, so the same evidence gives
the same state whether it came from files or from a goal's stored events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, NamedTuple

from benchledger.projections import lifecycle as lc
from benchledger.projections.artifacts.run_tables import (
    ENVIRONMENT_SETUP_BOOLEAN_FIELDS,
    ENVIRONMENT_SETUP_DURATION_FIELD,
    ENVIRONMENT_SETUP_TEXT_FIELDS,
    ENVIRONMENT_SETUP_TEXT_LIMIT,
)
from benchledger.projections.artifacts.safe import as_object, is_int, is_number, label
from benchledger.projections.boundaries import (
    environment_setup_read_boundary,
    lifecycle_read_boundary,
    refused_input_payload,
    require_gate,
)
from benchledger.projections.markdown import code, document, get, text
from benchledger.projections.run_classifiers import per_run

NAME = "lifecycle-state"
VERSION = 1
SCHEMA_VERSION = "benchmark_lifecycle_state_v0"
CANONICAL_SCHEMA_VERSION = "benchmark_canonical_lifecycle_v0"
READINESS_SCHEMA_VERSION = "terminal_bench_environment_setup_readiness_preflight_v0"
PROBE_SCHEMA_VERSION = "terminal_bench_environment_setup_probe_result_v0"

# The command's flags (python names) at their defaults; input paths are not options.
DEFAULT_OPTIONS = {"require_budget_count_allowed": False}

# Input kinds (benchledger.projections.artifacts.KINDS) and the schema each compact/checked one carries.
PREFLIGHT = "preflight"
LAUNCH = "launch"
POST_LAUNCH = "post-launch"
RUN = "run"
COMPARISON = "comparison"
CLAIM_REVIEW = "claim-review"
LEARNING_LEDGER = "learning-ledger"
RUN_SCHEMA = "benchmark_run_v0"
COMPARISON_SCHEMA = "benchmark_comparison_v0"
CLAIM_REVIEW_SCHEMA = "benchmark_claim_review_v0"
LEARNING_LEDGER_SCHEMA = "benchmark_learning_ledger_v0"

# A launch summary proves a started process through any one truthy field.
PROCESS_EVIDENCE_FIELDS = ("process_started", "launched", "started", "pid")
# A preflight is ready by its own verdict when its first blocker is one of these.
READY_PREFLIGHT_BLOCKERS = frozenset(
    {
        "ready_for_private_managed_no_upload_pilot_review",
        "ready_for_operator_triggered_no_upload_ale_dry_run",
    }
)
# Nested objects whose readiness makes the whole preflight ready (checked recursively).
NESTED_PREFLIGHT_FIELDS = ("benchmark_run", "preflight_guard")
LAUNCH_SUMMARY_FIELD = "private_runner_launch_summary"
SCORE_FIELDS = ("official_score", "official_task_score", "score")

# --- environment setup -------------------------------------------------------------
SETUP_CONTEXT_FIELD = "environment_setup_failure_context"
SETUP_CONTEXT_TEXT_FIELDS = ENVIRONMENT_SETUP_TEXT_FIELDS
SETUP_CONTEXT_TEXT_LIMIT = ENVIRONMENT_SETUP_TEXT_LIMIT
SETUP_CONTEXT_BOOLEAN_FIELDS = ENVIRONMENT_SETUP_BOOLEAN_FIELDS
SETUP_CONTEXT_DURATION_FIELD = ENVIRONMENT_SETUP_DURATION_FIELD
# Run fields that, holding ENVIRONMENT_SETUP_FAILED_BEFORE_WORKER, imply a failure without a context.
SETUP_FAILURE_MARKER_FIELDS = ("repeat_blocked_by", "first_blocker", "worker_bridge_materialization_status")
SETUP_FAILURE_COUNT_FIELD = "environment_setup_failure_before_worker_count"
# Used when the run says setup failed but carries no usable context object.
FALLBACK_SETUP_CONTEXT = {
    "schema_version": READINESS_SCHEMA_VERSION,
    "surface": "harbor_environment_setup",
    "failure_kind": lc.ENVIRONMENT_SETUP_FAILED_BEFORE_WORKER,
    "diagnostic_granularity": "compact_counts_only_no_raw_logs",
    "next_probe": "environment_setup_readiness_preflight_before_repeat",
}

DEFAULT_BENCHMARK_ID = "benchmark"
UNKNOWN_TASK = "unknown_task"
UNKNOWN_WORKER_MODE = "unknown"
NO_EXCEPTION = "none"
NO_EXCEPTION_TEXTS = frozenset({"", NO_EXCEPTION, "not_applicable"})

PREFLIGHT_STATUS_READY = "ready"
PREFLIGHT_STATUS_NOT_READY = "not_ready_or_absent"
READINESS_DIAGNOSTIC_LIMIT = "cannot_prove_reproducible_or_cleared_from_no_run_preflight"
NEXT_ACTION_SETUP_PROBE = "run_setup_only_environment_preflight_or_select_new_material_ready_case"
NEXT_ACTION_REPAIR_PREFLIGHT = "repair_no_run_preflight_before_environment_setup_probe"

PROBE_WITH_EXCEPTION = "materialized_with_exception"
PROBE_WITHOUT_EXCEPTION = "materialized_without_exception"
NEXT_ACTION_CLASSIFY_PROBE_EXCEPTION = "classify_environment_setup_probe_exception_before_same_task_repeat"
NEXT_ACTION_REVIEW_PROBE = "review_environment_setup_probe_result_before_same_task_repeat"


# --- small readers ----------------------------------------------------------------
def _latest(inputs: Mapping[str, Sequence[Any]], kind: str) -> dict[str, Any]:
    """The newest payload of ``kind`` (files give at most one; a goal's events may give several).

    ``{}`` when there is none or it is not an object: every reader treats both alike.
    """
    payloads = inputs.get(kind)
    latest = payloads[-1] if payloads else None
    return latest if isinstance(latest, dict) else {}


def schema(value: Any) -> str:
    """``str()`` of an object's ``schema_version``; ``""`` when absent, falsy or not an object."""
    if not isinstance(value, dict):
        return ""
    return str(value.get("schema_version") or "")


def _is_true(obj: Any, key: str) -> bool:
    return isinstance(obj, dict) and obj.get(key) is True


def _trials(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    trials = run.get("trials")
    return [trial for trial in trials if isinstance(trial, dict)] if isinstance(trials, list) else []


def preflight_ready(value: Any) -> bool:
    """Spec §2.1: a preflight (or a nested run / guard inside it) declares itself ready."""
    if not isinstance(value, dict) or not value:
        return False
    for field in NESTED_PREFLIGHT_FIELDS:
        nested = value.get(field)
        if isinstance(nested, dict) and preflight_ready(nested):
            return True
    if _is_true(value.get(LAUNCH_SUMMARY_FIELD), "ready") or value.get("ready") is True:
        return True
    first_blocker = str(value.get("first_blocker") or "")
    return (value.get("ok") is True and first_blocker.startswith("ready")) or first_blocker in READY_PREFLIGHT_BLOCKERS


def process_launched(launch: Any) -> bool:
    if not isinstance(launch, dict):
        return False
    for field in PROCESS_EVIDENCE_FIELDS:
        if launch.get(field):
            return True
    return False


def verifier_scored(run: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> bool:
    """A numeric score on the run or on any of its trials."""
    for obj in (run, *trials):
        for field in SCORE_FIELDS:
            if field in obj and is_number(obj[field]):
                return True
    return False


# --- environment setup readiness (spec §3) ---------------------------------------------
def _setup_context(candidate: dict[str, Any], schema_label: str) -> dict[str, Any]:
    context: dict[str, Any] = {"schema_version": schema_label}
    for field in SETUP_CONTEXT_TEXT_FIELDS:
        value = label(candidate.get(field), limit=SETUP_CONTEXT_TEXT_LIMIT)
        if value is not None:
            context[field] = value
    for field in SETUP_CONTEXT_BOOLEAN_FIELDS:
        if isinstance(candidate.get(field), bool):
            context[field] = candidate[field]
    if is_number(candidate.get(SETUP_CONTEXT_DURATION_FIELD)):
        context[SETUP_CONTEXT_DURATION_FIELD] = candidate[SETUP_CONTEXT_DURATION_FIELD]
    return context


def _run_reports_setup_failure(run: Mapping[str, Any]) -> bool:
    failure_count = run.get(SETUP_FAILURE_COUNT_FIELD)
    if is_int(failure_count) and failure_count > 0:
        return True
    for field in SETUP_FAILURE_MARKER_FIELDS:
        if run.get(field) == lc.ENVIRONMENT_SETUP_FAILED_BEFORE_WORKER:
            return True
    return False


def setup_failure_context(run: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The first labelled failure context of the run, else the fallback if the run reports a failure.

    The context is looked for on the run, then on its bridge outcome, then on each trial.
    """
    for holder in (run, as_object(run.get("worker_bridge_outcome")), *trials):
        candidate = holder.get(SETUP_CONTEXT_FIELD)
        if isinstance(candidate, dict):
            schema_label = label(candidate.get("schema_version"))
            if schema_label is not None:
                return _setup_context(candidate, schema_label)
    return dict(FALLBACK_SETUP_CONTEXT) if _run_reports_setup_failure(run) else None


def _benchmark_id(run: Mapping[str, Any]) -> str:
    return label(run.get("benchmark_id")) or DEFAULT_BENCHMARK_ID


def readiness_preflight(
    run: Mapping[str, Any], trials: Sequence[Mapping[str, Any]], no_run_preflight_ready: bool
) -> dict[str, Any]:
    """Spec §3.2: a same-task repeat after a setup failure waits for a setup-only check ({} if none)."""
    return _readiness(run, trials, setup_failure_context(run, trials), no_run_preflight_ready)


def _readiness(
    run: Mapping[str, Any], trials: Sequence[Mapping[str, Any]], context: dict[str, Any] | None, no_run_preflight_ready: bool
) -> dict[str, Any]:
    """:func:`readiness_preflight` of the run's :func:`setup_failure_context` ``context``."""
    if context is None:
        return {}
    task_ids = (label(trial.get("task_id")) for trial in trials)
    return {
        "schema_version": READINESS_SCHEMA_VERSION,
        "benchmark_id": _benchmark_id(run),
        "task_id": next((task_id for task_id in task_ids if task_id), UNKNOWN_TASK),
        "previous_failure_observed": True,
        "previous_failure_context": context,
        "no_run_preflight_ready": no_run_preflight_ready,
        "no_run_preflight_status": PREFLIGHT_STATUS_READY if no_run_preflight_ready else PREFLIGHT_STATUS_NOT_READY,
        "same_task_repeat_allowed": False,
        "repeat_blocked_by": lc.ENVIRONMENT_SETUP_FAILED_BEFORE_WORKER,
        "first_blocker": lc.ENVIRONMENT_SETUP_FAILED_BEFORE_WORKER,
        "diagnostic_limit": READINESS_DIAGNOSTIC_LIMIT,
        "next_allowed_action": NEXT_ACTION_SETUP_PROBE if no_run_preflight_ready else NEXT_ACTION_REPAIR_PREFLIGHT,
        "read_boundary": environment_setup_read_boundary(),
    }


# --- environment setup probe (spec §4) --------------------------------------------------
def probe_result(run: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Spec §4: a setup-only probe materialized the environment; never a countable attempt ({} if none)."""
    materialized = [t for t in trials if t.get("worker_start_status") == lc.ENVIRONMENT_SETUP_PROBE_MATERIALIZED]
    if not materialized:
        return {}
    probe_trial = materialized[0]
    exception_type = label(probe_trial.get("exception_type")) or NO_EXCEPTION
    exception_present = exception_type not in NO_EXCEPTION_TEXTS
    return {
        "schema_version": PROBE_SCHEMA_VERSION,
        "benchmark_id": _benchmark_id(run),
        "task_id": label(probe_trial.get("task_id")) or UNKNOWN_TASK,
        "worker_mode": label(run.get("worker_mode")) or UNKNOWN_WORKER_MODE,
        "probe_materialized": True,
        "materialized_trial_count": len(materialized),
        "trial_result_present_count": sum(1 for t in trials if t.get("trial_result_present") is True),
        "artifact_manifest_present_count": sum(1 for t in trials if t.get("artifact_manifest_present") is True),
        "exception_type": exception_type,
        "exception_present": exception_present,
        "probe_outcome": PROBE_WITH_EXCEPTION if exception_present else PROBE_WITHOUT_EXCEPTION,
        "repeat_blocked_by": (
            lc.ENVIRONMENT_SETUP_PROBE_EXCEPTION_REQUIRES_INTERPRETATION
            if exception_present
            else lc.ENVIRONMENT_SETUP_PROBE_RESULT_REQUIRES_REVIEW
        ),
        "case_attempt_countable": False,
        "benchmark_budget_countable": False,
        "same_task_repeat_allowed": False,
        "next_allowed_action": (
            NEXT_ACTION_CLASSIFY_PROBE_EXCEPTION if exception_present else NEXT_ACTION_REVIEW_PROBE
        ),
        "read_boundary": environment_setup_read_boundary(),
    }


# --- base facts (spec §2) ----------------------------------------------------------------
# The records below are slotted, not frozen: they are built on every reduce, and a frozen
# dataclass pays a setattr call per field.
@dataclass(slots=True)
class Evidence:
    """The latest payload of each input kind; ``{}`` when not given."""

    preflight: dict[str, Any]
    launch: dict[str, Any]
    post_launch: dict[str, Any]
    run: dict[str, Any]
    comparison: dict[str, Any]
    claim_review: dict[str, Any]
    ledger: dict[str, Any]

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Sequence[Any]]) -> Evidence:
        # Positional, in field order: a keyword call to a class costs several times more.
        return cls(
            _latest(inputs, PREFLIGHT),
            _latest(inputs, LAUNCH),
            _latest(inputs, POST_LAUNCH),
            _latest(inputs, RUN),
            _latest(inputs, COMPARISON),
            _latest(inputs, CLAIM_REVIEW),
            _latest(inputs, LEARNING_LEDGER),
        )


class PostLaunchReads(NamedTuple):
    """What the facts and gates read of the post-launch summary (spec §2, §7)."""

    launch_state_ready: bool
    compact_result_ready: bool
    failure_marker_ready: bool
    terminal_closeout: bool
    case_attempt_countable: bool
    benchmark_budget_countable: bool

    @classmethod
    def of(cls, post_launch: Mapping[str, Any]) -> PostLaunchReads:
        marker = as_object(post_launch.get("compact_failure_marker"))
        return cls(
            post_launch.get("ready_for_launch_state") is True,
            post_launch.get("ready_for_compact_result_ingest") is True,
            post_launch.get("ready_for_compact_failure_marker") is True,
            marker.get("terminal_closeout") is True,
            marker.get("case_attempt_countable") is True,
            marker.get("benchmark_budget_countable") is True,
        )


class LedgerReads(NamedTuple):
    """What the facts and gates read of the learning ledger, its schema aside (spec §2, §7)."""

    budget_count_allowed: bool
    new_candidate_allowed: bool
    repeat_allowed: bool
    spend_allowed: bool

    @classmethod
    def of(cls, ledger: Mapping[str, Any]) -> LedgerReads:
        routing = ledger.get("routing")
        return cls(
            _is_true(ledger.get("lifecycle_gate"), "budget_count_allowed"),
            _is_true(routing, "new_candidate_allowed"),
            _is_true(routing, "repeat_allowed"),
            _is_true(ledger.get("learning_quota_gate"), "spend_allowed"),
        )


@dataclass(slots=True)
class Facts:
    preflight_ready: bool
    process_launched: bool
    materialized: bool
    compact_ready: bool
    compact_failure_marker_ready: bool
    result_ingested: bool
    verifier_scored: bool
    paired_compared: bool
    claim_reviewed: bool
    learning_ledgered: bool
    budget_count_allowed: bool
    readiness: dict[str, Any]
    probe: dict[str, Any]
    post_launch: PostLaunchReads
    ledger: LedgerReads
    # Derived from readiness and probe once, as several rules read them.
    environment_setup_repeat_cleared: bool = dataclass_field(init=False)
    environment_setup_probe_completed: bool = dataclass_field(init=False)

    def __post_init__(self) -> None:
        # No input clears a setup failure: only its absence does.
        self.environment_setup_repeat_cleared = not self.readiness
        self.environment_setup_probe_completed = bool(self.probe)


@dataclass(slots=True)
class RunFacts:
    """What the facts read of the latest run alone (a run is the latest for several events of a fold: see per_run)."""

    trials: list[dict[str, Any]]
    verifier_scored: bool
    setup_context: dict[str, Any] | None
    probe: dict[str, Any]

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> RunFacts:
        trials = _trials(run)
        return cls(trials, verifier_scored(run, trials), setup_failure_context(run, trials), probe_result(run, trials))


_run_facts = per_run(RunFacts.of)
_NO_RUN = RunFacts.of({})


def derive_facts(evidence: Evidence, summary: Mapping[str, Any]) -> Facts:
    """Spec §2. ``summary`` is the evidence's :func:`input_summary`: the facts compare the schemas it read."""
    run = evidence.run
    # (no run is a new {} each time: nothing to hold)
    of_run = _run_facts(run) if run else RunFacts.of(run)
    trials = of_run.trials
    post_launch = PostLaunchReads.of(evidence.post_launch)
    ledger = LedgerReads.of(evidence.ledger)
    result_ingested = summary["benchmark_run_schema"] == RUN_SCHEMA
    ready = preflight_ready(evidence.preflight)
    # Positional, in field order: a keyword call to a class costs several times more.
    return Facts(
        ready,
        # A run implies every earlier stage happened.
        result_ingested or process_launched(evidence.launch),
        result_ingested or post_launch.launch_state_ready,
        result_ingested or post_launch.compact_result_ready,
        post_launch.failure_marker_ready,
        result_ingested,
        of_run.verifier_scored,
        summary["benchmark_comparison_schema"] == COMPARISON_SCHEMA,
        summary["claim_review_schema"] == CLAIM_REVIEW_SCHEMA,
        summary["learning_ledger_schema"] == LEARNING_LEDGER_SCHEMA,
        ledger.budget_count_allowed,
        _readiness(run, trials, of_run.setup_context, ready),
        of_run.probe,
        post_launch,
        ledger,
    )


def summary_key(evidence: Evidence) -> tuple[Any, ...]:
    """Everything :func:`step_summary` depends on: what :func:`derive_facts` reads of each kind of evidence, but of the
    setup readiness and the probe (dicts the summary reads only through) whether there is one and what the probe blocks.

    Equal keys, equal summaries: a fold asks for the summary after every event, and most events leave it as it was.
    The key is each kind's :func:`summary_read` of its latest payload, in :data:`SUMMARY_KINDS` order (a fold holds
    the read of each payload it remembers: :func:`held_summary`).
    """
    return (
        _preflight_read(evidence.preflight),
        process_launched(evidence.launch),
        _post_launch_read(evidence.post_launch),
        _run_read(evidence.run),
        schema(evidence.comparison) == COMPARISON_SCHEMA,
        schema(evidence.claim_review) == CLAIM_REVIEW_SCHEMA,
        _ledger_read(evidence.ledger),
    )


def _preflight_read(preflight: dict[str, Any]) -> bool:
    return _preflight_ready(preflight) if preflight else False


def _post_launch_read(post_launch: dict[str, Any]) -> PostLaunchReads:
    return _post_launch_reads(post_launch) if post_launch else _NO_POST_LAUNCH


def _run_read(run: dict[str, Any]) -> tuple[Any, ...]:
    of_run = _run_facts(run) if run else _NO_RUN
    return (
        schema(run) == RUN_SCHEMA,
        of_run.verifier_scored,
        of_run.setup_context is not None,  # (the readiness is {} exactly when there is no context)
        of_run.probe.get("repeat_blocked_by"),  # (every probe names one: present or not, as the blocker reads it)
    )


def _ledger_read(ledger: dict[str, Any]) -> tuple[bool, LedgerReads]:
    return schema(ledger) == LEARNING_LEDGER_SCHEMA, (_ledger_reads(ledger) if ledger else _NO_LEDGER)


# The kinds of evidence in summary_key's order, and what it reads of each one's latest payload ({} for none or not an object).
_SUMMARY_READS: dict[str, Callable[[dict[str, Any]], Any]] = {
    PREFLIGHT: _preflight_read,
    LAUNCH: process_launched,
    POST_LAUNCH: _post_launch_read,
    RUN: _run_read,
    COMPARISON: lambda comparison: schema(comparison) == COMPARISON_SCHEMA,
    CLAIM_REVIEW: lambda claim_review: schema(claim_review) == CLAIM_REVIEW_SCHEMA,
    LEARNING_LEDGER: _ledger_read,
}
SUMMARY_KINDS = tuple(_SUMMARY_READS)


def summary_read(kind: str, payload: Any) -> Any:
    """What :func:`summary_key` reads of ``payload`` as the latest evidence of ``kind`` (one of :data:`SUMMARY_KINDS`)."""
    return _SUMMARY_READS[kind](payload if isinstance(payload, dict) else {})


# A payload is the latest of its kind for many events of a fold, and never changes once decoded (see per_run).
_preflight_ready = per_run(preflight_ready)
_post_launch_reads = per_run(PostLaunchReads.of)
_ledger_reads = per_run(LedgerReads.of)
_NO_POST_LAUNCH = PostLaunchReads.of({})
_NO_LEDGER = LedgerReads.of({})


# --- transitions (spec §5) -----------------------------------------------------------------
def transition_ready(facts: Facts) -> dict[str, bool]:
    """Each phase's fact, in ``lc.PHASES`` order; the two conditional phases only when their evidence exists."""
    ready = {
        lc.PREFLIGHT_READY: facts.preflight_ready,
        lc.LAUNCHED_PROCESS: facts.process_launched,
        lc.POST_LAUNCH_MATERIALIZED: facts.materialized,
        lc.COMPACT_RESULT_READY: facts.compact_ready,
        lc.RESULT_INGESTED: facts.result_ingested,
    }
    if facts.readiness:
        ready[lc.ENVIRONMENT_SETUP_REPEAT_CLEARED] = facts.environment_setup_repeat_cleared
    if facts.probe:
        ready[lc.ENVIRONMENT_SETUP_PROBE_COMPLETED] = facts.environment_setup_probe_completed
    ready[lc.PAIRED_COMPARED] = facts.paired_compared
    ready[lc.CLAIM_REVIEWED] = facts.claim_reviewed
    ready[lc.LEARNING_LEDGERED] = facts.learning_ledgered
    ready[lc.BUDGET_COUNTED] = facts.budget_count_allowed
    return ready


def first_blocker(facts: Facts) -> str:
    """Spec §5.1: the blocker named by the first rule whose condition holds (the probe names its own)."""
    if not facts.preflight_ready:
        return lc.PREFLIGHT_NOT_READY
    if facts.process_launched and not facts.materialized:
        return lc.POST_LAUNCH_MATERIALIZATION_MISSING
    if facts.materialized and not facts.compact_ready:
        return lc.COMPACT_RESULT_NOT_READY
    if facts.compact_ready and not facts.result_ingested:
        return lc.COMPACT_RESULT_NOT_INGESTED
    if facts.result_ingested and not facts.environment_setup_repeat_cleared:
        return lc.ENVIRONMENT_SETUP_READINESS_PREFLIGHT_REQUIRED
    if facts.result_ingested and facts.environment_setup_probe_completed:
        blocker: str = facts.probe["repeat_blocked_by"]  # (one of the two blockers probe_result names)
        return blocker
    if facts.result_ingested and not facts.paired_compared:
        return lc.PAIRED_COMPARISON_MISSING
    if facts.paired_compared and not facts.claim_reviewed:
        return lc.CLAIM_REVIEW_MISSING
    if facts.claim_reviewed and not facts.learning_ledgered:
        return lc.BENCHMARK_LEARNING_LEDGER_MISSING
    if facts.learning_ledgered and not facts.budget_count_allowed:
        return lc.BUDGET_COUNT_BLOCKED_BY_LEARNING_LEDGER
    return lc.READY_FOR_BUDGET_COUNT if facts.budget_count_allowed else lc.NO_BLOCKER


@dataclass(slots=True)
class Position:
    """Where the attempt stands: the part of the payload that the overrides may rewrite."""

    current_phase: str
    achieved_transitions: list[str]
    next_required_transition: str
    first_blocker: str


def position(facts: Facts, ready: Mapping[str, bool]) -> Position:
    achieved: list[str] = []
    pending: list[str] = []
    for phase, value in ready.items():
        if value:
            achieved.append(phase)
        else:
            pending.append(phase)
    current = achieved[-1] if achieved else lc.NOT_STARTED
    next_required = pending[0] if pending else lc.ALL_TRANSITIONS_DONE
    blocker = first_blocker(facts)
    # Spec §5.2, in order. A failure marker stands in for the missing result,
    # even ahead of an unready preflight.
    if facts.materialized and facts.compact_failure_marker_ready and not facts.result_ingested:
        if lc.COMPACT_FAILURE_MARKER_READY not in achieved:
            achieved.append(lc.COMPACT_FAILURE_MARKER_READY)
        current = lc.COMPACT_FAILURE_MARKER_READY
        next_required = lc.COMPACT_FAILURE_MARKER_LEDGER_INGEST
        blocker = lc.COMPACT_FAILURE_MARKER_LEDGER_INGEST_REQUIRED
    # A completed probe leaves only the repeat decision (the blocker stays as ruled).
    if facts.result_ingested and facts.environment_setup_probe_completed:
        current = lc.ENVIRONMENT_SETUP_PROBE_COMPLETED
        next_required = lc.CASE_REPEAT_DECISION
    return Position(current, achieved, next_required, blocker)


# --- canonical lifecycle (spec §6) ---------------------------------------------------------
def canonical_lifecycle(facts: Facts) -> dict[str, Any]:
    """Benchmark-neutral phases; a phase is ready only if every earlier one is (prefix semantics)."""
    phase_facts = (  # in lc.CANONICAL_PHASES order
        (lc.PROCESS_STARTED, facts.process_launched),
        (lc.RUNNER_ACCEPTED_ARGS, facts.process_launched),
        (lc.JOB_ROOT_MATERIALIZED, facts.materialized),
        (lc.TRIAL_STARTED, facts.compact_ready or facts.result_ingested),
        (lc.WORKER_STARTED, facts.result_ingested),
        (lc.RESULT_WRITTEN, facts.result_ingested),
        (lc.VERIFIER_SCORED, facts.verifier_scored),
    )
    phase_ready: dict[str, bool] = {}
    previous_ready = True
    # The ready phases are a prefix: the current phase is its last, the next required one follows it.
    current, next_required = lc.NOT_STARTED, ""
    for phase, fact in phase_facts:
        previous_ready = phase_ready[phase] = previous_ready and fact
        if previous_ready:
            current = phase
        elif not next_required:
            next_required = phase
    entered = current in lc.CASE_ENTERED_PHASES
    return {
        "schema_version": CANONICAL_SCHEMA_VERSION,
        "current_phase": current,
        "entered_benchmark_case": entered,
        "case_attempt_countable": entered,
        "next_required_phase": next_required,
        "phase_ready": phase_ready,
    }


# --- gates (spec §7) -------------------------------------------------------------------------
def gates(facts: Facts) -> dict[str, bool | None]:
    marker, ledger = facts.post_launch, facts.ledger
    return {
        lc.LAUNCH_STATE_COUNTABLE: facts.materialized,
        lc.COMPACT_RESULT_INGEST_ALLOWED: facts.compact_ready,
        lc.COMPACT_FAILURE_MARKER_READY_GATE: facts.compact_failure_marker_ready,
        lc.TERMINAL_CLOSEOUT: marker.terminal_closeout,
        lc.CASE_ATTEMPT_COUNTABLE: marker.case_attempt_countable,
        lc.BENCHMARK_BUDGET_COUNTABLE: marker.benchmark_budget_countable or facts.budget_count_allowed,
        lc.BUDGET_COUNT_ALLOWED: facts.budget_count_allowed,
        lc.NEW_CANDIDATE_ALLOWED: ledger.new_candidate_allowed,
        lc.REPEAT_ALLOWED: ledger.repeat_allowed and facts.environment_setup_repeat_cleared,
        lc.ENVIRONMENT_SETUP_REPEAT_ALLOWED: False if facts.readiness else None,
        lc.ENVIRONMENT_SETUP_PROBE_COMPLETED_GATE: facts.environment_setup_probe_completed,
        lc.ENVIRONMENT_SETUP_PROBE_CASE_ATTEMPT_COUNTABLE: False if facts.probe else None,
        lc.LEARNING_SPEND_ALLOWED: ledger.spend_allowed,
    }


def input_summary(evidence: Evidence) -> dict[str, Any]:
    post_launch_blocker = evidence.post_launch.get("first_blocker")
    return {
        "preflight_schema": schema(evidence.preflight),
        "launch_present": bool(evidence.launch),
        "post_launch_schema": schema(evidence.post_launch),
        # Raw and unfiltered: whatever the post-launch check wrote, as str().
        "post_launch_first_blocker": str(post_launch_blocker) if post_launch_blocker else "",
        "benchmark_run_schema": schema(evidence.run),
        "benchmark_comparison_schema": schema(evidence.comparison),
        "claim_review_schema": schema(evidence.claim_review),
        "learning_ledger_schema": schema(evidence.ledger),
    }


# --- payload ----------------------------------------------------------------------------------
def _derived(evidence: Evidence) -> tuple[dict[str, Any], Facts, dict[str, bool], Position, dict[str, bool | None]]:
    """Everything the payload is made of."""
    summary = input_summary(evidence)
    facts = derive_facts(evidence, summary)
    ready = transition_ready(facts)
    return summary, facts, ready, position(facts, ready), gates(facts)


# summary_key -> step_summary, for the keys met last (a fold meets few: each goal walks the same phases).
_summaries: dict[tuple[Any, ...], dict[str, Any]] = {}
SUMMARIES_HELD = 4096


def held_summary(key: tuple[Any, ...]) -> dict[str, Any] | None:
    """:func:`step_summary` of inputs whose :func:`summary_key` is ``key``, if it is held (a fold that holds each kind's
    :func:`summary_read` makes the key without the inputs); ``None`` when it is not. The caller gets its own dicts."""
    summary = _summaries.get(key)
    return None if summary is None else {**summary, "gates": dict(summary["gates"])}


def step_summary(inputs: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """``history.lifecycle_summary(reduce(inputs, options))``, whatever the options (they touch ``ok`` and ``error`` only),
    without the rest of the payload: what a goal's fold needs after each event (a ``lifecycle-step``), the
    whole state only for the rows of an attempt (tests/perf_equivalence/test_lifecycle_step_summary.py).
    Worked out once per :func:`summary_key`; each caller gets its own dicts."""
    evidence = Evidence.from_inputs(inputs)
    try:
        key: tuple[Any, ...] | None = summary_key(evidence)
    except Exception:  # (odd evidence: worked out in full, to raise as reduce raises)
        key = None
    summary = _summaries.get(key) if key is not None else None
    if summary is None:
        _, _, _, where, gate_values = _derived(evidence)
        if len(_summaries) >= SUMMARIES_HELD:
            _summaries.clear()
        summary = {
            "current_phase": where.current_phase,
            "first_blocker": where.first_blocker,
            "next_required_transition": where.next_required_transition,
            "gates": gate_values,
        }
        if key is not None:
            _summaries[key] = summary
    return {**summary, "gates": dict(summary["gates"])}


def reduce(inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    summary, facts, ready, where, gate_values = _derived(Evidence.from_inputs(inputs))
    payload: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "current_phase": where.current_phase,
        "canonical_lifecycle": canonical_lifecycle(facts),
        "achieved_transitions": where.achieved_transitions,
        "next_required_transition": where.next_required_transition,
        "first_blocker": where.first_blocker,
        "transition_ready": ready,
        "gates": gate_values,
        "environment_setup_readiness_preflight": facts.readiness,
        "environment_setup_probe_result": facts.probe,
        "inputs": summary,
        "read_boundary": lifecycle_read_boundary(),
        "ok": True,
    }
    require_budget_count = bool({**DEFAULT_OPTIONS, **options}["require_budget_count_allowed"])
    return require_gate(
        payload,
        "require_budget_count_allowed",
        require_budget_count,
        gate_values[lc.BUDGET_COUNT_ALLOWED] is True,
        where.first_blocker or lc.BUDGET_COUNT_NOT_ALLOWED,
    )


def error_payload(message: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return refused_input_payload(SCHEMA_VERSION, message, lifecycle_read_boundary)


def render_markdown(payload: Mapping[str, Any]) -> str:
    return document(
        "Benchmark Lifecycle State",
        [
            code("Schema", get(payload, "schema_version")),
            code("Current phase", get(payload, "current_phase")),
            code("First blocker", get(payload, "first_blocker")),
            code("Next transition", get(payload, "next_required_transition")),
            code("Launch state countable", get(payload, "gates", lc.LAUNCH_STATE_COUNTABLE)),
            code("Compact ingest allowed", get(payload, "gates", lc.COMPACT_RESULT_INGEST_ALLOWED)),
            code("Budget count allowed", get(payload, "gates", lc.BUDGET_COUNT_ALLOWED)),
            code("New candidate allowed", get(payload, "gates", lc.NEW_CANDIDATE_ALLOWED)),
            code("Repeat allowed", get(payload, "gates", lc.REPEAT_ALLOWED)),
            code("Environment setup repeat allowed", get(payload, "gates", lc.ENVIRONMENT_SETUP_REPEAT_ALLOWED)),
            text(
                "Environment setup next action",
                get(payload, "environment_setup_readiness_preflight", "next_allowed_action") or "",
            ),
            code("Compact only", get(payload, "read_boundary", "compact_only")),
            code("Raw artifacts read", get(payload, "read_boundary", "raw_artifacts_read")),
        ],
    )
