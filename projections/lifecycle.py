"""The vocabulary of a benchmark attempt's lifecycle (LoopX 0.4.8 ``lifecycle-state``).

One place for the names: the ``lifecycle-state`` reducer, the history view and
the docs all read the phases, gates and blockers from here, so a renamed or
reordered phase changes everywhere at once. Values are the reference's output
strings; nothing here is computed.
"""

from __future__ import annotations

# --- Transitions (phases), in the order an attempt passes through them ---------
PREFLIGHT_READY = "preflight_ready"
LAUNCHED_PROCESS = "launched_process"
POST_LAUNCH_MATERIALIZED = "post_launch_materialized"
COMPACT_RESULT_READY = "compact_result_ready"
RESULT_INGESTED = "result_ingested"
# Only listed when the run carries an environment-setup failure context.
ENVIRONMENT_SETUP_REPEAT_CLEARED = "environment_setup_repeat_cleared"
# Only listed when the run holds a materialized setup-only probe trial.
ENVIRONMENT_SETUP_PROBE_COMPLETED = "environment_setup_probe_completed"
PAIRED_COMPARED = "paired_compared"
CLAIM_REVIEWED = "claim_reviewed"
LEARNING_LEDGERED = "learning_ledgered"
BUDGET_COUNTED = "budget_counted"

PHASES = (
    PREFLIGHT_READY,
    LAUNCHED_PROCESS,
    POST_LAUNCH_MATERIALIZED,
    COMPACT_RESULT_READY,
    RESULT_INGESTED,
    ENVIRONMENT_SETUP_REPEAT_CLEARED,
    ENVIRONMENT_SETUP_PROBE_COMPLETED,
    PAIRED_COMPARED,
    CLAIM_REVIEWED,
    LEARNING_LEDGERED,
    BUDGET_COUNTED,
)
# The two phases that appear in ``transition_ready`` only when their evidence exists.
CONDITIONAL_PHASES = frozenset({ENVIRONMENT_SETUP_REPEAT_CLEARED, ENVIRONMENT_SETUP_PROBE_COMPLETED})

# ``current_phase`` before any transition is achieved.
NOT_STARTED = "not_started"
# A phase outside PHASES: a failure marker stands in for a result that never came.
COMPACT_FAILURE_MARKER_READY = "compact_failure_marker_ready"

# ``next_required_transition`` values that are not phases.
COMPACT_FAILURE_MARKER_LEDGER_INGEST = "compact_failure_marker_ledger_ingest"
CASE_REPEAT_DECISION = "case_repeat_decision"
ALL_TRANSITIONS_DONE = ""

# --- Benchmark-neutral canonical lifecycle, in order ----------------------------
PROCESS_STARTED = "process_started"
RUNNER_ACCEPTED_ARGS = "runner_accepted_args"
JOB_ROOT_MATERIALIZED = "job_root_materialized"
TRIAL_STARTED = "trial_started"
WORKER_STARTED = "worker_started"
RESULT_WRITTEN = "result_written"
VERIFIER_SCORED = "verifier_scored"

CANONICAL_PHASES = (
    PROCESS_STARTED,
    RUNNER_ACCEPTED_ARGS,
    JOB_ROOT_MATERIALIZED,
    TRIAL_STARTED,
    WORKER_STARTED,
    RESULT_WRITTEN,
    VERIFIER_SCORED,
)
# Reaching any of these means the attempt entered the benchmark case (and counts as an attempt).
CASE_ENTERED_PHASES = frozenset(CANONICAL_PHASES[CANONICAL_PHASES.index(JOB_ROOT_MATERIALIZED) :])

# --- Gates, in payload order ----------------------------------------------------
LAUNCH_STATE_COUNTABLE = "launch_state_countable"
COMPACT_RESULT_INGEST_ALLOWED = "compact_result_ingest_allowed"
COMPACT_FAILURE_MARKER_READY_GATE = "compact_failure_marker_ready"
TERMINAL_CLOSEOUT = "terminal_closeout"
CASE_ATTEMPT_COUNTABLE = "case_attempt_countable"
BENCHMARK_BUDGET_COUNTABLE = "benchmark_budget_countable"
BUDGET_COUNT_ALLOWED = "budget_count_allowed"
NEW_CANDIDATE_ALLOWED = "new_candidate_allowed"
REPEAT_ALLOWED = "repeat_allowed"
ENVIRONMENT_SETUP_REPEAT_ALLOWED = "environment_setup_repeat_allowed"
ENVIRONMENT_SETUP_PROBE_COMPLETED_GATE = "environment_setup_probe_completed"
ENVIRONMENT_SETUP_PROBE_CASE_ATTEMPT_COUNTABLE = "environment_setup_probe_case_attempt_countable"
LEARNING_SPEND_ALLOWED = "learning_spend_allowed"

GATES = (
    LAUNCH_STATE_COUNTABLE,
    COMPACT_RESULT_INGEST_ALLOWED,
    COMPACT_FAILURE_MARKER_READY_GATE,
    TERMINAL_CLOSEOUT,
    CASE_ATTEMPT_COUNTABLE,
    BENCHMARK_BUDGET_COUNTABLE,
    BUDGET_COUNT_ALLOWED,
    NEW_CANDIDATE_ALLOWED,
    REPEAT_ALLOWED,
    ENVIRONMENT_SETUP_REPEAT_ALLOWED,
    ENVIRONMENT_SETUP_PROBE_COMPLETED_GATE,
    ENVIRONMENT_SETUP_PROBE_CASE_ATTEMPT_COUNTABLE,
    LEARNING_SPEND_ALLOWED,
)

# --- First blockers (``first_blocker``), in rule order --------------------------
READY_FOR_BUDGET_COUNT = "ready_for_budget_count"
NO_BLOCKER = ""
PREFLIGHT_NOT_READY = "preflight_not_ready"
POST_LAUNCH_MATERIALIZATION_MISSING = "post_launch_materialization_missing"
COMPACT_RESULT_NOT_READY = "compact_result_not_ready"
COMPACT_RESULT_NOT_INGESTED = "compact_result_not_ingested"
ENVIRONMENT_SETUP_READINESS_PREFLIGHT_REQUIRED = "environment_setup_readiness_preflight_required"
PAIRED_COMPARISON_MISSING = "paired_comparison_missing"
CLAIM_REVIEW_MISSING = "claim_review_missing"
BENCHMARK_LEARNING_LEDGER_MISSING = "benchmark_learning_ledger_missing"
BUDGET_COUNT_BLOCKED_BY_LEARNING_LEDGER = "budget_count_blocked_by_learning_ledger"
COMPACT_FAILURE_MARKER_LEDGER_INGEST_REQUIRED = "compact_failure_marker_ledger_ingest_required"
# The probe's own ``repeat_blocked_by`` becomes the blocker (with / without an exception).
ENVIRONMENT_SETUP_PROBE_EXCEPTION_REQUIRES_INTERPRETATION = "environment_setup_probe_exception_requires_interpretation"
ENVIRONMENT_SETUP_PROBE_RESULT_REQUIRES_REVIEW = "environment_setup_probe_result_requires_review"

# ``error`` of a failed ``--require-budget-count-allowed`` when no blocker names the reason.
BUDGET_COUNT_NOT_ALLOWED = "benchmark_lifecycle_budget_count_not_allowed"

# --- Environment setup (run-level failure before the worker, setup-only probe) --
ENVIRONMENT_SETUP_FAILED_BEFORE_WORKER = "environment_setup_failed_before_worker"
ENVIRONMENT_SETUP_PROBE_MATERIALIZED = "environment_setup_probe_materialized"
