"""Rules of ``benchmark_run_v0`` compaction (projections.artifacts.run), one behaviour per test."""

from __future__ import annotations

import pytest

from benchledger.projections.artifacts import IntakeError, NotCompactable
from benchledger.projections.artifacts.run import compact_run

SCHEMA = "benchmark_run_v0"


def run(**fields):
    return compact_run({"schema_version": SCHEMA, **fields})


# --- source selection (§3.1) and failing inputs (§3.8.1) ---------------------------


def test_bare_schema_is_a_valid_empty_run():
    assert compact_run({"schema_version": SCHEMA}) == {"schema_version": SCHEMA}


def test_nested_run_wins_over_the_outer_object():
    value = {"schema_version": SCHEMA, "mode": "outer", "benchmark_run": {"schema_version": SCHEMA, "mode": "inner"}}
    assert compact_run(value)["mode"] == "inner"


def test_nested_object_with_another_schema_falls_back_to_the_outer_run():
    value = {"schema_version": SCHEMA, "mode": "outer", "benchmark_run": {"schema_version": "x", "mode": "inner"}}
    assert compact_run(value)["mode"] == "outer"


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"schema_version": "benchmark_run_v1"},
        {"schema_version": " benchmark_run_v0"},
        {"benchmark_run": {"mode": "x"}},
        {"benchmark_run": [{"schema_version": SCHEMA}]},
        [{"schema_version": SCHEMA}],
    ],
)
def test_values_without_a_run_source_are_not_compactable(value):
    with pytest.raises(NotCompactable):
        compact_run(value)


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (None, "'NoneType' object is not iterable"),
        (3, "'int' object is not iterable"),
        (1.5, "'float' object is not iterable"),
        (True, "'bool' object is not iterable"),
    ],
)
def test_non_iterable_case_event_timeline_events_fail_with_the_python_error(events, message):
    with pytest.raises(IntakeError) as raised:
        run(case_event_timeline={"events": events})
    assert str(raised.value) == message
    assert not isinstance(raised.value, NotCompactable)


@pytest.mark.parametrize("events", ["text", {"a": 1}, [1, None]])
def test_iterable_case_event_timeline_events_are_harmless(events):
    assert run(case_event_timeline={"events": events}) == {"schema_version": SCHEMA}


# --- public-safe text and typed fields (§3.2) ---------------------------------------


def test_text_fields_fold_whitespace_and_drop_paths_and_secrets():
    compact = run(
        mode="  codex   goal\tmode ",
        benchmark_id="/tmp/secret-bench",
        job_name="token=abcdefghijklmnop",
        source_runner="<ok>/tmp/x",
    )
    assert compact["mode"] == "codex goal mode"
    assert "benchmark_id" not in compact
    assert "job_name" not in compact
    assert "source_runner" not in compact


def test_long_identity_text_is_cut_to_120_characters_with_an_ellipsis():
    compact = run(benchmark_id="b" * 200, first_blocker="f" * 200)
    assert compact["benchmark_id"] == "b" * 119 + "\u2026"
    assert compact["first_blocker"] == "f" * 139 + "\u2026"


def test_runner_owned_flags_and_boundary_keep_only_booleans():
    compact = run(
        submit_eligible="false",
        leaderboard_evidence=False,
        read_boundary={"compact_only": 1, "raw_artifacts_read": False, "upload_invoked": True, "other": True},
    )
    assert "submit_eligible" not in compact
    assert compact["leaderboard_evidence"] is False
    assert compact["read_boundary"] == {"raw_artifacts_read": False, "upload_invoked": True}


def test_counters_keep_only_integers_including_negative_ones():
    compact = run(
        worker_loopx_cli_call_total=-2,
        worker_benchmark_run_schema_ok_count=1.0,
        worker_submit_eligible_mismatch_count=True,
        worker_startup_blocker_count="3",
    )
    assert compact["worker_loopx_cli_call_total"] == -2
    for dropped in (
        "worker_benchmark_run_schema_ok_count",
        "worker_submit_eligible_mismatch_count",
        "worker_startup_blocker_count",
    ):
        assert dropped not in compact


def test_official_task_score_keeps_booleans_and_numbers_but_not_strings():
    compact = run(official_task_score={"kind": "k", "value": "0.5", "passed": 1}, official_score=True)
    assert compact["official_task_score"] == {"kind": "k", "passed": 1}
    assert "official_score" not in compact
    assert "official_task_score" not in run(official_task_score={"value": "1"})


