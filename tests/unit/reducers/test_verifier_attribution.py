"""Unit tests of the ``review-verifier-attribution`` reducer and command (spec verifier-attribution.md)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.projections import verifier_attribution as va

RUN = "benchmark_run_v0"


def run(**fields):
    return {"schema_version": RUN, **fields}


def zero(**fields):
    return run(official_task_score={"value": 0, "passed": False}, **fields)


def only_review(compact_run):
    return va.review([compact_run])["run_reviews"][0]


def clean_completion(**overrides):
    """A runner-completed, verifier-rewarded zero with no compact cause."""
    fields = {
        "runner_return_status": "completed",
        "official_score_status": "completed",
        "progress": {"n_completed_trials": 1, "n_errored_trials": 0, "n_running_trials": 0, "n_pending_trials": 0},
        "trials": [{"task_id": "t", "exception_type": "None", "verifier_reward_present": True}],
    }
    fields.update(overrides)
    return zero(**fields)


# ---------------------------------------------------------------- per-run facts


def test_trial_summary_counts_setup_start_failures_on_top_of_the_exception():
    summary = va.trial_exception_summary(
        run(
            trials=[
                {
                    "exception_type": "AgentTimeoutError",
                    "worker_start_status": "environment_setup_failed_before_worker",
                },
                {"exception_type": "AgentTimeoutError"},
                {"exception_type": "none"},
            ]
        )
    )
    assert summary["trial_count"] == 3
    assert summary["agent_timeout_count"] == 2
    assert summary["agent_setup_failure_count"] == 1
    assert summary["exception_types"] == ["AgentTimeoutError", "none"]
    assert list(summary) == [
        "schema_version",
        "trial_count",
        "agent_timeout_count",
        "agent_setup_timeout_count",
        "agent_setup_failure_count",
        "agent_exception_count",
        "exception_types",
    ]


def test_labels_are_a_sorted_union_of_run_outcome_and_trial_labels():
    review = only_review(
        zero(
            failure_attribution_labels=["zeta"],
            worker_bridge_outcome={"pre_worker_startup_blocker": "docker_pull"},
            trials=[
                {"exception_type": "RuntimeError", "verifier_failure_attribution": " alpha "},
                {"verifier_failure_attribution_labels": ["zeta", 7]},
            ],
        )
    )
    assert review["failure_attribution_labels"] == [
        "7",
        "agent_exception_before_solution_completion",
        "alpha",
        "pre_worker_startup_blocker_recorded",
        "zeta",
    ]


def test_official_passed_is_false_when_the_score_object_has_no_passed_and_null_without_it():
    assert only_review(run(official_task_score={"value": 1}))["official_passed"] is False
    assert only_review(run())["official_passed"] is None
    assert only_review(run(official_task_score={"value": True}))["official_score"] is None


# ---------------------------------------------------------------- attribution class


@pytest.mark.parametrize(
    ("compact_run", "expected"),
    [
        (run(official_task_score={"value": 0.5}, verifier_dependency_failure_count=3), va.NO_SCORE_FAILURE),
        (zero(verifier_dependency_failure_count=1), va.VERIFIER_DEPENDENCY_INSTALL_FAILURE),
        (zero(failure_attribution_labels=["verifier_platform_probe_failure"]), va.VERIFIER_PLATFORM_PROBE_FAILURE),
        (zero(score_failure_attribution="verifier_failure"), va.VERIFIER_INFRASTRUCTURE_FAILURE),
        # A verifier-side trial label outranks a model-failure attribution.
        (
            zero(
                score_failure_attribution="model_solution_failure",
                trials=[{"verifier_failure_attribution": "verifier_timeout"}],
            ),
            va.VERIFIER_INFRASTRUCTURE_FAILURE,
        ),
        (zero(score_failure_attribution="model_solution_failure"), va.MODEL_OR_SOLUTION_FAILURE),
        (
            zero(failure_attribution_labels=["worker_bridge_connected_official_score_failure"]),
            va.MODEL_OR_SOLUTION_FAILURE,
        ),
        (zero(failure_attribution_labels=[va.WORKER_SELF_VALIDATION_MISMATCH]), va.WORKER_SELF_VALIDATION_MISMATCH),
        # A setup failure in any trial outranks the timeouts of the others.
        (
            zero(
                trials=[
                    {"exception_type": "AgentTimeoutError"},
                    {"exception_type": "AgentTimeoutError", "worker_start_status": "pre_worker_agent_setup_failed"},
                ]
            ),
            va.AGENT_SETUP_SCORE_FAILURE,
        ),
        (zero(trials=[{"exception_type": "EnvironmentStartTimeoutError"}]), va.AGENT_TIMEOUT_SCORE_FAILURE),
        (zero(trials=[{"exception_type": "SetupError"}]), va.AGENT_EXCEPTION_SCORE_FAILURE),
        # "None" is kept verbatim and matches no rule.
        (zero(score_failure_attribution="None"), va.UNATTRIBUTED_SCORE_FAILURE),
        (run(official_task_score={"value": -1}), va.MISSING_OFFICIAL_SCORE),
        (run(official_task_score={"value": math.nan}), va.MISSING_OFFICIAL_SCORE),
        (run(), va.MISSING_OFFICIAL_SCORE),
    ],
)
def test_attribution_class_precedence(compact_run, expected):
    assert only_review(compact_run)["attribution_class"] == expected


def test_clean_runner_completion_with_an_unexplained_zero_is_its_own_class():
    review = only_review(clean_completion())
    assert review["runner_completed_score_zero_signal"]["detected"] is True
    assert review["attribution_class"] == va.RUNNER_COMPLETED_SCORE_ZERO


@pytest.mark.parametrize(
    "overrides",
    [
        # A float progress count is no count at all.
        {"progress": {"n_completed_trials": 1.0}},
        {"runner_return_status": "failed"},
        {"trials": [{"exception_type": "None"}]},
        {"trials": [{"exception_type": "RuntimeError", "verifier_reward_present": True}]},
        {"failure_attribution_labels": ["anything"]},
    ],
)
def test_score_zero_signal_needs_every_condition(overrides):
    review = only_review(clean_completion(**overrides))
    assert review["runner_completed_score_zero_signal"]["detected"] is False
    assert review["attribution_class"] != va.RUNNER_COMPLETED_SCORE_ZERO


def test_a_numeric_reward_counts_as_verifier_reward_even_when_the_flag_says_no():
    signal = only_review(
        clean_completion(trials=[{"verifier_reward_present": False, "reward": {"reward": 0}}])
    )["runner_completed_score_zero_signal"]
    assert signal["verifier_reward_present_count"] == 1
    assert signal["detected"] is True


# ---------------------------------------------------------------- baseline, decision, routing


def test_baseline_is_the_first_hardened_or_bare_codex_run_else_the_first_run():
    treatment = run(mode="codex_loopx")
    assert va.baseline_index([treatment, run(mode="my-Hardened_Codex-v2"), run(mode="bare-codex")]) == 1
    assert va.baseline_index([treatment, run(hardened_install_baseline=True)]) == 1
    assert va.baseline_index([treatment, run(mode="codex")]) == 0
    assert va.baseline_index([]) is None


def test_resolved_model_failure_is_treatment_eligible():
    baseline = zero(mode="bare-codex", score_failure_attribution="solution_incorrect")
    payload = va.review([run(mode="codex-loopx"), baseline])
    assert payload["baseline_run_index"] == 1
    assert payload["decision"]["blockers"] == []
    assert payload["decision"]["baseline_claim_caveat_resolved"] is True
    routing = payload["routing"]
    assert (routing["treatment_eligible"], routing["repeat_allowed"], routing["new_candidate_allowed"]) == (
        True,
        True,
        True,
    )
    assert routing["next_allowed_action"] == "baseline_failure_is_control_plane_addressable"
    assert routing["blocked_action_scope"] == ""


def test_submit_mismatch_blocks_a_setup_failure_but_keeps_its_repair_scope():
    payload = va.review(
        [zero(worker_submit_eligible_mismatch_count=1, trials=[{"exception_type": "AgentSetupError"}])]
    )
    assert payload["decision"]["blockers"] == [va.SUBMIT_MISMATCH_BLOCKER]
    assert payload["decision"]["baseline_claim_caveat_resolved"] is False
    routing = payload["routing"]
    assert routing["requires_agent_setup_repair"] is True
    assert routing["next_allowed_action"] == "repair_submit_boundary_mismatch"
    assert routing["blocked_action_scope"] == "same_task_repeat_until_setup_repair"
    assert routing["new_candidate_allowed"] is False


def test_verifier_caveat_still_allows_a_new_candidate():
    payload = va.review([zero(verifier_failure_attribution_count=1)])
    assert payload["decision"]["blockers"] == [va.VERIFIER_CAVEAT_BLOCKER]
    routing = payload["routing"]
    assert (routing["treatment_eligible"], routing["repeat_allowed"], routing["new_candidate_allowed"]) == (
        False,
        False,
        True,
    )
    assert routing["blocked_action_scope"] == "treatment_and_same_task_repeat"


def test_no_score_failure_routes_to_a_new_case():
    payload = va.review([run(official_task_score={"value": 1.0, "passed": True})])
    assert payload["decision"]["baseline_claim_caveat_resolved"] is False
    assert payload["routing"]["next_allowed_action"] == "select_new_material_ready_case_no_score_failure"
    assert payload["routing"]["blocked_action_scope"] == "same_task_claim"


def test_no_runs_asks_for_a_baseline_run():
    payload = va.review([])
    assert payload["baseline_run_index"] is None
    assert payload["decision"]["blockers"] == [va.MISSING_BASELINE_RUN]
    assert payload["routing"]["requires_compact_baseline_run"] is True
    assert payload["routing"]["next_allowed_action"] == "provide_compact_baseline_run"


def test_reduce_reads_runs_in_the_order_given():
    payload = va.reduce({"run": [run(mode="a"), run(mode="b")]}, {})
    assert [review["mode"] for review in payload["run_reviews"]] == ["a", "b"]
    assert payload["input_schema_versions"] == {"benchmark_runs": [RUN, RUN]}


# ---------------------------------------------------------------- rendering and command


def test_markdown_of_an_error_payload_shows_none():
    markdown = va.render_markdown(va.error_payload("boom", {}))
    assert "- Reviewed runs: `None`" in markdown
    assert "- Next action: None\n" in markdown
    assert "boom" not in markdown
    assert markdown.endswith("`False`\n")


def invoke(tmp_path, monkeypatch, *args):
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(cli, ["benchmark", "review-verifier-attribution", *args, "--format", "json"])


def test_missing_run_option_is_a_usage_error(tmp_path, monkeypatch):
    assert invoke(tmp_path, monkeypatch).exit_code == 2


def test_first_refused_file_wins(tmp_path, monkeypatch):
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    result = invoke(
        tmp_path, monkeypatch, "--benchmark-run-json", "list.json", "--benchmark-run-json", "missing.json"
    )
    payload = json.loads(result.stdout)
    assert result.exit_code == 1
    assert payload["error"] == "--benchmark-run-json must contain JSON objects"
    assert list(payload) == ["ok", "schema_version", "error", "read_boundary"]


def test_every_run_occurrence_is_reviewed_in_order(tmp_path, monkeypatch):
    (tmp_path / "t.json").write_text(json.dumps(run(mode="codex-loopx")), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps({"benchmark_run": run(mode="hardened-codex")}), encoding="utf-8")
    result = invoke(
        tmp_path,
        monkeypatch,
        "--benchmark-run-json",
        "t.json",
        "--benchmark-run-json",
        "b.json",
        "--benchmark-run-json",
        "t.json",
    )
    payload = json.loads(result.stdout)
    assert result.exit_code == 0
    assert [review["mode"] for review in payload["run_reviews"]] == ["codex-loopx", "hardened-codex", "codex-loopx"]
    assert payload["baseline_run_index"] == 1
