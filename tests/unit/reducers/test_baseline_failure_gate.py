"""Focused tests of the baseline failure gate: run projection, gate rules, payloads and the command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.projections import baseline_failure_gate as gate

FAILED_RESULT = {
    "schema_version": "benchmark_result_v0",
    "task_id": "fix-code-vulnerability",
    "scenario_id": "codex_goal_mode_baseline",
    "terminal_state": "failed",
    "official_task_score": {"passed": False, "value": 0.0},
    "failure_attribution_labels": ["worker_trace_without_benchmark_run_writeback"],
}

ALL_CONFIRMED = {
    "control_plane_addressable": True,
    "same_task_semantics": True,
    "same_runner_protocol": True,
    "trace_publicness_verified": True,
}


def options(**overrides):
    return {**gate.DEFAULT_OPTIONS, "benchmark_id": "terminal-bench@2.0", **overrides}


# --- run -> result projection ---


def test_run_task_id_labels_each_candidate_in_turn():
    run = {"trials": [{"task_id": "a/b"}], "case_ids": ["a/b"], "job_name": "job"}
    assert gate.result_from_run(run)["task_id"] == "job"
    assert gate.result_from_run({})["task_id"] == gate.FALLBACK_TASK_ID


def test_run_status_is_chosen_before_labelling():
    run = {"runner_return_status": "done/x", "official_score_status": "ok"}
    assert gate.result_from_run(run)["terminal_state"] == "unknown"
    assert gate.result_from_run({"official_score_status": "scored"})["terminal_state"] == "scored"


def test_run_passed_prefers_boolean_then_positive_score():
    assert gate.result_from_run({"official_task_score": {"passed": True, "value": 0.0}})["terminal_state"] == "passed"
    assert gate.result_from_run({"official_task_score": {"value": 0.0}, "official_score": 1})[
        "terminal_state"
    ] == "failed"
    # A boolean value is not a score: the run-level score decides.
    assert gate.result_from_run({"official_task_score": {"value": True}, "official_score": 0.5})[
        "official_task_score"
    ] == {"passed": True}


def test_run_without_score_or_status_is_a_failed_baseline():
    result = gate.result_from_run({})
    assert "official_task_score" not in result
    assert gate.baseline_failed(result) is True


def test_run_labels_skip_placeholders_case_sensitively_and_dedupe():
    run = {
        "score_failure_attribution": "None",
        "failure_attribution_labels": ["missing", "x", "x", "unknown", "a/b"],
        "worker_bridge_outcome": {"pre_worker_startup_blocker": "none", "worker_bridge_failure_attribution": "wbf"},
    }
    assert gate.result_from_run(run)["failure_attribution_labels"] == ["None", "x", "wbf"]


def test_run_labels_keep_first_eight():
    run = {
        "score_failure_attribution": "s",
        "failure_attribution_labels": [f"l{i}" for i in range(5)],
        "worker_bridge_outcome": {
            "score_failure_attribution": "o1",
            "worker_bridge_failure_attribution": "o2",
            "worker_bridge_materialization_blocker": "o3",
            "pre_worker_startup_blocker": "o4",
        },
    }
    assert gate.result_from_run(run)["failure_attribution_labels"] == ["s", "l0", "l1", "l2", "l3", "l4", "o1", "o2"]


def test_run_scenario_ignores_baseline_mode_flag():
    row = gate.raw_gate_comparison(gate.result_from_run({}), options(baseline_mode="mm"))
    assert row["baseline_scenario_id"] == "baseline"
    assert row["baseline_failure_gate"]["baseline_mode"] == "mm"


# --- baseline failed ---


@pytest.mark.parametrize(
    ("result", "failed"),
    [
        ({"official_task_score": {"passed": True}, "terminal_state": "failed"}, False),
        ({"official_task_score": {"passed": False}, "terminal_state": "passed"}, True),
        ({"terminal_state": " Resolved "}, False),
        ({"terminal_state": "completed"}, True),
        ({}, False),
    ],
)
def test_baseline_failed(result, failed):
    assert gate.baseline_failed(result) is failed


# --- gate rules ---


def test_flag_labels_keep_duplicates_input_labels_are_deduped():
    result = dict(FAILED_RESULT, failure_attribution_labels=["b", "a", "b", "c"])
    row = gate.raw_gate_comparison(result, options(failure_attribution_label=["a", "a", "x/y", "  "]))
    assert row["baseline_failure_gate"]["failure_attribution_labels"] == ["a", "a", "b", "c"]
    assert row["baseline_failure_gate"]["failure_class"] == "a"


def test_failure_class_uses_first_label_even_when_not_failed():
    result = {"terminal_state": "passed", "failure_attribution_labels": ["leftover"]}
    block = gate.raw_gate_comparison(result, options())["baseline_failure_gate"]
    assert block["baseline_failed"] is False
    assert block["failure_class"] == "leftover"
    assert block["failure_phase"] == gate.NOT_FAILED_PHASE


@pytest.mark.parametrize(
    ("missing", "reason"),
    [
        ("control_plane_addressable", "baseline failure is not marked control-plane-addressable"),
        ("same_task_semantics", "same task semantics not verified"),
        ("same_runner_protocol", "same runner protocol not verified"),
        ("trace_publicness_verified", "trace publicness not verified"),
    ],
)
def test_first_missing_confirmation_names_the_reason(missing, reason):
    block = gate.raw_gate_comparison(FAILED_RESULT, options(**dict(ALL_CONFIRMED, **{missing: False})))[
        "baseline_failure_gate"
    ]
    assert block["treatment_eligible"] is False
    assert block["negative_selection_reason"] == reason


def test_eligible_gate_has_no_default_reason():
    row = gate.raw_gate_comparison(FAILED_RESULT, options(**ALL_CONFIRMED))
    assert row["baseline_failure_gate"]["treatment_eligible"] is True
    assert "negative_selection_reason" not in row["baseline_failure_gate"]
    assert row["decision"] == {"score_uplift": False, "validation_enhancement_point": True, "why": gate.WHY_ELIGIBLE}


def test_user_texts_fall_back_differently():
    block = gate.raw_gate_comparison(
        FAILED_RESULT, options(minimum_next_evidence="see a/b", negative_selection_reason="   ")
    )["baseline_failure_gate"]
    assert block["minimum_next_evidence"] == "attribute a control-plane-addressable goal-mode baseline failure"
    assert "negative_selection_reason" not in block
    block = gate.raw_gate_comparison(FAILED_RESULT, options(negative_selection_reason=""))["baseline_failure_gate"]
    assert block["negative_selection_reason"] == "baseline failure is not marked control-plane-addressable"


def test_evidence_refs_default_and_attempt_count_floor():
    block = gate.raw_gate_comparison(
        FAILED_RESULT, options(evidence_ref=["", "x/y"], baseline_attempt_count=-3)
    )["baseline_failure_gate"]
    assert block["evidence_refs"] == ["benchmark_result_v0:codex_goal_mode_baseline"]
    assert block["baseline_attempt_count"] == 1


def test_default_comparison_id_is_cut_to_180():
    result = {"task_id": "t" * 150, "scenario_id": "s" * 150}
    row = gate.raw_gate_comparison(result, options())
    assert row["task_id"] == "t" * 120
    assert row["comparison_id"] == ("t" * 120 + "_" + "s" * 120)[:180]


def test_reduce_compacts_the_row():
    result = dict(FAILED_RESULT, failure_attribution_labels=[f"l{i}" for i in range(7)])
    payload = gate.reduce({"result": [result]}, options(next_action="token=abcdefghijklmnop"))
    comparison = payload["benchmark_comparison"]
    assert list(payload) == ["ok", "dry_run", "appended", "goal_id", "classification", "benchmark_comparison",
                             "baseline_gate_cli"]
    assert comparison["failure_attribution_labels"] == ["l0", "l1", "l2", "l3", "l4"]
    assert "next_action" not in comparison and "next_action" not in comparison["baseline_failure_gate"]
    assert payload["baseline_gate_cli"]["source"] == "compact_benchmark_result_v0"


def test_missing_options_read_as_the_command_defaults():
    payload = gate.reduce({"result": [{"terminal_state": "failed"}]}, {})
    comparison = payload["benchmark_comparison"]
    assert comparison["mode_pair"] == ["codex_cli_goal_mode", "codex_loopx"]
    assert comparison["benchmark_id"] == gate.FALLBACK_BENCHMARK_ID


def test_reduce_prefers_result_over_run():
    payload = gate.reduce({"run": [{"mode": "m"}], "result": [FAILED_RESULT]}, options())
    assert payload["benchmark_comparison"]["baseline_scenario_id"] == "codex_goal_mode_baseline"
    assert gate.reduce({"run": [{"mode": "m"}]}, options())["baseline_gate_cli"]["source"] == (
        "compact_benchmark_run_v0"
    )


# --- errors and --execute rules ---


def test_mode_errors_and_error_payload():
    both = gate.reduce({"result": [FAILED_RESULT]}, options(dry_run=True, execute=True, classification=""))
    assert both["error"] == gate.BOTH_MODES_ERROR
    assert both["dry_run"] is False and both["classification"] == gate.DEFAULT_CLASSIFICATION
    assert "benchmark_comparison" not in both and "schema_version" not in both
    assert gate.mode_error(options(execute=True, goal_id="")) == gate.GOAL_ID_MISSING_ERROR
    assert gate.mode_error(options(execute=True, goal_id="  ")) is None
    assert gate.reduce({}, options())["error"] == gate.NOT_COMPACTABLE_ERROR


@pytest.mark.parametrize(
    ("goal_id", "message"),
    [("  ", gate.GOAL_ID_REQUIRED_ERROR), (".", gate.GOAL_ID_SEGMENT_ERROR), ("..", gate.GOAL_ID_SEGMENT_ERROR),
     ("a\\b", gate.GOAL_ID_SEGMENT_ERROR), (" x/ ", gate.GOAL_ID_SEGMENT_ERROR)],
)
def test_invalid_goal_ids(goal_id, message):
    with pytest.raises(gate.InvalidGoalId, match=message):
        gate.validated_goal_id(goal_id)


def test_goal_id_is_stripped():
    assert gate.validated_goal_id(" g3 ") == "g3"


def test_history_event_and_executed_payload():
    preview = gate.reduce({"result": [FAILED_RESULT]}, options(next_action="do x"))
    event = gate.history_event(preview, "g", options(recommended_action="", delivery_outcome="outcome_gap"))
    assert list(event) == ["goal_id", "classification", "recommended_action", "health_check",
                           "benchmark_comparison", "delivery_outcome"]
    assert event["recommended_action"] == "do x"
    assert gate.history_event(preview, "g", options(recommended_action="  "))["recommended_action"] == "  "
    receipt = {name: f"<{name}>" for name in gate.RECEIPT_FIELDS}
    payload = gate.executed_payload(preview, event, receipt)
    assert list(payload) == [
        "ok", "dry_run", "appended", "registry", "runtime_root", "goal_id", "classification",
        "recommended_action", "generated_at", "health_check", "json_path", "markdown_path", "index_path",
        "benchmark_comparison", "delivery_outcome", "global_sync", "baseline_gate_cli",
    ]
    assert payload["generated_at"] == "<generated_at>"
    assert payload["baseline_gate_cli"]["source"] == "compact_benchmark_result_v0"


# --- markdown ---


def test_markdown_prints_error_and_skips_empty_texts():
    text = gate.render_markdown(gate.error_payload("boom", options()))
    assert text.endswith("- failure_class: `None`\n- error: boom\n")
    eligible = gate.render_markdown(gate.reduce({"result": [FAILED_RESULT]}, options(**ALL_CONFIRMED)))
    assert "negative_selection_reason" not in eligible and "- error:" not in eligible
    assert "- minimum_next_evidence: run the LoopX treatment arm on the same compactly verified task\n" in eligible


# --- the command ---


def invoke(args, stdin=None):
    return CliRunner().invoke(cli, ["benchmark", "baseline-failure-gate", "--format", "json", *args], input=stdin)


def test_command_reads_stdin_as_a_wrapped_run():
    run = {"benchmark_run": {"schema_version": "benchmark_run_v0", "mode": "m", "job_name": "j"}}
    result = invoke(["--benchmark-id", "b", "--baseline-result-json", "-"], stdin=json.dumps(run))
    payload = json.loads(result.stdout)
    assert result.exit_code == 0
    assert payload["baseline_gate_cli"]["source"] == "compact_benchmark_run_v0"
    assert payload["benchmark_comparison"]["task_id"] == "j"


def test_command_refuses_non_object_and_empty_stdin():
    result = invoke(["--benchmark-id", "b", "--baseline-result-json", "-"], stdin="[1]")
    assert (result.exit_code, json.loads(result.stdout)["error"]) == (1, gate.NOT_AN_OBJECT_ERROR)
    result = invoke(["--benchmark-id", "b", "--baseline-result-json", "-"], stdin="")
    assert json.loads(result.stdout)["error"] == "Expecting value: line 1 column 1 (char 0)"


def test_command_checks_modes_before_reading(tmp_path):
    missing = str(tmp_path / "missing.json")
    result = invoke(["--benchmark-id", "b", "--baseline-result-json", missing, "--execute"])
    assert json.loads(result.stdout)["error"] == gate.GOAL_ID_MISSING_ERROR
    result = invoke(["--benchmark-id", "b", "--baseline-result-json", missing, "--execute", "--goal-id", "a/b"])
    assert json.loads(result.stdout)["error"].startswith("[Errno 2]")


def test_command_execute_validates_goal_id_after_the_row(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(FAILED_RESULT))
    args = ["--benchmark-id", "b", "--baseline-result-json", str(path), "--execute"]
    result = invoke([*args, "--goal-id", ".."])
    payload = json.loads(result.stdout)
    assert (result.exit_code, payload["error"], payload["dry_run"]) == (1, gate.GOAL_ID_SEGMENT_ERROR, False)


@pytest.mark.parametrize(
    "extra", [["--baseline-attempt-count", "x"], ["--delivery-outcome", "nope"], ["--benchmark"]]
)
def test_command_usage_errors_exit_2(tmp_path, extra):
    assert invoke(["--benchmark-id", "b", "--baseline-result-json", "r.json", *extra]).exit_code == 2
