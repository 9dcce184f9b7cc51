"""Kind dispatch and detection, and the comparison / learning-ledger / result compactors.

Compactability boundaries were confirmed against LoopX 0.4.8 (the black-box
reference) through review-claim, attempt-learning-gate and baseline-failure-gate.
"""

from __future__ import annotations

import pytest

from benchledger.projections.artifacts import KINDS, IntakeError, NotAnObject, NotCompactable
from benchledger.projections.artifacts.comparison import compact_comparison
from benchledger.projections.artifacts.kinds import KIND_SCHEMAS, KIND_SPECS, detect_kind, normalize
from benchledger.projections.artifacts.learning_ledger import compact_learning_ledger
from benchledger.projections.artifacts.result import compact_result

CMP = "benchmark_comparison_v0"
LEDGER = "benchmark_learning_ledger_v0"
RESULT = "benchmark_result_v0"


def comparison(**fields):
    return compact_comparison({"schema_version": CMP, **fields})


def ledger(**fields):
    return compact_learning_ledger({"schema_version": LEDGER, **fields})


def result(**fields):
    return compact_result({"schema_version": RESULT, **fields})


# --- comparison --------------------------------------------------------------------


def test_comparison_keeps_fields_in_table_order():
    compact = comparison(
        decision={"why": "w", "score_uplift": False},
        claim_boundary={"raw_trace_excluded": True, "leaderboard_claim_allowed": False, "other": True},
        mode_pair=["a", "b"],
        next_action="go",
        task_id="t",
        official_task_score_delta=1,
    )
    assert list(compact.items()) == [
        ("schema_version", CMP),
        ("task_id", "t"),
        ("next_action", "go"),
        ("mode_pair", ["a", "b"]),
        ("official_task_score_delta", 1),
        ("claim_boundary", {"leaderboard_claim_allowed": False, "raw_trace_excluded": True}),
        ("decision", {"score_uplift": False, "why": "w"}),
    ]
    assert list(compact["claim_boundary"]) == ["leaderboard_claim_allowed", "raw_trace_excluded"]


def test_comparison_envelope_wins_and_siblings_are_ignored():
    value = {"task_id": "outer", "benchmark_comparison": {"schema_version": CMP, "task_id": "inner"}}
    assert compact_comparison(value)["task_id"] == "inner"


@pytest.mark.parametrize(
    "value",
    [
        {"schema_version": CMP},
        {"schema_version": CMP, "wall_time_delta_seconds": 3},
        {"schema_version": CMP, "both_success": "true"},
        {"schema_version": CMP, "claim_boundary": {"leaderboard_claim_allowed": 1, "foo": True}},
        {"schema_version": CMP, "baseline_failure_gate": {"schema_version": "benchmark_baseline_failure_gate_v0"}},
        {"schema_version": CMP, "baseline_failure_gate": {"baseline_attempt_count": 1.0}},
        {"schema_version": CMP, "decision": {"why": 0, "score_uplift": "yes"}},
        {"schema_version": CMP, "result_refs": [{}, {"foo": "a"}, {"scenario_id": "/tmp/x"}, [1], 1]},
        {"schema_version": CMP, "result_refs": {"scenario_id": "a"}},  # iterates keys
        {"schema_version": CMP, "result_refs": "abc"},
        {"schema_version": CMP, "result_refs": 0},
        {"schema_version": CMP, "scenario_count": True, "checklist_pass_count": None, "cost_delta_usd": "/tmp/x"},
        {"schema_version": "benchmark_comparison_v1", "task_id": "t"},
        # a matching envelope with nothing in it does not fall back to the outer object
        {"schema_version": CMP, "task_id": "outer", "benchmark_comparison": {"schema_version": CMP}},
    ],
)
def test_comparison_not_compactable(value):
    with pytest.raises(NotCompactable):
        compact_comparison(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [(5, "'int' object is not iterable"), (1.5, "'float' object is not iterable"), (True, "'bool' object is not iterable")],
)
def test_comparison_result_refs_scalar_fails_with_pythons_text(value, message):
    with pytest.raises(IntakeError) as caught:
        comparison(task_id="t", result_refs=value)
    assert str(caught.value) == message
    assert not isinstance(caught.value, NotCompactable)


def test_comparison_result_refs_keep_five_non_empty_references():
    refs = [{}] * 5 + [{"scenario_id": "s", "result_id": 7, "other": 1}] + [{"task_id": f"t{i}"} for i in range(6)]
    compact = comparison(result_refs=refs)
    assert compact["result_refs"] == [
        {"scenario_id": "s", "result_id": "7"},
        {"task_id": "t0"},
        {"task_id": "t1"},
        {"task_id": "t2"},
        {"task_id": "t3"},
    ]


