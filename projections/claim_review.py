"""``review-claim``: may a paired comparison support a LoopX-assisted score-recovery claim?

Spec: claim-review.md. From one compacted ``benchmark_comparison_v0`` and the
compacted ``benchmark_run_v0`` artifacts (in command-line order) the review
picks a baseline and a treatment run, settles the official score delta, checks
the treatment for worker-visible LoopX evidence and the baseline for a
verifier-side failure attribution, and grades the claim. The learning ledger
builds on :func:`review_claim`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchledger.projections.artifacts.safe import claim_number, is_int
from benchledger.projections.boundaries import compact_read_boundary, refused_input_payload
from benchledger.projections.markdown import code, document, get, text
from benchledger.projections.run_classifiers import (
    NO_ATTRIBUTION,
    RunFailure,
    is_baseline_run,
    normalized_mode,
    treatment_worker_evidence,
)

NAME = "review-claim"
VERSION = 1
SCHEMA_VERSION = "benchmark_claim_review_v0"
COMPARISON_SCHEMA_VERSION = "benchmark_comparison_v0"
RUN_SCHEMA_VERSION = "benchmark_run_v0"
# review-claim has no flags besides its inputs and --format.
DEFAULT_OPTIONS: dict[str, Any] = {}

# Run picking (§3.1): a substring of the normalized mode / job name (baselines: run_classifiers).
TREATMENT_MODE_MARKER = "codex-loopx"

# Baseline attributions that make a score recovery doubtful (§3.4).
VERIFIER_CAVEAT_ATTRIBUTIONS = frozenset(
    {
        "verifier_platform_probe_failure",
        "verifier_infrastructure_failure",
        "verifier_dependency_install_failure",
    }
)
VERIFIER_LABEL_PREFIX = "verifier_"

# Blockers (§3.6).
MISSING_DELTA = "missing_official_task_score_delta"
NO_POSITIVE_DELTA = "no_positive_official_task_score_delta"
MISSING_WORKER_EVIDENCE = "missing_treatment_worker_loopx_evidence"
ATTRIBUTION_CAVEAT = "baseline_failure_attribution_caveat"
BOUNDARY_MISMATCH = "worker_submit_eligible_boundary_mismatch"

# Claim strengths (§3.7).
STRONG = "strong_loopx_assisted_score_recovery"
CANDIDATE_NEEDS_REVIEW = "candidate_score_recovery_needs_attribution_review"
DELTA_WITHOUT_EVIDENCE = "score_delta_without_assisted_worker_evidence"
LOOP_WITHOUT_UPLIFT = "loop_validation_no_score_uplift"
NO_ENHANCEMENT = "no_validation_enhancement"

# Next actions (§3.7): the first blocker present in this table wins.
BLOCKER_NEXT_ACTIONS = (
    (
        ATTRIBUTION_CAVEAT,
        "run a same-protocol reliability repeat or add finer compact verifier-side "
        "attribution before making a clean score-recovery claim",
    ),
    (MISSING_WORKER_EVIDENCE, "collect compact worker-visible LoopX evidence before claiming assisted recovery"),
    (BOUNDARY_MISMATCH, "normalize the compact worker submit boundary before public claim review"),
)
CLEAN_NEXT_ACTION = (
    "record as clean compact score-recovery evidence while preserving no-leaderboard claim boundary"
)
DEFAULT_NEXT_ACTION = "treat as loop/attribution evidence and seek a stronger paired sample"

# Claim boundary flags echoed only when the input explicitly allows them (§3.8).
ALLOW_ONLY_IF_TRUE = (
    "leaderboard_claim_allowed",
    "official_score_uplift_claim_allowed",
    "assisted_collaboration_claim_allowed",
)


def _is_treatment(run: Mapping[str, Any]) -> bool:
    return (
        TREATMENT_MODE_MARKER in normalized_mode(run, "mode")
        or TREATMENT_MODE_MARKER in normalized_mode(run, "job_name")
        or treatment_worker_evidence(run)["present"]
    )


def pick_runs(runs: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """The (baseline, treatment) runs, either possibly ``None`` or the same run (§3.1)."""
    baseline = next(filter(is_baseline_run, runs), None)
    treatment = next(filter(_is_treatment, runs), None)
    if baseline is None and runs:
        baseline = runs[0]
    if treatment is None and len(runs) >= 2:
        treatment = runs[1]
    return baseline, treatment


def _run_score(run: Mapping[str, Any]) -> float | None:
    score = run.get("official_task_score")
    return claim_number(score.get("value")) if isinstance(score, Mapping) else None


def official_delta(
    comparison: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    treatment: Mapping[str, Any] | None,
) -> float | None:
    """The comparison's own delta, else treatment minus baseline score (§3.2)."""
    delta = claim_number(comparison.get("official_task_score_delta"))
    if delta is not None or baseline is None or treatment is None:
        return delta
    baseline_score, treatment_score = _run_score(baseline), _run_score(treatment)
    if baseline_score is None or treatment_score is None:
        return None
    return treatment_score - baseline_score


def has_attribution_caveat(attribution: str, labels: Sequence[str]) -> bool:
    """Is the baseline's failure possibly the verifier's rather than the model's (§3.4)?"""
    if attribution in VERIFIER_CAVEAT_ATTRIBUTIONS:
        return True
    for label in labels:
        if label.startswith(VERIFIER_LABEL_PREFIX):
            return True
    return False


def boundary_mismatch_count(runs: Sequence[Mapping[str, Any]]) -> int:
    """Signed sum of every run's integer ``worker_submit_eligible_mismatch_count`` (§3.5)."""
    total = 0
    for run in runs:
        mismatches = run.get("worker_submit_eligible_mismatch_count")
        if is_int(mismatches):
            total += mismatches
    return total