def test_dropped_run_level_fields_never_reach_the_compact_run():
    compact = run(worker_start_status="pre_worker_agent_setup_failed", status="failed", failure_class="x", score=1)
    assert compact == {"schema_version": SCHEMA}


def test_failure_labels_are_a_public_safe_list_of_five():
    compact = run(failure_attribution_labels=["a", None, "/tmp/x/y", 3, "b", "c", "d", "e"])
    assert compact["failure_attribution_labels"] == ["a", "3", "b", "c", "d"]
    assert run(failure_attribution_labels="single")["failure_attribution_labels"] == ["single"]


def test_progress_is_a_numeric_map_of_the_trial_counts():
    compact = run(progress={"n_completed_trials": "1", "n_errored_trials": "0.0", "n_running_trials": True, "x": 1})
    assert compact["progress"] == {"n_completed_trials": 1, "n_errored_trials": 0.0}


# --- case ids ------------------------------------------------------------------------


def test_case_id_prefers_case_id_then_task_id_then_first_trial_then_case_ids():
    assert run(case_id="c", task_id="t")["case_id"] == "c"
    assert run(task_id="t", trials=[{"task_id": "trial"}])["case_id"] == "t"
    assert run(trials=[{"task_id": "trial"}], case_ids=["first"])["case_id"] == "trial"
    assert run(trials=["not an object", {"task_id": "trial"}], case_ids=["first"])["case_id"] == "first"


def test_case_ids_come_from_the_array_or_default_to_the_case_id():
    assert run(case_id="X", case_ids=["A", "B"])["case_ids"] == ["A", "B"]
    assert run(case_id="X", case_ids="A")["case_ids"] == ["X"]
    assert run(case_id="X", case_ids=[None, "/tmp/a/b"])["case_ids"] == ["X"]


def test_no_case_ids_without_a_case_id():
    compact = run(case_ids=[None, "B"])
    assert "case_id" not in compact and "case_ids" not in compact


# --- trials (§3.3) -------------------------------------------------------------------


def test_trials_keep_the_first_three_non_empty_ones_and_count_every_raw_item():
    raw = [
        {"official_score": 1},
        "x",
        {"task_id": "a"},
        {"trajectory_present": False},
        {"task_id": "c"},
        {"task_id": "d"},
    ]
    compact = run(trials=raw)
    assert compact["trials"] == [{"task_id": "a"}, {"trajectory_present": False}, {"task_id": "c"}]
    assert compact["trial_count"] == 6


def test_trials_without_a_compactable_field_leave_no_trials_key():
    compact = run(trials=[{"score": 1}, {"metrics": {"foo": 1}}, {"official_zero_observation": {"reward_value": None}}])
    assert "trials" not in compact and "trial_count" not in compact


def test_trial_fields_are_compacted_by_type():
    (trial,) = run(
        trials=[
            {
                "exception_type": "  AgentTimeoutError ",
                "worker_start_status": "/tmp/private/x",
                "verifier_failure_attribution_labels": "verifier_x",
                "reward": {"reward": "1", "bad": "x"},
                "metrics": {"input_tokens": 3, "other": 1},
                "official_zero_observation": {"reward_value": "0", "detected": "yes"},
            }
        ]
    )["trials"]
    assert trial == {
        "exception_type": "AgentTimeoutError",
        "verifier_failure_attribution_labels": ["verifier_x"],
        "reward": {"reward": 1},
        "metrics": {"input_tokens": 3},
        "official_zero_observation": {"reward_value": "0"},
    }


# --- observation sub-objects ---------------------------------------------------------


def test_loopx_cli_calls_object_becomes_a_numeric_map():
    counters = run(interaction_counters={"loopx_cli_calls": {"total": "3", "status": "3.0"}, "heartbeat_count": 2.0})[
        "interaction_counters"
    ]
    assert counters == {"loopx_cli_calls": {"total": 3, "status": 3.0}}


def test_worker_bridge_outcome_has_no_first_blocker_and_scrubs_text():
    outcome = run(
        worker_bridge_outcome={
            "first_blocker": "x",
            "pre_worker_startup_blocker": "blocked",
            "score_failure_attribution": "/Users/me/x",
            "worker_startup_blocker_count": 2,
        }
    )["worker_bridge_outcome"]
    assert outcome == {"pre_worker_startup_blocker": "blocked", "worker_startup_blocker_count": 2}


