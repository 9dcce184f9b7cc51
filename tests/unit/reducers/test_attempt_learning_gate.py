"""Focused tests of the ``attempt-learning-gate`` reducer and command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.projections import attempt_learning_gate as gate


def compact_run(**fields):
    return {"schema_version": "benchmark_run_v0", **fields}


def learning_row(spend_allowed=True, next_action="repeat_with_named_hypothesis", **routing):
    """A compacted learning-ledger row; ``None`` leaves a field out."""
    row = {"schema_version": "benchmark_learning_ledger_v0"}
    if spend_allowed is not None:
        row["learning_quota_gate"] = {"spend_allowed": spend_allowed}
    routing_fields = dict(routing)
    if next_action is not None:
        routing_fields["next_allowed_action"] = next_action
    if routing_fields:
        row["routing"] = routing_fields
    return row


SCORED_RUN = compact_run(benchmark_id="tb", mode="codex", official_task_score={"value": 0.0, "passed": False})


def reduce(run=SCORED_RUN, ledger=None, **options):
    inputs = {"run": [run]}
    if ledger is not None:
        inputs["learning-ledger"] = [ledger]
    return gate.reduce(inputs, options)


# --- countability ----------------------------------------------------------------


@pytest.mark.parametrize(
    "run",
    [
        compact_run(official_task_score={"passed": False}),
        compact_run(official_task_score={"value": 0}),
        compact_run(first_blocker="none"),
        compact_run(failure_attribution_labels=["verifier_timeout"]),
        compact_run(trials=[{"exception_type": "AgentTimeoutError"}]),
    ],
    ids=["passed-false", "value-zero", "blocker-none", "recorded-label", "derived-label"],
)
def test_a_score_or_blocker_makes_the_attempt_countable(run):
    assert gate.is_countable(run) is True


@pytest.mark.parametrize(
    "run",
    [
        compact_run(official_score=1.0),
        compact_run(official_task_score={"kind": "reward"}),
        compact_run(first_blocker=""),
        compact_run(trials=[{"exception_type": "none", "task_id": "t"}]),
    ],
    ids=["top-level-score-only", "score-without-value", "empty-blocker", "clean-trial"],
)
def test_without_score_or_blocker_the_attempt_is_not_countable(run):
    assert gate.is_countable(run) is False


# --- repair candidates ---------------------------------------------------------------


def test_environment_setup_wins_over_adapter_startup():
    run = compact_run(
        first_blocker="pre_worker_agent_setup_failed",
        trials=[{"worker_start_status": "environment_setup_failed_before_worker"}],
    )
    assert gate.repair_candidates(run) == [gate.ENVIRONMENT_SETUP_CONTRACT]


@pytest.mark.parametrize("label", sorted(gate.ADAPTER_STARTUP_LABELS))
def test_adapter_startup_labels_point_at_the_argument_contract(label):
    assert gate.repair_candidates(compact_run(first_blocker=label)) == [gate.ADAPTER_STARTUP_ARGUMENT_CONTRACT]


def test_agent_setup_labels_of_the_ledger_fall_through_to_the_catch_all():
    run = compact_run(trials=[{"worker_start_status": "pre_worker_agent_setup_failed"}])
    # D-LABELS turns this status into ``agent_setup_failed_before_worker_start``,
    # which the attempt gate (unlike the learning ledger) does not recognize.
    assert gate.repair_candidates(run) == [gate.FAILURE_ATTRIBUTION_REVIEW]


def test_materialization_and_submit_mismatch_add_up():
    run = compact_run(
        failure_attribution_labels=["harbor_job_root_missing"],
        first_blocker="pre_worker_agent_setup_failed",
        worker_submit_eligible_mismatch_count=2,
    )
    assert gate.repair_candidates(run) == [
        gate.ADAPTER_STARTUP_ARGUMENT_CONTRACT,
        gate.LIFECYCLE_MATERIALIZATION_GATE,
        gate.SUBMIT_BOUNDARY_INVARIANT,
    ]


@pytest.mark.parametrize("count", [0, -1, True])
def test_submit_mismatch_needs_a_positive_integer(count):
    run = compact_run(worker_submit_eligible_mismatch_count=count)
    assert gate.repair_candidates(run) == []


def test_submit_mismatch_alone_suppresses_the_catch_all():
    run = compact_run(first_blocker="none", worker_submit_eligible_mismatch_count=1)
    assert gate.repair_candidates(run) == [gate.SUBMIT_BOUNDARY_INVARIANT]


def test_no_labels_no_candidates():
    assert gate.repair_candidates(SCORED_RUN) == []


# --- classification and permissions --------------------------------------------------------


def test_not_countable_comes_first_even_with_a_ready_row():
    payload = reduce(compact_run(official_score=0.0), learning_row(repeat_allowed=True, new_candidate_allowed=True))
    assert payload["classification"] == gate.NOT_COUNTABLE
    assert payload["next_required_action"] == gate.RECORD_SCORE_OR_BLOCKER
    assert payload["budget_count_allowed"] is False
    # Routing permissions do not depend on countability.
    assert payload["repeat_allowed"] is True
    assert payload["new_candidate_allowed"] is True


def test_missing_row():
    payload = reduce()
    assert payload["classification"] == gate.LEARNING_ROW_MISSING
    assert payload["next_required_action"] == gate.BUILD_LEARNING_ROW
    assert payload["learning_row_present"] is False
    assert payload["learning_row_actionable"] is False


@pytest.mark.parametrize(
    "row",
    [
        learning_row(spend_allowed=False),
        learning_row(spend_allowed=None),
        learning_row(next_action=None),
        learning_row(spend_allowed="true"),
    ],
    ids=["spend-denied", "no-quota-gate", "no-next-action", "string-true"],
)
def test_nonactionable_row(row):
    payload = reduce(ledger=dict(row, routing={**row.get("routing", {}), "repeat_allowed": True}))
    assert payload["classification"] == gate.LEARNING_ROW_NONACTIONABLE
    assert payload["next_required_action"] == gate.STOP_OR_NAME_REPAIR
    assert payload["learning_row_present"] is True
    assert payload["learning_row_actionable"] is False
    assert payload["repeat_allowed"] is False


def test_ready_row_routes_to_its_own_next_action():
    payload = reduce(ledger=learning_row(next_action="repair_x", repeat_allowed=True, new_candidate_allowed="true"))
    assert payload["classification"] == gate.LEARNING_READY
    assert payload["next_required_action"] == "repair_x"
    assert payload["budget_count_allowed"] is True
    assert payload["repeat_allowed"] is True
    assert payload["new_candidate_allowed"] is False


# --- payload shape and gate ----------------------------------------------------------


def test_gate_failure_names_the_classification_and_echo_comes_last():
    payload = reduce(require_budget_count_allowed=True)
    assert payload["ok"] is False
    assert payload["error"] == gate.LEARNING_ROW_MISSING
    assert list(payload)[-3:] == ["ok", "error", "require_budget_count_allowed"]
    assert payload["require_budget_count_allowed"] is True


def test_passing_gate_has_no_error():
    payload = reduce(ledger=learning_row(), require_budget_count_allowed=True)
    assert payload["ok"] is True
    assert "error" not in payload
    assert list(payload)[-2:] == ["ok", "require_budget_count_allowed"]


def test_identity_fields():
    run = compact_run(
        task_id="run-level-id",
        trials=[{"task_id": "a"}, {"task_id": ""}, {"task_id": "a"}, {"task_id": "b"}, "not-a-trial"],
    )
    payload = reduce(run)
    assert payload["benchmark_id"] is None
    assert payload["mode"] is None
    assert payload["task_ids"] == ["a", "b"]


def test_the_last_run_and_row_win():
    inputs = {
        "run": [compact_run(), SCORED_RUN],
        "learning-ledger": [learning_row(spend_allowed=False), learning_row()],
    }
    assert gate.reduce(inputs, {})["classification"] == gate.LEARNING_READY


def test_error_payload_has_no_gate_echo():
    assert gate.error_payload("boom", {"require_budget_count_allowed": True}) == {
        "ok": False,
        "schema_version": gate.SCHEMA_VERSION,
        "error": "boom",
        "read_boundary": {
            "compact_only": True,
            "raw_artifacts_read": False,
            "task_text_read": False,
            "local_paths_recorded": False,
        },
    }


def test_markdown_renders_error_payload_with_none():
    lines = gate.render_markdown(gate.error_payload("boom", {})).splitlines()
    assert lines[0] == "# Benchmark Attempt Learning Gate"
    assert "- Classification: `None`" in lines
    assert "- Next action: None" in lines
    assert "- Compact only: `True`" in lines
    assert not any("boom" in line for line in lines)


# --- command line ----------------------------------------------------------------------


def write(tmp_path, name, value):
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def invoke(*args):
    return CliRunner().invoke(cli, ["benchmark", "attempt-learning-gate", "--format", "json", *args])


def test_empty_ledger_path_means_no_row(tmp_path):
    run = write(tmp_path, "run.json", SCORED_RUN)
    result = invoke("--benchmark-run-json", run, "--benchmark-learning-ledger-json", "")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["classification"] == gate.LEARNING_ROW_MISSING


def test_run_error_wins_over_ledger_error(tmp_path):
    run = write(tmp_path, "run.json", [])
    ledger = write(tmp_path, "ledger.json", [])
    result = invoke("--benchmark-run-json", run, "--benchmark-learning-ledger-json", ledger)
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"] == "--benchmark-run-json must contain a JSON object"


def test_gate_failure_exits_one(tmp_path):
    run = write(tmp_path, "run.json", SCORED_RUN)
    result = invoke("--benchmark-run-json", run, "--require-budget-count-allowed")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"] == gate.LEARNING_ROW_MISSING


def test_run_is_required():
    assert invoke().exit_code == 2


def test_abbreviated_flags_are_usage_errors(tmp_path):
    run = write(tmp_path, "run.json", SCORED_RUN)
    assert invoke("--benchmark-run", run).exit_code == 2