def test_comparison_gate_block_gets_its_fixed_schema_and_order():
    gate = {
        "schema_version": "anything",
        "evidence_refs": "e",
        "baseline_attempt_count": -3,
        "baseline_failed": False,
        "failure_class": "c",
        "baseline_mode": "m",
        "other": "x",
    }
    assert list(comparison(baseline_failure_gate=gate)["baseline_failure_gate"].items()) == [
        ("schema_version", "benchmark_baseline_failure_gate_v0"),
        ("baseline_mode", "m"),
        ("failure_class", "c"),
        ("baseline_failed", False),
        ("baseline_attempt_count", -3),
        ("evidence_refs", ["e"]),
    ]


def test_comparison_deltas_follow_the_delta_rule():
    compact = comparison(
        official_task_score_delta="0.5", control_plane_score_delta=0, cost_delta_usd=[1], scenario_count=False
    )
    assert compact["official_task_score_delta"] == "0.5"
    assert compact["control_plane_score_delta"] == 0
    assert compact["cost_delta_usd"] == "[1]"
    assert "scenario_count" not in compact


def test_comparison_text_limits():
    compact = comparison(task_id="x" * 200, decision={"why": "w" * 300}, stop_conditions=["s" * 200])
    assert compact["task_id"] == "x" * 179 + "…"
    assert compact["decision"]["why"] == "w" * 239 + "…"
    assert compact["stop_conditions"] == ["s" * 159 + "…"]


# --- learning ledger -----------------------------------------------------------------


def test_ledger_gates_keep_only_booleans():
    compact = ledger(
        lifecycle_gate={"budget_count_allowed": "true", "blocked_reason": False},
        learning_quota_gate={"spend_allowed": True, "blocked_reason": "why", "actionable_reasons": "r"},
        routing={"repeat_allowed": "true", "new_candidate_allowed": False, "next_allowed_action": "  go  "},
    )
    assert compact["lifecycle_gate"] == {"blocked_reason": False}
    assert compact["learning_quota_gate"] == {"spend_allowed": True, "blocked_reason": "why", "actionable_reasons": ["r"]}
    assert compact["routing"] == {"new_candidate_allowed": False, "next_allowed_action": "go"}


def test_ledger_accepts_a_learning_ledger_review_output():
    review_output = {"ok": True, "schema_version": LEDGER, "task_id": "t", "error": None, "overhead": {"label": "l"}}
    assert compact_learning_ledger(review_output) == {"schema_version": LEDGER, "task_id": "t", "overhead": {"label": "l"}}


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"task_id": 0},
        {"official_task_score_delta": False},
        {"cost_delta_usd": 1},  # only kept inside overhead
        {"lifecycle_gate": {"budget_count_allowed": "true", "blocked_reason": 0}},
        {"learning_quota_gate": {"spend": True}},
        {"overhead": {"cost_delta_usd": True, "with_loopx_overhead_ms": 1}},
        {"routing": {"next_allowed_action": "   "}},
        {"read_boundary": {"compact_only": "true", "docker_invoked": False}},
        {"ok": True, "error": "x"},
    ],
)
def test_ledger_not_compactable(fields):
    with pytest.raises(NotCompactable):
        ledger(**fields)


# --- result --------------------------------------------------------------------------


def test_result_scores_keep_kind_number_and_boolean_verdict():
    compact = result(
        official_task_score={"kind": 5, "value": "0.5", "passed": 1},
        control_plane_score={"value": 0.25, "passed": True, "other": 1},
    )
    assert compact["official_task_score"] == {"kind": "5"}
    assert compact["control_plane_score"] == {"value": 0.25, "passed": True}


def test_result_text_limit_is_120():
    assert result(task_id="t" * 121)["task_id"] == "t" * 119 + "…"


def test_result_counts_merge_known_keys_with_top_level_overriding():
    compact = result(counts={"step_count": "12", "wall_time_ms": 1000.5, "other": 1, "spend_count": 2}, spend_count=3)
    assert compact["counts"] == {"step_count": 12, "wall_time_ms": 1000.5, "spend_count": 3}


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"spend_count": True},
        {"counts": {"other": 1, "step_count": "x"}},
        {"counts": {"spend_count": 1}, "spend_count": None},  # top-level key hides the nested value
        {"counts": {"spend_count": 1}, "spend_count": "n/a"},
        {"official_task_score": {"passed": None, "kind": "/tmp/x"}},
        {"control_plane_score": {"kind": 0, "value": True}},
        {"open_todo_preserved": "true"},
        {"failure_attribution_labels": 0},
    ],
)
def test_result_not_compactable(fields):
    with pytest.raises(NotCompactable):
        result(**fields)


def test_result_top_level_counter_alone_is_compactable():
    assert result(writeback_count="1")["counts"] == {"writeback_count": 1}


# --- kinds ---------------------------------------------------------------------------


def test_every_kind_has_a_spec():
    assert tuple(KIND_SPECS) == KINDS


def test_kind_schemas():
    assert KIND_SCHEMAS == {
        "run": "benchmark_run_v0",
        "comparison": CMP,
        "result": RESULT,
        "learning-ledger": LEDGER,
        "claim-review": "benchmark_claim_review_v0",
    }


