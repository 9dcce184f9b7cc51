"""Claim review reducer and the run classifiers it relies on, on compacted inputs."""

from __future__ import annotations

import math

import pytest

from benchledger.projections import claim_review
from benchledger.projections.run_classifiers import (
    AGENT_EXCEPTION,
    AGENT_SETUP_FAILURE,
    AGENT_SETUP_TIMEOUT,
    AGENT_TIMEOUT,
    ENVIRONMENT_SETUP_FAILURE,
    count_exceptions,
    exception_kind,
    failure_labels,
    normalized_mode,
    score_failure_attribution,
    startup_blocker_observed,
    treatment_worker_evidence,
    worker_start_kind,
)

RUN = {"schema_version": "benchmark_run_v0"}


def run(**fields):
    return {**RUN, **fields}


def trials(*exception_types):
    return [{"exception_type": exception_type} for exception_type in exception_types]


def review(comparison, *runs):
    return claim_review.reduce({"comparison": [comparison], "run": list(runs)}, {})


# --- run classifiers ---------------------------------------------------------


@pytest.mark.parametrize(
    "value, kind",
    [
        ("AgentSetupTimeoutError", AGENT_SETUP_TIMEOUT),
        ("VerifierTimeoutError", AGENT_TIMEOUT),
        ("AgentSetupError", AGENT_SETUP_FAILURE),
        ("SetupError", AGENT_EXCEPTION),
        ("  NULL ", None),
        ("no_exception", None),
        ("   ", None),
        (3, None),
    ],
)
def test_exception_kind(value, kind):
    assert exception_kind(value) == kind


def test_worker_start_kind_is_exact_after_strip():
    assert worker_start_kind(" pre_worker_agent_setup_failed ") == AGENT_SETUP_FAILURE
    assert worker_start_kind("environment_setup_failed_before_worker") == ENVIRONMENT_SETUP_FAILURE
    assert worker_start_kind("pre_worker_agent_setup_failed_x") is None


def test_normalized_mode_lowers_and_dashes():
    assert normalized_mode(run(mode="Codex_LoopX"), "mode") == "codex-loopx"
    assert normalized_mode(run(), "job_name") == ""


def test_count_exceptions_ignores_non_object_trials():
    assert count_exceptions(run(trials=[*trials("AgentTimeoutError"), "x"]), AGENT_TIMEOUT) == 1


def test_startup_blocker_from_outcome_and_pre_worker_field():
    assert startup_blocker_observed(run(worker_bridge_outcome={"worker_startup_blocker_count": 1}))
    assert startup_blocker_observed(run(pre_worker_startup_blocker="docker_pull"))
    assert not startup_blocker_observed(run(pre_worker_startup_blocker="none", worker_startup_blocker_count=0))
    assert startup_blocker_observed(run(repeat_blocked_by=" pre_worker_startup_blocker_recorded "))


def test_failure_labels_dedupe_and_cap():
    recorded = [f"label_{index}" for index in range(5)]
    labels = failure_labels(
        run(
            failure_attribution_labels=recorded,
            trials=[
                {"exception_type": "AgentSetupTimeoutError"},
                {"exception_type": "AgentSetupError", "worker_start_status": "pre_worker_agent_setup_failed"},
                {"exception_type": "AgentTimeoutError", "worker_start_status": "environment_setup_failed_before_worker"},
            ],
            worker_startup_blocker_count=2,
        )
    )
    assert labels == recorded + [
        "agent_setup_timeout_before_worker_start",
        "agent_setup_failed_before_worker_start",
        "agent_timeout_before_solution_completion",
    ]


def test_attribution_recorded_wins_and_is_case_sensitive():
    assert score_failure_attribution(run(score_failure_attribution="None", trials=trials("AgentTimeoutError"))) == "None"
    assert score_failure_attribution(run(score_failure_attribution="none", trials=trials("AgentTimeoutError"))) == (
        "agent_timeout_score_failure"
    )
    assert score_failure_attribution(run(trials=[{"worker_start_status": "environment_setup_failed_before_worker"}])) == (
        "agent_setup_score_failure"
    )


def test_evidence_run_total_zero_hides_counter_total():
    evidence = treatment_worker_evidence(
        run(worker_loopx_cli_call_total=0, interaction_counters={"loopx_cli_calls": {"total": 5}})
    )
    assert evidence["worker_loopx_cli_call_total"] == 0
    assert evidence["present"] is False