def test_environment_setup_failure_context_keeps_texts_then_booleans_then_duration():
    context = run(
        environment_setup_failure_context={
            "environment_setup_duration_seconds": 12.5,
            "agent_setup_started": False,
            "surface": "harbor",
            "extra": "dropped",
        }
    )["environment_setup_failure_context"]
    assert list(context.items()) == [
        ("surface", "harbor"),
        ("agent_setup_started", False),
        ("environment_setup_duration_seconds", 12.5),
    ]


# --- validation (§3.7) ---------------------------------------------------------------


def test_validation_failed_checks_skip_neutral_checks_and_stop_at_five():
    validation = run(validation={"official_case_success": False, **{f"c{i}": False for i in range(7)}, "ok": True})[
        "validation"
    ]
    assert validation["failed_checks"] == ["c0", "c1", "c2", "c3", "c4"]
    assert validation["all_passed"] is False


def test_empty_validation_is_omitted():
    assert "validation" not in run(validation={})


def test_connected_native_goal_worker_without_public_trace_is_a_failed_check():
    validation = run(
        validation={
            "native_goal_worker_route": True,
            "native_goal_worker_trace_status": " worker_connected_no_public_trace",
        }
    )["validation"]
    assert validation["failed_checks"] == ["native_goal_worker_public_trace_missing"]
    full = run(
        validation={
            **{f"c{i}": False for i in range(5)},
            "native_goal_worker_route": True,
            "native_goal_worker_trace_status": "worker_connected_no_public_trace",
        }
    )["validation"]
    assert "native_goal_worker_public_trace_missing" not in full["failed_checks"]


# --- rewrite D: SkillsBench pre-agent setup block ----------------------------------------

PRE_AGENT = {
    "mode": "skillsbench_codex_app_server_goal_baseline",
    "compose_setup_diagnostic": {"status": "compose_setup_blocked_before_agent_rounds"},
}
COMPOSE_LABEL = "skillsbench_compose_setup_blocked_before_agent_rounds"


def test_pre_agent_setup_block_sets_the_attribution_labels_and_validation():
    compact = run(
        **PRE_AGENT,
        native_goal_worker_route=True,
        failure_attribution_labels=["a", "b", "c", "d"],
        validation={
            "native_goal_worker_route": True,
            "native_goal_worker_trace_status": "worker_connected_no_public_trace",
        },
    )
    assert compact["score_failure_attribution"] == COMPOSE_LABEL
    assert compact["first_blocker"] == COMPOSE_LABEL
    assert compact["failure_attribution_labels"] == ["a", "b", "c", "d", COMPOSE_LABEL]
    assert compact["validation"]["failed_checks"] == ["pre_agent_setup_materialization_blocked"]
    assert compact["pre_agent_setup_materialization_blocked"] is True


def test_pre_agent_setup_block_reads_the_route_from_validation_when_the_top_level_lacks_it():
    compact = run(**PRE_AGENT, validation={"native_goal_worker_route": True})
    assert compact["score_failure_attribution"] == COMPOSE_LABEL
    assert compact["validation"]["failed_checks"] == ["pre_agent_setup_materialization_blocked"]


def test_pre_agent_setup_block_keeps_a_specific_attribution():
    compact = run(**PRE_AGENT, native_goal_worker_route=True, score_failure_attribution="other")
    assert compact["score_failure_attribution"] == "other"
    assert "first_blocker" not in compact
    assert COMPOSE_LABEL in compact["failure_attribution_labels"]


@pytest.mark.parametrize(
    "blocking_fact",
    [
        {"official_score": 0},
        {"native_goal_worker_trace_count": 1},
        {"native_goal_worker_connected": True},
        {"native_goal_worker_route": False, "validation": {"native_goal_worker_route": True}},
        {
            "compose_setup_diagnostic": {
                "status": "compose_setup_blocked_before_agent_rounds",
                "agent_rounds_started": True,
            }
        },
        {"mode": "skillsbench_codex_cli_goal_baseline"},
    ],
)
def test_pre_agent_setup_block_does_not_fire(blocking_fact):
    compact = run(**{**PRE_AGENT, "native_goal_worker_route": True, **blocking_fact})
    assert "score_failure_attribution" not in compact


def test_top_level_native_goal_worker_facts_of_the_wrong_type_fall_back_to_validation():
    compact = run(
        **PRE_AGENT,
        native_goal_worker_connected="true",
        validation={"native_goal_worker_route": True, "native_goal_worker_connected": True},
    )
    assert "score_failure_attribution" not in compact