def blockers(delta: float | None, evidence_present: bool, caveat: bool, mismatches: int) -> list[str]:
    """The ordered claim blockers (§3.6). A NaN delta is neither positive nor non-positive."""
    positive = delta is not None and delta > 0
    found = []
    if delta is None:
        found.append(MISSING_DELTA)
    elif delta <= 0:
        found.append(NO_POSITIVE_DELTA)
    if positive and not evidence_present:
        found.append(MISSING_WORKER_EVIDENCE)
    if positive and caveat:
        found.append(ATTRIBUTION_CAVEAT)
    if mismatches != 0:
        found.append(BOUNDARY_MISMATCH)
    return found


def claim_strength(positive: bool, assisted: bool, clean: bool) -> str:
    if clean:
        return STRONG
    if positive and assisted:
        return CANDIDATE_NEEDS_REVIEW
    if positive:
        return DELTA_WITHOUT_EVIDENCE
    if assisted:
        return LOOP_WITHOUT_UPLIFT
    return NO_ENHANCEMENT


def next_action(found_blockers: Sequence[str], clean: bool) -> str:
    for blocker, action in BLOCKER_NEXT_ACTIONS:
        if blocker in found_blockers:
            return action
    return CLEAN_NEXT_ACTION if clean else DEFAULT_NEXT_ACTION


def decision(delta: float | None, evidence_present: bool, caveat: bool, mismatches: int) -> dict[str, Any]:
    """The claim verdict (§3.6–3.7), keys in payload order."""
    found = blockers(delta, evidence_present, caveat, mismatches)
    positive = delta is not None and delta > 0
    candidate = positive and evidence_present
    clean = candidate and not found
    return {
        "claim_strength": claim_strength(positive, evidence_present, clean),
        "validation_enhancement_candidate": candidate,
        "clean_validation_enhancement": clean,
        "blockers": found,
        "next_action": next_action(found, clean),
    }


def claim_boundary(comparison: Mapping[str, Any]) -> dict[str, bool]:
    """Echo of the comparison's claim boundary: allowances opt-in, trace exclusion opt-out (§3.8)."""
    boundary = comparison.get("claim_boundary")
    boundary = boundary if isinstance(boundary, Mapping) else {}
    echoed = {flag: boundary.get(flag) is True for flag in ALLOW_ONLY_IF_TRUE}
    echoed["raw_trace_excluded"] = boundary.get("raw_trace_excluded") is not False
    return echoed


def review_claim(comparison: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The full ``benchmark_claim_review_v0`` payload of one comparison and its runs."""
    baseline, treatment = pick_runs(runs)
    delta = official_delta(comparison, baseline, treatment)
    evidence = treatment_worker_evidence(treatment) if treatment is not None else {"present": False}
    if baseline is None:
        attribution, labels = NO_ATTRIBUTION, []
    else:
        failure = RunFailure.of(baseline)
        attribution, labels = failure.attribution(), failure.labels()
    mismatches = boundary_mismatch_count(runs)
    caveat = has_attribution_caveat(attribution, labels)
    return {
        "schema_version": SCHEMA_VERSION,
        "input_schema_versions": {
            "benchmark_comparison": COMPARISON_SCHEMA_VERSION,
            "benchmark_runs": [RUN_SCHEMA_VERSION for _ in runs],
        },
        "task_id": comparison.get("task_id"),
        "comparison_id": comparison.get("comparison_id"),
        "official_task_score_delta": delta,
        "control_plane_score_delta": comparison.get("control_plane_score_delta"),
        "treatment_worker_evidence": evidence,
        "baseline_score_failure_attribution": attribution,
        "baseline_failure_attribution_labels": labels,
        "boundary_mismatch_count": mismatches,
        "claim_boundary": claim_boundary(comparison),
        "decision": decision(delta, evidence["present"], caveat, mismatches),
        "read_boundary": compact_read_boundary(),
        "ok": True,
    }


def paired_inputs(inputs: Mapping[str, Sequence[Any]]) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
    """The comparison (the first one given) and the runs of a review's ``inputs``."""
    comparisons = inputs.get("comparison") or [{}]
    return comparisons[0], list(inputs.get("run", []))


def reduce(inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    return review_claim(*paired_inputs(inputs))


def error_payload(message: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return refused_input_payload(SCHEMA_VERSION, message)


def render_markdown(payload: Mapping[str, Any]) -> str:
    return document(
        "Benchmark Claim Review",
        [
            code("Schema", get(payload, "schema_version")),
            code("Task", get(payload, "task_id")),
            code("Comparison", get(payload, "comparison_id")),
            code("Official delta", get(payload, "official_task_score_delta")),
            code("Claim strength", get(payload, "decision", "claim_strength")),
            code("Validation candidate", get(payload, "decision", "validation_enhancement_candidate")),
            code("Clean validation", get(payload, "decision", "clean_validation_enhancement")),
            code("Blockers", get(payload, "decision", "blockers")),
            text("Next action", get(payload, "decision", "next_action")),
            # The reference labels the worker's LoopX CLI call total "GH calls".
            code("Treatment worker GH calls", get(payload, "treatment_worker_evidence", "worker_loopx_cli_call_total")),
            code("Baseline attribution", get(payload, "baseline_score_failure_attribution")),
            code("Compact only", get(payload, "read_boundary", "compact_only")),
            code("Raw artifacts read", get(payload, "read_boundary", "raw_artifacts_read")),
        ],
    )
