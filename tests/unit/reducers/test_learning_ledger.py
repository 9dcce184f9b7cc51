"""Learning ledger reducer on compacted inputs."""

from __future__ import annotations

from benchledger.projections import learning_ledger as ll

RUN = {"schema_version": "benchmark_run_v0"}
BASELINE = {**RUN, "mode": "hardened-codex", "official_task_score": {"value": 0}}
TREATMENT = {**RUN, "mode": "codex-loopx", "official_task_score": {"value": 1}, "worker_loopx_cli_call_total": 2}


def ledger(comparison, *runs, require=False):
    return ll.reduce({"comparison": [comparison], "run": list(runs)}, {"require_actionable_learning": require})


def test_environment_failure_suppresses_adapter_candidate():
    labels = {"environment_setup_failed_before_worker", "agent_setup_score_failure"}
    assert ll.repair_candidates(labels, [], assisted=True) == [ll.ENVIRONMENT_SETUP_CONTRACT]
    assert ll.repair_candidates({"agent_setup_score_failure"}, [], assisted=False) == [ll.ADAPTER_STARTUP_CONTRACT]


def test_blocker_candidates_follow_rule_order():
    blockers = ["baseline_failure_attribution_caveat", "worker_submit_eligible_boundary_mismatch"]
    assert ll.repair_candidates(set(), blockers, assisted=True) == [
        ll.SUBMIT_BOUNDARY_INVARIANT,
        ll.VERIFIER_ATTRIBUTION_REVIEW,
    ]


def test_label_pool_spans_every_run_and_first_blocker():
    third = {**RUN, "first_blocker": "harbor_job_root_missing"}
    pool = ll.label_pool({"failure_attribution_labels": ["x"]}, [BASELINE, TREATMENT, third])
    assert pool == {"x", "harbor_job_root_missing"}


def test_clean_run_derived_claim_fails_gate_without_compact_score():
    row = ledger({"official_task_score_delta": "n/a"}, BASELINE, TREATMENT, require=True)
    assert row["learning_status"] == ll.CLEAN_EVIDENCE
    assert row["repair_candidates"] == [ll.COST_OVERHEAD_GUARD]
    assert row["lifecycle_gate"]["blocked_reason"] == ll.MISSING_SCORE_OR_BLOCKER
    assert row["routing"]["next_allowed_action"] == ll.SELECT_NEXT_OR_COST_HYPOTHESIS
    assert (row["ok"], row["error"]) == (False, ll.MISSING_SCORE_OR_BLOCKER)
    assert list(row)[-2:] == ["ok", "error"]


def test_gate_flag_not_echoed_and_passes_when_spend_allowed():
    row = ledger({"official_task_score_delta": 1}, BASELINE, TREATMENT, require=True)
    assert row["ok"] is True
    assert "error" not in row and "require_actionable_learning" not in row
    assert row["routing"] == {
        "repeat_allowed": False,
        "new_candidate_allowed": True,
        "next_allowed_action": ll.SELECT_NEXT_OR_COST_HYPOTHESIS,
    }


def test_no_signal_without_assistance_stops_without_spend():
    row = ledger({"official_task_score_delta": 0}, BASELINE, {**RUN, "mode": "codex-loopx"})
    assert row["learning_status"] == ll.NO_GAIN_STATUS
    assert row["learning_quota_gate"]["blocked_reason"] == ll.NO_LEARNING_SIGNAL
    assert row["routing"]["next_allowed_action"] == ll.STOP_WITHOUT_SPEND
    assert row["ok"] is True


def test_missing_evidence_routes_to_repair_first_candidate():
    row = ledger({"failure_attribution_labels": ["l"]}, BASELINE, {**RUN, "mode": "plain", "official_task_score": {"value": 1}})
    assert row["repair_candidates"] == [ll.WORKER_EVIDENCE_GATE]
    assert row["routing"]["next_allowed_action"] == "repair_or_validate_" + ll.WORKER_EVIDENCE_GATE
    assert row["routing"]["new_candidate_allowed"] is False


def test_overhead_labels():
    assert ll.overhead({"cost_delta_usd": "-0.1"}, None)["label"] == ll.TREATMENT_CHEAPER
    assert ll.overhead({"with_loopx_overhead_ms": 0}, None)["wall_time_delta_seconds_or_ms"] == 0.0
    assert ll.overhead({"with_loopx_overhead_ms": "1500"}, 0.0)["label"] == ll.EXTRA_TIME_WITHOUT_GAIN
    assert ll.overhead({"cost_delta_usd": 1}, 1.0)["label"] == ll.POSITIVE_DELTA_WITH_OVERHEAD
    assert ll.overhead({"cost_delta_usd": 0}, None)["label"] == ll.OVERHEAD_UNKNOWN


def test_markdown_hides_gate_error():
    row = ledger({}, BASELINE, TREATMENT, require=True)
    rendered = ll.render_markdown(row)
    assert row["ok"] is False and row["error"] not in rendered
    assert "- Next action: select_next_candidate_or_add_named_cost_control_hypothesis_before_repeat" in rendered