def test_second_pre_agent_pass_runs_only_with_a_validation_object():
    # D's first pass keeps the lifecycle attribution, F then resets it to "none";
    # only the second pass (part of validation compaction) replaces that "none".
    fields = {
        **PRE_AGENT,
        "native_goal_worker_route": True,
        "score_failure_attribution": "skillsbench_product_mode_lifecycle_missing",
        "product_mode_lifecycle_contract": {"required": True, "satisfied": True, "countable_treatment": True},
    }
    assert run(**fields)["score_failure_attribution"] == "none"
    assert run(**fields, validation={"x": "y"})["score_failure_attribution"] == COMPOSE_LABEL


# --- rewrite F: product-mode lifecycle repair ------------------------------------------

LIFECYCLE_MISSING = "skillsbench_product_mode_lifecycle_missing"
SATISFIED_CONTRACT = {"required": True, "satisfied": True, "countable_treatment": True}


def test_lifecycle_repair_clears_a_satisfied_contract_to_none():
    compact = run(
        score_failure_attribution=LIFECYCLE_MISSING,
        product_mode_lifecycle_contract=SATISFIED_CONTRACT,
        failure_attribution_labels=[LIFECYCLE_MISSING, "skillsbench_remote_bridge_agent_no_requests", "keep"],
    )
    assert compact["score_failure_attribution"] == "none"
    assert compact["failure_attribution_labels"] == ["keep"]


def test_lifecycle_repair_with_a_zero_score_blames_the_solution():
    compact = run(
        score_failure_attribution=LIFECYCLE_MISSING,
        product_mode_lifecycle_contract=SATISFIED_CONTRACT,
        official_score=0,
        failure_attribution_labels=list("abcdef"),
    )
    assert compact["score_failure_attribution"] == "official_verifier_solution_failure"
    assert compact["failure_attribution_labels"] == ["official_verifier_solution_failure", "a", "b", "c", "d"]


def test_lifecycle_repair_reports_a_solver_activity_gap():
    compact = run(
        score_failure_attribution=LIFECYCLE_MISSING,
        product_mode_lifecycle_contract=SATISFIED_CONTRACT,
        official_score=0,
        interaction_counters={
            "product_mode_solver_activity_gap": True,
            "remote_command_file_bridge_agent_todo_closeout_count": 0,
        },
        failure_attribution_labels=["official_verifier_solution_failure", "x"],
    )
    assert compact["score_failure_attribution"] == "skillsbench_product_mode_solver_activity_gap"
    assert compact["failure_attribution_labels"] == ["skillsbench_product_mode_solver_activity_gap", "x"]


def test_lifecycle_contract_is_normalized_when_its_evidence_is_complete():
    compact = run(
        score_failure_attribution=LIFECYCLE_MISSING,
        product_mode_lifecycle_contract={
            "required": True,
            "state_read_count": 1,
            "state_write_count": 1,
            "closeout_satisfied": True,
            "missing_reason": "missing_case_local_loopx_closeout",
        },
    )
    assert compact["score_failure_attribution"] == "none"
    assert "missing_reason" not in compact["product_mode_lifecycle_contract"]


@pytest.mark.parametrize(
    "contract",
    [
        {"required": True, "satisfied": False, "countable_treatment": True},
        {"required": True, "state_read_count": "1", "state_write_count": 1, "closeout_satisfied": True},
        {
            "required": True,
            "state_read_count": 1,
            "state_write_count": 1,
            "closeout_satisfied": True,
            "agent_operation_trace_required": True,
        },
    ],
)
def test_lifecycle_repair_does_not_fire_without_a_satisfied_contract(contract):
    compact = run(score_failure_attribution=LIFECYCLE_MISSING, product_mode_lifecycle_contract=contract)
    assert compact["score_failure_attribution"] == LIFECYCLE_MISSING


# --- rewrite B: runner source fingerprint mismatch ---------------------------------------

GIT_HEAD_MISMATCH = "loopx_runner_source_git_head_mismatch"
FINGERPRINT = {
    "loopx_runner_source_fingerprint_status": "mismatched_expected",
    "loopx_runner_source_first_blocker": GIT_HEAD_MISMATCH,
}


