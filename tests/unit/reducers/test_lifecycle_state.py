"""``lifecycle-state`` reducer and command.

Expected values were confirmed against the LoopX 0.4.8 reference CLI on the
same (raw) inputs; the reducer tests feed the compact payloads directly.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.projections import lifecycle as lc
from benchledger.projections.lifecycle_state import (
    SCHEMA_VERSION,
    error_payload,
    preflight_ready,
    process_launched,
    reduce,
    render_markdown,
)

PREFLIGHT = {"schema_version": "benchmark_preflight_v0", "ready": True}
LAUNCH = {"schema_version": "benchmark_launch_v0", "process_started": True}
MATERIALIZED = {"schema_version": "terminal_bench_post_launch_materialization_v0", "ready_for_launch_state": True}
INGEST_READY = {**MATERIALIZED, "ready_for_compact_result_ingest": True}
RUN = {"schema_version": "benchmark_run_v0", "benchmark_id": "tb", "official_score": 1.0}
COMPARISON = {"schema_version": "benchmark_comparison_v0", "task_id": "t1", "official_task_score_delta": 1.0}
CLAIM_REVIEW = {"schema_version": "benchmark_claim_review_v0"}
LEDGER_BLOCKED = {"schema_version": "benchmark_learning_ledger_v0", "lifecycle_gate": {"budget_count_allowed": False}}
LEDGER_ALLOWED = {"schema_version": "benchmark_learning_ledger_v0", "lifecycle_gate": {"budget_count_allowed": True}}

# One attempt, one more piece of evidence per step, in the spec's transition order:
# (evidence added, current_phase, first_blocker, next_required_transition).
WALK = [
    ({}, lc.NOT_STARTED, lc.PREFLIGHT_NOT_READY, lc.PREFLIGHT_READY),
    # A ready preflight alone has no blocker: every later rule needs a later stage.
    ({"preflight": PREFLIGHT}, lc.PREFLIGHT_READY, lc.NO_BLOCKER, lc.LAUNCHED_PROCESS),
    ({"launch": LAUNCH}, lc.LAUNCHED_PROCESS, lc.POST_LAUNCH_MATERIALIZATION_MISSING, lc.POST_LAUNCH_MATERIALIZED),
    ({"post-launch": MATERIALIZED}, lc.POST_LAUNCH_MATERIALIZED, lc.COMPACT_RESULT_NOT_READY, lc.COMPACT_RESULT_READY),
    ({"post-launch": INGEST_READY}, lc.COMPACT_RESULT_READY, lc.COMPACT_RESULT_NOT_INGESTED, lc.RESULT_INGESTED),
    ({"run": RUN}, lc.RESULT_INGESTED, lc.PAIRED_COMPARISON_MISSING, lc.PAIRED_COMPARED),
    ({"comparison": COMPARISON}, lc.PAIRED_COMPARED, lc.CLAIM_REVIEW_MISSING, lc.CLAIM_REVIEWED),
    ({"claim-review": CLAIM_REVIEW}, lc.CLAIM_REVIEWED, lc.BENCHMARK_LEARNING_LEDGER_MISSING, lc.LEARNING_LEDGERED),
    (
        {"learning-ledger": LEDGER_BLOCKED},
        lc.LEARNING_LEDGERED,
        lc.BUDGET_COUNT_BLOCKED_BY_LEARNING_LEDGER,
        lc.BUDGET_COUNTED,
    ),
    ({"learning-ledger": LEDGER_ALLOWED}, lc.BUDGET_COUNTED, lc.READY_FOR_BUDGET_COUNT, lc.ALL_TRANSITIONS_DONE),
]


def state(evidence: dict, **options) -> dict:
    return reduce({kind: [payload] for kind, payload in evidence.items()}, options)


def test_one_attempt_walks_every_phase_in_order():
    evidence: dict = {}
    seen_phases = []
    for added, phase, blocker, next_transition in WALK:
        evidence.update(added)
        payload = state(evidence)
        assert (payload["current_phase"], payload["first_blocker"], payload["next_required_transition"]) == (
            phase,
            blocker,
            next_transition,
        )
        assert payload["ok"] is True
        seen_phases.append(phase)
    # Every unconditional phase is reached, in the module's order, and the last step counts budget.
    assert seen_phases[1:] == [p for p in lc.PHASES if p not in lc.CONDITIONAL_PHASES]
    final = state(evidence)
    assert final["achieved_transitions"] == seen_phases[1:]
    assert final["gates"][lc.BUDGET_COUNT_ALLOWED] is True
    assert final["canonical_lifecycle"]["current_phase"] == lc.VERIFIER_SCORED


def test_transitions_need_not_be_contiguous():
    payload = state({"learning-ledger": LEDGER_ALLOWED})
    assert payload["achieved_transitions"] == [lc.LEARNING_LEDGERED, lc.BUDGET_COUNTED]
    assert payload["current_phase"] == lc.BUDGET_COUNTED
    assert payload["next_required_transition"] == lc.PREFLIGHT_READY
    assert payload["first_blocker"] == lc.PREFLIGHT_NOT_READY


def test_a_run_implies_launch_and_materialization_but_not_preflight():
    payload = state({"run": {"schema_version": "benchmark_run_v0"}})
    assert payload["transition_ready"][lc.PREFLIGHT_READY] is False
    assert payload["achieved_transitions"][:4] == [
        lc.LAUNCHED_PROCESS,
        lc.POST_LAUNCH_MATERIALIZED,
        lc.COMPACT_RESULT_READY,
        lc.RESULT_INGESTED,
    ]
    # Without a numeric official score the verifier has not scored.
    assert payload["canonical_lifecycle"]["next_required_phase"] == lc.VERIFIER_SCORED


@pytest.mark.parametrize(
    ("preflight", "ready"),
    [
        ({}, False),
        ({"ready": True}, True),
        ({"ready": "true"}, False),
        ({"ready": 1}, False),
        ({"ok": True, "first_blocker": "ready_for_anything"}, True),
        ({"ok": True, "first_blocker": "Ready_x"}, False),
        ({"ok": 1, "first_blocker": "ready_x"}, False),
        ({"first_blocker": "ready_x"}, False),
        ({"first_blocker": "ready_for_private_managed_no_upload_pilot_review"}, True),
        ({"benchmark_run": {"benchmark_run": {"preflight_guard": {"ok": True, "first_blocker": "ready"}}}}, True),
        ({"preflight_guard": {"private_runner_launch_summary": {"ready": True}}}, True),
        # The launch summary is not searched recursively.
        ({"private_runner_launch_summary": {"benchmark_run": {"ready": True}}}, False),
        ({"ok": True, "first_blocker": ["ready"]}, False),
    ],
)
def test_preflight_readiness_rules(preflight, ready):
    assert preflight_ready(preflight) is ready


@pytest.mark.parametrize(
    ("launch", "launched"),
    [({"pid": 0}, False), ({"pid": 0.5}, True), ({"started": ""}, False), ({"launched": [0]}, True), ({}, False)],
)
def test_launch_evidence_is_python_truthiness(launch, launched):
    assert process_launched(launch) is launched


def test_failure_marker_overrides_even_an_unready_preflight():
    marker = {
        "ready_for_launch_state": True,
        "ready_for_compact_failure_marker": True,
        "first_blocker": 5,
        "compact_failure_marker": {"terminal_closeout": True, "case_attempt_countable": True},
    }
    payload = state({"post-launch": marker})
    assert payload["current_phase"] == lc.COMPACT_FAILURE_MARKER_READY
    assert payload["first_blocker"] == lc.COMPACT_FAILURE_MARKER_LEDGER_INGEST_REQUIRED
    assert payload["next_required_transition"] == lc.COMPACT_FAILURE_MARKER_LEDGER_INGEST
    assert payload["achieved_transitions"] == [lc.POST_LAUNCH_MATERIALIZED, lc.COMPACT_FAILURE_MARKER_READY]
    assert lc.COMPACT_FAILURE_MARKER_READY not in payload["transition_ready"]
    assert payload["gates"][lc.TERMINAL_CLOSEOUT] is True
    assert payload["gates"][lc.BENCHMARK_BUDGET_COUNTABLE] is False
    assert payload["inputs"]["post_launch_first_blocker"] == "5"
    # A run supersedes the marker.
    assert state({"post-launch": marker, "run": RUN})["current_phase"] == lc.RESULT_INGESTED


SETUP_FAILED_PROBE_RUN = {
    "schema_version": "benchmark_run_v0",
    "benchmark_id": "a/b",
    "worker_mode": "nop",
    "environment_setup_failure_context": {"schema_version": "ctx_v0", "surface": "x/y", "exception_type": "None"},
    "trials": [
        {
            "task_id": "p/q",
            "worker_start_status": lc.ENVIRONMENT_SETUP_PROBE_MATERIALIZED,
            "exception_type": "None",
            "trial_result_present": True,
        },
        {"task_id": "t2", "artifact_manifest_present": True},
    ],
}


def test_probe_with_setup_failure_keeps_the_readiness_blocker():
    payload = state({"preflight": PREFLIGHT, "run": SETUP_FAILED_PROBE_RUN})
    assert payload["current_phase"] == lc.ENVIRONMENT_SETUP_PROBE_COMPLETED
    assert payload["next_required_transition"] == lc.CASE_REPEAT_DECISION
    assert payload["first_blocker"] == lc.ENVIRONMENT_SETUP_READINESS_PREFLIGHT_REQUIRED
    assert list(payload["transition_ready"])[5:7] == [
        lc.ENVIRONMENT_SETUP_REPEAT_CLEARED,
        lc.ENVIRONMENT_SETUP_PROBE_COMPLETED,
    ]
    readiness = payload["environment_setup_readiness_preflight"]
    # Labels refuse path separators: the benchmark id and first task id fall back.
    assert (readiness["benchmark_id"], readiness["task_id"]) == ("benchmark", "t2")
    assert readiness["previous_failure_context"] == {"schema_version": "ctx_v0", "exception_type": "None"}
    probe = payload["environment_setup_probe_result"]
    assert (probe["task_id"], probe["exception_present"]) == ("unknown_task", True)
    assert (probe["trial_result_present_count"], probe["artifact_manifest_present_count"]) == (1, 1)
    assert payload["gates"][lc.ENVIRONMENT_SETUP_REPEAT_ALLOWED] is False
    assert payload["gates"][lc.ENVIRONMENT_SETUP_PROBE_CASE_ATTEMPT_COUNTABLE] is False


def test_probe_without_setup_failure_blocks_with_its_own_reason():
    run = {**SETUP_FAILED_PROBE_RUN, "trials": [{"worker_start_status": lc.ENVIRONMENT_SETUP_PROBE_MATERIALIZED}]}
    del run["environment_setup_failure_context"]
    payload = state({"preflight": PREFLIGHT, "run": run})
    assert payload["first_blocker"] == lc.ENVIRONMENT_SETUP_PROBE_RESULT_REQUIRES_REVIEW
    assert payload["environment_setup_readiness_preflight"] == {}
    assert payload["environment_setup_probe_result"]["probe_outcome"] == "materialized_without_exception"


def test_setup_failure_reported_without_context_uses_the_fallback():
    run = {"schema_version": "benchmark_run_v0", "first_blocker": lc.ENVIRONMENT_SETUP_FAILED_BEFORE_WORKER}
    ledger = {**LEDGER_ALLOWED, "routing": {"repeat_allowed": True}}
    payload = state({"preflight": PREFLIGHT, "run": run, "learning-ledger": ledger})
    readiness = payload["environment_setup_readiness_preflight"]
    assert readiness["previous_failure_context"]["next_probe"] == "environment_setup_readiness_preflight_before_repeat"
    assert readiness["next_allowed_action"] == "run_setup_only_environment_preflight_or_select_new_material_ready_case"
    assert payload["first_blocker"] == lc.ENVIRONMENT_SETUP_READINESS_PREFLIGHT_REQUIRED
    # The ledger would allow a repeat, but the setup failure is not cleared.
    assert payload["gates"][lc.REPEAT_ALLOWED] is False


def test_require_budget_count_allowed():
    blocked = state({"preflight": PREFLIGHT}, require_budget_count_allowed=True)
    assert (blocked["ok"], blocked["error"]) == (False, lc.BUDGET_COUNT_NOT_ALLOWED)
    assert list(blocked)[-3:] == ["ok", "error", "require_budget_count_allowed"]
    assert state({}, require_budget_count_allowed=True)["error"] == lc.PREFLIGHT_NOT_READY
    allowed = state({"learning-ledger": LEDGER_ALLOWED}, require_budget_count_allowed=True)
    assert allowed["ok"] is True and "error" not in allowed
    assert state({})["require_budget_count_allowed"] is False


def test_latest_payload_of_a_kind_wins():
    payload = reduce({"learning-ledger": [LEDGER_ALLOWED, LEDGER_BLOCKED]}, {})
    assert payload["gates"][lc.BUDGET_COUNT_ALLOWED] is False


def test_gates_are_listed_in_module_order():
    assert tuple(state({})["gates"]) == lc.GATES


def test_error_markdown_shows_none_and_an_empty_next_action():
    markdown = render_markdown(error_payload("boom", {}))
    assert "- Current phase: `None`" in markdown
    assert "- Environment setup next action: \n" in markdown
    assert "boom" not in markdown
    assert markdown.startswith(f"# Benchmark Lifecycle State\n\n- Schema: `{SCHEMA_VERSION}`")


def invoke(tmp_path, monkeypatch, *args):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["benchmark", "lifecycle-state", *args, "--format", "json"])
    return json.loads(result.stdout), result.exit_code


def test_empty_path_means_not_given(tmp_path, monkeypatch):
    payload, exit_code = invoke(tmp_path, monkeypatch, "--preflight-json", "", "--benchmark-run-json", "")
    assert (payload["current_phase"], exit_code) == (lc.NOT_STARTED, 0)


@pytest.mark.parametrize(
    ("flag", "document", "error"),
    [
        ("--launch-json", [], "lifecycle input JSON must contain an object"),
        ("--claim-review-json", "x", "lifecycle input JSON must contain an object"),
        (
            "--claim-review-json",
            {"claim_review": CLAIM_REVIEW},
            "--claim-review-json must contain benchmark_claim_review_v0",
        ),
        (
            "--benchmark-comparison-json",
            {"schema_version": "benchmark_comparison_v0"},
            "--benchmark-comparison-json did not contain a compactable benchmark_comparison_v0 object",
        ),
    ],
)
def test_refused_inputs(tmp_path, monkeypatch, flag, document, error):
    (tmp_path / "input.json").write_text(json.dumps(document))
    payload, exit_code = invoke(tmp_path, monkeypatch, flag, "input.json")
    assert (payload["error"], payload["ok"], exit_code) == (error, False, 1)
    assert len(payload["read_boundary"]) == 8