def test_normalize_dispatches_to_the_compactors():
    assert normalize("comparison", {"schema_version": CMP, "task_id": "t"}) == {"schema_version": CMP, "task_id": "t"}
    assert normalize("result", {"benchmark_result": {"schema_version": RESULT, "task_id": "t"}})["task_id"] == "t"
    with pytest.raises(NotCompactable):
        normalize("learning-ledger", {"schema_version": LEDGER})


@pytest.mark.parametrize("kind", ["preflight", "launch", "post-launch"])
def test_raw_lifecycle_inputs_keep_only_what_lifecycle_state_reads(kind):
    value = {"anything": "/tmp/private/path", "token": "token=abcdefghijklmnop", "schema_version": "x_v0"}
    assert normalize(kind, value) == {"anything": None, "token": None, "schema_version": "x_v0"}
    assert normalize(kind, {}) == {}


def test_nested_preflights_are_read_the_same_way():
    value = {
        "benchmark_run": {"ready": True, "job_dir": "/tmp/x/jobs", "preflight_guard": {"ok": True, "first_blocker": "ready", "n": 3}},
        "private_runner_launch_summary": {"ready": False, "log": "/Users/a/log"},
    }
    assert normalize("preflight", value) == {
        "benchmark_run": {"ready": True, "job_dir": None, "preflight_guard": {"ok": True, "first_blocker": "ready", "n": None}},
        "private_runner_launch_summary": {"ready": False, "log": None},
    }


def test_post_launch_keeps_the_failure_marker_flags():
    value = {"first_blocker": "job_root_missing", "compact_failure_marker": {"terminal_closeout": True, "path": "/tmp/a/b"}, "jobs_dir": "/tmp/a"}
    assert normalize("post-launch", value) == {
        "first_blocker": "job_root_missing",
        "compact_failure_marker": {"terminal_closeout": True, "path": None},
        "jobs_dir": None,
    }


def test_claim_review_is_schema_checked_only():
    review = {"ok": True, "schema_version": "benchmark_claim_review_v0", "task_id": "/tmp/x"}
    assert normalize("claim-review", review) is review
    with pytest.raises(NotCompactable):
        normalize("claim-review", {"benchmark_claim_review": {"schema_version": "benchmark_claim_review_v0"}})
    with pytest.raises(NotCompactable):
        normalize("claim-review", {"schema_version": "benchmark_claim_review_v1"})


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "adapter-invocation"])
@pytest.mark.parametrize("value", [[], "x", 1, None])
def test_object_kinds_refuse_non_objects(kind, value):
    with pytest.raises(NotAnObject):
        normalize(kind, value)


def test_adapter_invocation_keeps_only_generated_loopx_key_names():
    argv = ["run", "--agent-kwarg", "loopx_mode=codex", "--agent-kwarg", "model=gpt", True, "--agent-kwarg", "loopx_b=/tmp/x"]
    assert normalize("adapter-invocation", argv) == {"loopx_kwarg_keys": ["loopx_b", "loopx_mode"]}
    assert normalize("adapter-invocation", {"loopx_z": "1", "model": "m", " loopx_a ": 2}) == {
        "loopx_kwarg_keys": ["loopx_a", "loopx_z"]
    }


def test_adapter_invocation_payload_normalizes_to_itself():
    payload = {"loopx_kwarg_keys": ["loopx_a", "loopx_b"]}
    assert normalize("adapter-invocation", payload) == payload


def test_adapter_invocation_refuses_scalars():
    with pytest.raises(NotAnObject):
        normalize("adapter-invocation", "loopx_a=1")


def test_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown artifact kind"):
        normalize("runs", {})


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ({"schema_version": "benchmark_run_v0"}, "run"),
        ({"ok": True, "benchmark_run": {"schema_version": "benchmark_run_v0"}}, "run"),
        ({"benchmark_comparison": {"schema_version": CMP}, "ok": True}, "comparison"),
        ({"schema_version": RESULT}, "result"),
        ({"benchmark_learning_ledger": {"schema_version": LEDGER}}, "learning-ledger"),
        ({"schema_version": "benchmark_claim_review_v0", "ok": True}, "claim-review"),
        # an envelope of the wrong schema does not count; the top level then decides
        ({"schema_version": CMP, "benchmark_run": {"schema_version": "x"}}, "comparison"),
        (["--agent-kwarg", "loopx_a=1"], None),
        # lifecycle inputs that declare their schema are of that kind
        ({"schema_version": "benchmark_preflight_fixture_v0"}, "preflight"),
        ({"schema_version": "terminal_bench_post_launch_materialization_v0"}, "post-launch"),
        ({"schema_version": "fixture_preflight_v0"}, None),
        ({"benchmark_claim_review": {"schema_version": "benchmark_claim_review_v0"}}, None),
        ({"schema_version": ["benchmark_run_v0"]}, None),
        ({}, None),
        ("benchmark_run_v0", None),
        (None, None),
    ],
)
def test_detect_kind(value, kind):
    assert detect_kind(value) == kind