def test_evidence_controller_needs_activity():
    idle = treatment_worker_evidence(run(interaction_counters={"loopx_automation_loop": True}))
    busy = treatment_worker_evidence(run(interaction_counters={"loopx_automation_loop": True, "loopx_state_writes": 1}))
    assert (idle["outer_loopx_controller_present"], idle["present"]) == (False, False)
    assert (busy["outer_loopx_controller_present"], busy["present"]) == (True, True)


# --- run picking and delta ----------------------------------------------------


def test_runs1_fallback_can_reselect_baseline_as_treatment():
    plain = run(mode="plain", official_task_score={"value": 0.2})
    hardened = run(mode="hardened_codex_baseline", official_task_score={"value": 0.7})
    baseline, treatment = claim_review.pick_runs([plain, hardened])
    assert baseline is hardened and treatment is hardened
    assert review({}, plain, hardened)["official_task_score_delta"] == 0.0


def test_goal_mode_baseline_is_not_recognised_by_mode():
    goal = run(mode="codex_goal_mode_baseline")
    bare = run(mode="bare_codex")
    assert claim_review.pick_runs([goal, bare]) == (bare, bare)


def test_fallback_delta_uses_ieee_subtraction():
    payload = review(
        {"comparison_id": "p"},
        run(mode="hardened-codex", official_task_score={"value": 0.2}),
        run(mode="codex-loopx", official_task_score={"value": 0.7}),
    )
    assert payload["official_task_score_delta"] == 0.7 - 0.2


def test_string_delta_parsed_and_nan_blocks_nothing():
    assert review({"official_task_score_delta": "1"})["official_task_score_delta"] == 1.0
    payload = review({"official_task_score_delta": "nan"})
    assert math.isnan(payload["official_task_score_delta"])
    assert payload["decision"]["blockers"] == []
    assert payload["decision"]["claim_strength"] == claim_review.NO_ENHANCEMENT


def test_single_run_without_signal_has_no_treatment():
    payload = review({"official_task_score_delta": 1}, run(mode="plain"))
    assert payload["treatment_worker_evidence"] == {"present": False}
    assert payload["decision"]["blockers"] == [claim_review.MISSING_WORKER_EVIDENCE]
    assert payload["decision"]["claim_strength"] == claim_review.DELTA_WITHOUT_EVIDENCE


# --- blockers, decision, boundary -------------------------------------------


def test_mismatch_sum_cancels_over_all_runs():
    runs = [run(worker_submit_eligible_mismatch_count=n) for n in (2, -2, True)]
    assert review({}, *runs)["boundary_mismatch_count"] == 0
    assert review({}, runs[0])["decision"]["blockers"] == [
        claim_review.MISSING_DELTA,
        claim_review.BOUNDARY_MISMATCH,
    ]


def test_verifier_label_prefix_is_a_caveat_only_on_positive_delta():
    baseline = run(mode="bare-codex", failure_attribution_labels=["verifier_flaky"])
    treatment = run(mode="codex-loopx", worker_benchmark_run_schema_ok_count=1)
    positive = review({"official_task_score_delta": 0.5}, baseline, treatment)["decision"]
    flat = review({"official_task_score_delta": 0}, baseline, treatment)["decision"]
    assert positive["blockers"] == [claim_review.ATTRIBUTION_CAVEAT]
    assert positive["claim_strength"] == claim_review.CANDIDATE_NEEDS_REVIEW
    assert flat["blockers"] == [claim_review.NO_POSITIVE_DELTA]
    assert flat["claim_strength"] == claim_review.LOOP_WITHOUT_UPLIFT


def test_claim_boundary_echo():
    assert claim_review.claim_boundary({"claim_boundary": {"raw_trace_excluded": False, "leaderboard_claim_allowed": True}}) == {
        "leaderboard_claim_allowed": True,
        "official_score_uplift_claim_allowed": False,
        "assisted_collaboration_claim_allowed": False,
        "raw_trace_excluded": False,
    }


def test_markdown_of_error_payload_shows_none():
    rendered = claim_review.render_markdown(claim_review.error_payload("boom", {}))
    assert "- Task: `None`" in rendered
    assert "- Next action: None" in rendered
    assert "boom" not in rendered
    assert rendered.endswith("- Raw artifacts read: `False`\n")
