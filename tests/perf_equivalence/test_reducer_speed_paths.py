"""Edge cases of the reducers' fast paths: each classifies once what it used to re-derive.

The expected values are those of the straightforward implementations they
replaced (and of LoopX 0.4.8): label order and deduplication, blank and
mistyped fields, evidence that is not an object, trials past the verifier's cap.
"""

from __future__ import annotations

from benchledger.projections import attempt_learning_gate, lifecycle_state, runner_invariants, verifier_attribution
from benchledger.projections.run_classifiers import (
    AGENT_SETUP_FAILURE,
    RunFailure,
    exception_kind,
    failure_labels,
    score_failure_attribution,
    startup_blocker_observed,
    worker_start_kind,
)

RUN = {"schema_version": "benchmark_run_v0"}


def run(**fields):
    return {**RUN, **fields}


# --- run classifiers ------------------------------------------------------------


def test_derived_label_keeps_the_place_of_its_first_cause():
    # Set up by the worker start only, the setup label comes after the timeout label.
    labels = failure_labels(
        run(trials=[{"exception_type": "AgentTimeoutError", "worker_start_status": "pre_worker_agent_setup_failed"}])
    )
    assert labels == ["agent_timeout_before_solution_completion", "agent_setup_failed_before_worker_start"]


def test_recorded_labels_come_first_and_are_not_repeated():
    labels = failure_labels(
        run(
            failure_attribution_labels=["agent_timeout_before_solution_completion", "x"],
            trials=[{"exception_type": "AgentSetupError"}],
            worker_bridge_materialization_blocker=" pre_worker_startup_blocker_recorded ",
        )
    )
    assert labels == [
        "agent_timeout_before_solution_completion",
        "x",
        "agent_setup_failed_before_worker_start",
        "pre_worker_startup_blocker_recorded",
    ]


def test_startup_blocker_reads_only_non_blank_strings():
    assert not startup_blocker_observed({"pre_worker_startup_blocker": "  "})
    assert not startup_blocker_observed({"pre_worker_startup_blocker": " none "})
    assert startup_blocker_observed({"pre_worker_startup_blocker": "None"})
    assert not startup_blocker_observed({"first_blocker": 5})
    assert not startup_blocker_observed({"worker_startup_blocker_count": True})
    outcome = {"repeat_blocked_by": "pre_worker_startup_blocker_recorded"}
    assert startup_blocker_observed({"worker_bridge_outcome": outcome})


def test_blank_texts_classify_as_nothing():
    assert exception_kind("  ") is None
    assert exception_kind(" Agent SETUP error ") == AGENT_SETUP_FAILURE
    assert worker_start_kind("  ") is None
    assert worker_start_kind(None) is None


def test_blank_recorded_attribution_is_derived_from_trials():
    setup_failed = {"worker_start_status": " environment_setup_failed_before_worker "}
    blank = run(score_failure_attribution="   ", trials=[setup_failed])
    assert score_failure_attribution(blank) == "agent_setup_score_failure"


def test_one_run_failure_answers_labels_and_attribution_alike():
    compact = run(trials=[{"exception_type": "AgentSetupTimeoutError"}], score_failure_attribution="none")
    failure = RunFailure.of(compact)
    assert failure.labels() == failure_labels(compact)
    assert failure.attribution() == score_failure_attribution(compact) == "agent_setup_timeout_score_failure"


# --- lifecycle-state ------------------------------------------------------------


def test_evidence_that_is_not_an_object_counts_as_absent():
    options = lifecycle_state.DEFAULT_OPTIONS
    odd = {"launch": ["yes"], "run": [[1]], "post-launch": [None], "learning-ledger": ["x"]}
    assert lifecycle_state.reduce(odd, options) == lifecycle_state.reduce({}, options)


def test_canonical_phases_stop_at_the_first_missing_fact():
    launched = {"preflight": [{"ready": True}], "launch": [{"pid": 7}]}
    state = lifecycle_state.reduce(launched, lifecycle_state.DEFAULT_OPTIONS)
    canonical = state["canonical_lifecycle"]
    assert canonical["current_phase"] == "runner_accepted_args"
    assert canonical["next_required_phase"] == "job_root_materialized"
    assert list(canonical["phase_ready"].values()) == [True, True, False, False, False, False, False]
    assert state["achieved_transitions"] == ["preflight_ready", "launched_process"]
    assert (state["next_required_transition"], state["first_blocker"]) == (
        "post_launch_materialized",
        "post_launch_materialization_missing",
    )


# --- review-verifier-attribution ------------------------------------------------


def test_run_labels_read_every_trial_but_the_summary_only_the_first_eight():
    trials = [{} for _ in range(8)] + [{"exception_type": "AgentTimeoutError"}]
    review = verifier_attribution.review([run(official_task_score={"value": 0}, trials=trials)])["run_reviews"][0]
    assert review["compact_trial_exception_summary"]["trial_count"] == 8
    assert review["agent_timeout_count"] == 0
    assert review["failure_attribution_labels"] == ["agent_timeout_before_solution_completion"]
    assert review["attribution_class"] == review["score_failure_attribution"] == "agent_timeout_score_failure"


# --- attempt-learning-gate and review-runner-invariants --------------------------


def test_routing_permissions_need_json_true_and_survive_a_non_countable_attempt():
    row = {
        "schema_version": "benchmark_learning_ledger_v0",
        "learning_quota_gate": {"spend_allowed": True},
        "routing": {"next_allowed_action": "go", "repeat_allowed": True, "new_candidate_allowed": "true"},
    }
    inputs = {"run": [RUN], "learning-ledger": [row]}
    payload = attempt_learning_gate.reduce(inputs, attempt_learning_gate.DEFAULT_OPTIONS)
    assert payload["classification"] == attempt_learning_gate.NOT_COUNTABLE
    assert (payload["learning_row_actionable"], payload["repeat_allowed"], payload["new_candidate_allowed"]) == (
        True,
        True,
        False,
    )


def test_a_mismatch_outweighs_missing_fields():
    payload = runner_invariants.reduce({"run": [run(submit_eligible=True)]}, {})
    assert payload["classification"] == runner_invariants.BOUNDARY_MISMATCH
    assert (payload["mismatch_count"], payload["missing_field_count"]) == (1, 5)