def test_runner_source_mismatch_becomes_the_root_blocker():
    compact = run(
        runner_prerequisites=FINGERPRINT,
        failure_attribution_labels=["a", "verifier_dependency_install_failure", "b", "c", "d"],
    )
    for field in ("score_failure_attribution", "first_blocker", "repeat_blocked_by"):
        assert compact[field] == GIT_HEAD_MISMATCH
    assert compact["failure_attribution_labels"] == [
        GIT_HEAD_MISMATCH,
        "skillsbench_runner_source_fingerprint_mismatch",
        "skillsbench_runner_setup_error",
        "a",
        "b",
    ]
    assert compact["official_score_comparable_to_native_codex"] is False
    assert compact["validation"] == {"runner_source_fingerprint_mismatch": True, "all_passed": False}


def test_runner_source_mismatch_falls_back_to_the_runner_config_per_fact():
    compact = run(
        runner_prerequisites={"loopx_runner_source_fingerprint_status": "  mismatched_expected"},
        runner_config={"loopx_runner_source_first_blocker": GIT_HEAD_MISMATCH},
    )
    assert compact["score_failure_attribution"] == GIT_HEAD_MISMATCH


def test_runner_source_mismatch_does_not_fire_with_a_score_or_another_status():
    assert "score_failure_attribution" not in run(runner_prerequisites=FINGERPRINT, official_score=1)
    other = run(
        runner_prerequisites={"loopx_runner_source_fingerprint_status": "other"},
        runner_config=FINGERPRINT,
    )
    assert "score_failure_attribution" not in other


# --- rewrite C: egress preflight block ---------------------------------------------------

PROXY_BLOCKED = {
    "benchmark_egress_proxy_required": True,
    "benchmark_egress_proxy_ready": False,
    "benchmark_egress_proxy_status": " failed ",
}
CODEX_API_BLOCKED = {
    "codex_api_egress_preflight_required": True,
    "codex_api_egress_preflight_status": "proxy_auth_required",
}


def test_blocked_benchmark_proxy_wins_over_a_blocked_codex_api_preflight():
    compact = run(
        runner_config={**CODEX_API_BLOCKED, **PROXY_BLOCKED},
        failure_attribution_labels=["a", "verifier_dependency_install_failure", "skillsbench_environment_setup_error"],
    )
    assert compact["score_failure_attribution"] == "skillsbench_benchmark_egress_proxy_preflight_blocked"
    assert compact["failure_attribution_labels"] == [
        "skillsbench_benchmark_egress_proxy_preflight_blocked",
        "skillsbench_environment_setup_error",
        "skillsbench_benchmark_egress_proxy_failed",
        "a",
    ]
    assert compact["validation"] == {
        "benchmark_egress_proxy_preflight_blocked": True,
        "raw_verifier_output_read": False,
        "all_passed": False,
    }


def test_blocked_codex_api_preflight_alone():
    compact = run(runner_config=CODEX_API_BLOCKED)
    assert compact["repeat_blocked_by"] == "skillsbench_codex_api_egress_preflight_blocked"
    assert "skillsbench_codex_api_egress_proxy_auth_required" in compact["failure_attribution_labels"]


@pytest.mark.parametrize(
    "fields",
    [
        {"runner_config": {**PROXY_BLOCKED, "benchmark_egress_proxy_required": 1}},
        {"runner_config": {**PROXY_BLOCKED, "benchmark_egress_proxy_status": "ok"}},
        {"runner_config": PROXY_BLOCKED, "official_task_score": {"value": 0.0}},
        PROXY_BLOCKED,
    ],
)
def test_egress_preflight_block_does_not_fire(fields):
    assert "score_failure_attribution" not in run(**fields)


# --- rewrite A: verifier bootstrap with a missing official score ---------------------------

MISSING_SCORE = {"official_score_status": "missing"}
UV_RISK = {"task_staging": {"verifier_uv_bootstrap_risk_detected": True}}


def test_verifier_bootstrap_risk_explains_a_missing_score():
    compact = run(
        **MISSING_SCORE,
        **UV_RISK,
        failure_attribution_labels=["skillsbench_runner_error"],
        verifier_dependency_failure_count=-2,
    )
    assert compact["score_failure_attribution"] == "verifier_dependency_install_failure"
    assert compact["first_blocker"] == compact["repeat_blocked_by"] == "verifier_dependency_install_failure"
    assert compact["failure_attribution_labels"] == [
        "verifier_dependency_install_failure",
        "skillsbench_verifier_bootstrap_missing_official_score",
        "verifier_uv_install_or_download_failure",
    ]
    assert compact["verifier_failure_attribution_count"] == 1
    assert compact["verifier_dependency_failure_count"] == 1
    assert compact["official_task_score"] == {
        "kind": "skillsbench_verifier_bootstrap_reward_missing",
        "value": None,
        "passed": False,
    }
    assert compact["validation"] == {
        "raw_verifier_output_read": False,
        "verifier_bootstrap_missing_score_classified": True,
    }


