"""Focused tests of the ``review-runner-invariants`` reducer and command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.projections import runner_invariants as review

FULL_BOUNDARY = {
    "compact_only": True,
    "raw_artifacts_read": False,
    "task_text_read": False,
    "local_paths_recorded": False,
}


def compact_run(**fields):
    return {"schema_version": "benchmark_run_v0", **fields}


def clean_run(**fields):
    """A compact run echoing the default expectations; ``fields`` override or add fields."""
    defaults = {"submit_eligible": False, "leaderboard_evidence": False, "read_boundary": dict(FULL_BOUNDARY)}
    return compact_run(**(defaults | fields))


def reduce(run, **options):
    return review.reduce({"run": [run]}, options)


def test_clean_echo_is_ok_and_lists_every_observation():
    payload = reduce(clean_run(source_runner="worker-bridge", job_name="job"))
    assert payload["classification"] == review.BOUNDARY_OK
    assert payload["repair_recommendation"] == review.REPAIR_OK
    assert payload["clean"] is True
    assert payload["ok"] is True
    assert payload["job_name_present"] is True
    assert payload["runner_label"] == "worker-bridge"
    assert list(payload["observed_runner_owned_fields"]) == [
        "submit_eligible",
        "leaderboard_evidence",
        "read_boundary.compact_only",
        "read_boundary.raw_artifacts_read",
        "read_boundary.task_text_read",
        "read_boundary.local_paths_recorded",
    ]
    assert "error" not in payload


def test_defaults_apply_when_options_are_empty():
    expected = reduce(compact_run())["expected_runner_owned_fields"]
    assert expected == {
        "submit_eligible": False,
        "leaderboard_evidence": False,
        "read_boundary.compact_only": True,
        "read_boundary.raw_artifacts_read": False,
        "read_boundary.task_text_read": False,
        "read_boundary.local_paths_recorded": False,
    }


def test_mismatch_outranks_missing_but_both_are_counted():
    run = compact_run(submit_eligible=True, read_boundary={"compact_only": True, "raw_artifacts_read": True})
    payload = reduce(run)
    assert payload["classification"] == review.BOUNDARY_MISMATCH
    assert payload["repair_recommendation"] == review.REPAIR_MISMATCH
    assert payload["mismatch_count"] == 2
    assert payload["missing_fields"] == [
        "leaderboard_evidence",
        "read_boundary.task_text_read",
        "read_boundary.local_paths_recorded",
    ]
    assert payload["missing_field_count"] == 3
    assert payload["mismatches"][0] == {
        "field": "submit_eligible",
        "expected": False,
        "actual": True,
        "owner": "runner",
        "reason": "worker_writeback_conflicts_with_runner_owned_boundary",
    }
    assert [m["field"] for m in payload["mismatches"]] == ["submit_eligible", "read_boundary.raw_artifacts_read"]
    assert payload["ok"] is True


@pytest.mark.parametrize("value", ["false", 0, None, [], {}])
def test_non_boolean_values_are_missing_not_mismatched(value):
    run = clean_run()
    run["leaderboard_evidence"] = value
    payload = reduce(run)
    assert payload["classification"] == review.BOUNDARY_INCOMPLETE
    assert payload["missing_fields"] == ["leaderboard_evidence"]
    assert "leaderboard_evidence" not in payload["observed_runner_owned_fields"]


@pytest.mark.parametrize("boundary", [None, "compact", [True], 1])
def test_a_boundary_that_is_not_an_object_misses_all_four_fields(boundary):
    payload = reduce(compact_run(submit_eligible=False, leaderboard_evidence=False, read_boundary=boundary))
    assert payload["missing_fields"] == [
        "read_boundary.compact_only",
        "read_boundary.raw_artifacts_read",
        "read_boundary.task_text_read",
        "read_boundary.local_paths_recorded",
    ]
    assert payload["observed_runner_owned_fields"] == {"submit_eligible": False, "leaderboard_evidence": False}


def test_expectations_come_from_options_and_claim_boundary_echoes_them():
    run = clean_run(submit_eligible=True)
    payload = reduce(run, expect_submit_eligible=True, expect_leaderboard_evidence=True, expect_compact_only=False)
    assert payload["expected_runner_owned_fields"]["submit_eligible"] is True
    assert [m["field"] for m in payload["mismatches"]] == ["leaderboard_evidence", "read_boundary.compact_only"]
    assert payload["claim_boundary"] == {
        "runner_owned_fields_authoritative": True,
        "worker_may_override_runner_owned_fields": False,
        "submit_eligible": True,
        "leaderboard_evidence": True,
        "raw_trace_excluded": True,
    }
    # The run's own boundary never leaks into the reviewer's constant one.
    assert payload["read_boundary"] == FULL_BOUNDARY


def test_given_runner_label_is_verbatim_and_empty_falls_back():
    run = clean_run(source_runner="bridge")
    assert reduce(run, runner_label="  /tmp/private  runner ")["runner_label"] == "  /tmp/private  runner "
    assert reduce(run, runner_label="")["runner_label"] == "bridge"
    assert reduce(clean_run(), runner_label="")["runner_label"] is None


@pytest.mark.parametrize(
    ("run", "classification"),
    [
        (compact_run(submit_eligible=False), review.BOUNDARY_INCOMPLETE),
        (clean_run(leaderboard_evidence=True), review.BOUNDARY_MISMATCH),
    ],
)
def test_require_clean_fails_with_the_classification(run, classification):
    payload = reduce(run, require_clean=True)
    assert payload["ok"] is False
    assert payload["error"] == classification
    assert list(payload)[-3:] == ["ok", "error", "require_clean"]
    assert payload["require_clean"] is True


def test_require_clean_passes_a_clean_run():
    payload = reduce(clean_run(), require_clean=True)
    assert payload["ok"] is True and payload["require_clean"] is True
    assert "error" not in payload


def test_error_payload_and_its_markdown():
    payload = review.error_payload("boom", {"require_clean": True})
    assert payload == {
        "ok": False,
        "schema_version": review.SCHEMA_VERSION,
        "error": "boom",
        "read_boundary": FULL_BOUNDARY,
    }
    markdown = review.render_markdown(payload)
    assert "- Benchmark: `None`" in markdown
    assert "- Repair: None\n" in markdown
    assert markdown.endswith("- Raw artifacts read: `False`\n")


def test_markdown_renders_python_values():
    markdown = review.render_markdown(reduce(clean_run(benchmark_id="tb@2", mode="m")))
    assert markdown.startswith("# Benchmark Runner Invariant Review\n\n- Schema: `benchmark_runner_invariant_review_v0`\n")
    assert "- Clean: `True`\n" in markdown
    assert f"- Repair: {review.REPAIR_OK}\n" in markdown


def invoke(*args):
    return CliRunner().invoke(cli, ["benchmark", "review-runner-invariants", *args], catch_exceptions=False)


def test_expect_flags_reject_anything_but_true_or_false(tmp_path):
    result = invoke("--benchmark-run-json", str(tmp_path / "run.json"), "--expect-compact-only", "True")
    assert result.exit_code == 2


def test_command_passes_expectations_and_gate_through(tmp_path):
    run_file = tmp_path / "run.json"
    run_file.write_text(json.dumps(clean_run(submit_eligible=True)))
    result = invoke(
        "--benchmark-run-json", str(run_file), "--expect-submit-eligible", "true", "--require-clean", "--format", "json"
    )
    payload = json.loads(result.stdout)
    assert payload["classification"] == review.BOUNDARY_OK
    assert result.exit_code == 0
    result = invoke("--benchmark-run-json", str(run_file), "--require-clean", "--format", "json")
    assert json.loads(result.stdout)["error"] == review.BOUNDARY_MISMATCH
    assert result.exit_code == 1


def test_command_refuses_a_non_object(tmp_path):
    run_file = tmp_path / "run.json"
    run_file.write_text("[1]")
    result = invoke("--benchmark-run-json", str(run_file), "--require-clean", "--format", "json")
    assert json.loads(result.stdout)["error"] == "--benchmark-run-json must contain a JSON object"
    assert result.exit_code == 1