def test_final_verifier_timeout_becomes_a_bootstrap_timeout_with_uncapped_labels():
    compact = run(
        **MISSING_SCORE,
        score_failure_attribution="skillsbench_final_verifier_timeout",
        task_setup_preflight={
            "verifier_uv_bootstrap_risk_detected": True,
            "verifier_package_install_risk_detected": True,
            "verifier_bootstrap_risk_detected": True,
            "first_blocker": "verifier_bootstrap_risk",
        },
        failure_attribution_labels=["skillsbench_verifier_timeout"],
    )
    assert compact["score_failure_attribution"] == "verifier_dependency_bootstrap_timeout"
    assert compact["failure_attribution_labels"] == [
        "verifier_dependency_bootstrap_timeout",
        "skillsbench_verifier_bootstrap_missing_official_score",
        "verifier_uv_install_or_download_failure",
        "skillsbench_verifier_package_install_risk",
        "skillsbench_verifier_bootstrap_preflight_blocked",
    ]
    assert compact["official_task_score"]["kind"] == "skillsbench_verifier_bootstrap_timeout_reward_missing"


@pytest.mark.parametrize(
    "fields",
    [
        {**UV_RISK},
        {**MISSING_SCORE},
        {**MISSING_SCORE, **UV_RISK, "official_score": 0},
        {**MISSING_SCORE, **UV_RISK, "score_failure_attribution": "other"},
        {**MISSING_SCORE, **UV_RISK, "failure_attribution_labels": ["other"]},
        {**MISSING_SCORE, **UV_RISK, "official_task_score": {"kind": "reward"}},
        {**MISSING_SCORE, "task_setup_preflight": {"verifier_package_install_risk_detected": True}},
    ],
)
def test_verifier_bootstrap_rewrite_does_not_fire(fields):
    assert run(**fields).get("score_failure_attribution") != "verifier_dependency_install_failure"


def test_pre_agent_staging_failure_lets_lifecycle_labels_be_replaced():
    compact = run(
        **MISSING_SCORE,
        task_staging={"verifier_uv_bootstrap_risk_detected": True, "staged": False},
        score_failure_attribution=LIFECYCLE_MISSING,
        failure_attribution_labels=["skillsbench_product_mode_uncountable_treatment"],
    )
    assert compact["score_failure_attribution"] == "verifier_dependency_install_failure"
    assert "skillsbench_product_mode_uncountable_treatment" not in compact["failure_attribution_labels"]


# --- rewrite E: runner-failure root blockers ----------------------------------------------


def test_runner_failure_class_becomes_the_root_blocker():
    compact = run(runner_failure={"failure_class": "environment_setup_failed_before_worker"})
    assert compact["first_blocker"] == "environment_setup_failed_before_worker"
    assert compact["repeat_blocked_by"] == "environment_setup_failed_before_worker"


def test_runner_failure_prefers_the_attribution_and_keeps_specific_blockers():
    compact = run(
        score_failure_attribution="attr",
        first_blocker="specific",
        repeat_blocked_by="skillsbench_runner_error",
        runner_failure={"raw_logs_read": False},
    )
    assert compact["first_blocker"] == "specific"
    assert compact["repeat_blocked_by"] == "attr"


@pytest.mark.parametrize(
    "fields",
    [
        {"runner_failure": {"failure_class": "x"}, "official_score": 0},
        {"runner_failure": {"raw_logs_read": "no"}, "score_failure_attribution": "attr"},
        {"runner_failure": {"controller_cutoff": {"unknown": 1}}, "score_failure_attribution": "attr"},
        {"score_failure_attribution": "attr"},
    ],
)
def test_runner_failure_rewrite_does_not_set_blockers(fields):
    compact = run(**fields)
    assert "first_blocker" not in compact and "repeat_blocked_by" not in compact


def test_runner_failure_uses_a_verbatim_none_attribution_as_the_blocker():
    compact = run(runner_failure={"failure_class": "x"}, score_failure_attribution="None")
    assert compact["first_blocker"] == compact["repeat_blocked_by"] == "None"
