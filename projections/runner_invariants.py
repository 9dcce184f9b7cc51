"""``review-runner-invariants``: did a worker writeback keep the runner-owned boundary?

Some facts about a run belong to the runner, not to the worker that wrote the
compact result: whether the run may be submitted, whether it is leaderboard
evidence, and its read boundary. The review compares those fields of one
compact ``benchmark_run_v0`` with the expected values (the command's
``--expect-*`` flags, defaulting to the runner's usual no-submit, compact-only
boundary) and classifies the writeback as ok, incomplete or mismatched.

Only JSON booleans count as observed: compaction already drops anything else,
so a ``"false"`` string reads as *missing*, never as a mismatch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from benchledger.projections.boundaries import compact_read_boundary, refused_input_payload, require_gate
from benchledger.projections.markdown import code, document, get, text

NAME = "review-runner-invariants"
VERSION = 1
SCHEMA_VERSION = "benchmark_runner_invariant_review_v0"

# Classifications, and what to do about each.
BOUNDARY_OK = "runner_owned_boundary_ok"
BOUNDARY_INCOMPLETE = "runner_owned_boundary_incomplete"
BOUNDARY_MISMATCH = "runner_owned_boundary_mismatch"

REPAIR_OK = "accept compact boundary echo for review while keeping runner-owned fields authoritative"
REPAIR_INCOMPLETE = (
    "require compact runner-owned boundary fields before trusting the worker writeback for public claim review"
)
REPAIR_MISMATCH = (
    "treat worker writeback as boundary-mismatch evidence; preserve runner-owned launch/preflight facts "
    "and do not widen no-upload, no-submit, leaderboard, or raw-read claims"
)

MISMATCH_OWNER = "runner"
MISMATCH_REASON = "worker_writeback_conflicts_with_runner_owned_boundary"

MARKDOWN_TITLE = "Benchmark Runner Invariant Review"


@dataclass(frozen=True)
class RunnerOwnedField:
    """One runner-owned boolean: where it lives in the compact run and what the runner expects.

    ``path`` is the field's location in the run (``read_boundary`` fields are
    nested one level); the qualified name and the option key derive from it.
    """

    path: tuple[str, ...]
    default_expectation: bool
    qualified_name: str = dataclass_field(init=False)
    # The ``options`` key holding the expectation (the ``--expect-*`` flag's python name).
    option: str = dataclass_field(init=False)

    def __post_init__(self) -> None:
        # Derived once: the fields are module constants, read on every review.
        object.__setattr__(self, "qualified_name", ".".join(self.path))
        object.__setattr__(self, "option", f"expect_{self.path[-1]}")

    def observed(self, run: Mapping[str, Any]) -> bool | None:
        """The run's boolean value of the field, or ``None`` when it is missing or not a boolean."""
        value: Any = run
        for key in self.path:
            # Payloads are decoded JSON: a dict check is several times cheaper than the Mapping ABC's.
            if not isinstance(value, dict):
                return None
            value = value.get(key)
        return value if isinstance(value, bool) else None


# The checks, in the order the review reports them, with the runner's default expectations.
RUNNER_OWNED_FIELDS = (
    RunnerOwnedField(("submit_eligible",), False),
    RunnerOwnedField(("leaderboard_evidence",), False),
    RunnerOwnedField(("read_boundary", "compact_only"), True),
    RunnerOwnedField(("read_boundary", "raw_artifacts_read"), False),
    RunnerOwnedField(("read_boundary", "task_text_read"), False),
    RunnerOwnedField(("read_boundary", "local_paths_recorded"), False),
)

# The flags' defaults: the runner's usual no-submit, compact-only boundary, no label, no gate.
# A stored run is reviewed with exactly these.
DEFAULT_OPTIONS: dict[str, Any] = {
    "runner_label": None,
    **{field.option: field.default_expectation for field in RUNNER_OWNED_FIELDS},
    "require_clean": False,
}


# Slotted, not frozen: one is built on every review, and a frozen dataclass pays a setattr
# call per field.
@dataclass(slots=True)
class Comparison:
    """The outcome of checking every runner-owned field against its expectation."""

    observed: dict[str, bool]
    expected: dict[str, bool]
    mismatches: list[dict[str, Any]]
    missing_fields: list[str]


def expectations(options: Mapping[str, Any]) -> dict[str, bool]:
    """Qualified field name -> expected value (``options`` already merged over the defaults)."""
    return {field.qualified_name: bool(options[field.option]) for field in RUNNER_OWNED_FIELDS}


def compare(run: Mapping[str, Any], expected: Mapping[str, bool]) -> Comparison:
    observed: dict[str, bool] = {}
    mismatches: list[dict[str, Any]] = []
    missing_fields: list[str] = []
    for field in RUNNER_OWNED_FIELDS:
        name = field.qualified_name
        actual = field.observed(run)
        if actual is None:
            missing_fields.append(name)
            continue
        observed[name] = actual
        if actual != expected[name]:
            mismatches.append(
                {
                    "field": name,
                    "expected": expected[name],
                    "actual": actual,
                    "owner": MISMATCH_OWNER,
                    "reason": MISMATCH_REASON,
                }
            )
    return Comparison(observed, dict(expected), mismatches, missing_fields)


def classify(comparison: Comparison) -> tuple[str, str]:
    """``(classification, repair_recommendation)``: a mismatch outweighs missing fields (both are still counted)."""
    if comparison.mismatches:
        return BOUNDARY_MISMATCH, REPAIR_MISMATCH
    if comparison.missing_fields:
        return BOUNDARY_INCOMPLETE, REPAIR_INCOMPLETE
    return BOUNDARY_OK, REPAIR_OK


def is_clean(comparison: Comparison) -> bool:
    return not comparison.mismatches and not comparison.missing_fields


def runner_label(run: Mapping[str, Any], options: Mapping[str, Any]) -> Any:
    """The given label verbatim (not scrubbed); an absent or empty one falls back to the run's runner."""
    return options.get("runner_label") or run.get("source_runner") or None


def claim_boundary(expected: Mapping[str, bool]) -> dict[str, bool]:
    """The claim the review allows: runner-owned fields stay authoritative, at the expected values."""
    return {
        "runner_owned_fields_authoritative": True,
        "worker_may_override_runner_owned_fields": False,
        "submit_eligible": expected["submit_eligible"],
        "leaderboard_evidence": expected["leaderboard_evidence"],
        "raw_trace_excluded": True,
    }


def reduce(inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    """Review the one compact run in ``inputs["run"]`` against the expectations in ``options``."""
    (run,) = inputs["run"]
    options = {**DEFAULT_OPTIONS, **options}
    comparison = compare(run, expectations(options))
    classification, repair = classify(comparison)
    clean = is_clean(comparison)
    require_clean = bool(options["require_clean"])
    payload: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "benchmark_id": run.get("benchmark_id"),
        "job_name_present": bool(run.get("job_name")),
        "mode": run.get("mode"),
        "runner_label": runner_label(run, options),
        "classification": classification,
        "clean": clean,
        "mismatch_count": len(comparison.mismatches),
        "missing_field_count": len(comparison.missing_fields),
        "mismatches": comparison.mismatches,
        "missing_fields": comparison.missing_fields,
        "observed_runner_owned_fields": comparison.observed,
        "expected_runner_owned_fields": comparison.expected,
        "claim_boundary": claim_boundary(comparison.expected),
        "repair_recommendation": repair,
        "read_boundary": compact_read_boundary(),
        "ok": True,
    }
    return require_gate(payload, "require_clean", require_clean, clean, classification)


def error_payload(message: str, options: Mapping[str, Any]) -> dict[str, Any]:
    return refused_input_payload(SCHEMA_VERSION, message)


def render_markdown(payload: Mapping[str, Any]) -> str:
    return document(
        MARKDOWN_TITLE,
        [
            code("Schema", get(payload, "schema_version")),
            code("Benchmark", get(payload, "benchmark_id")),
            code("Mode", get(payload, "mode")),
            code("Runner label", get(payload, "runner_label")),
            code("Classification", get(payload, "classification")),
            code("Clean", get(payload, "clean")),
            code("Mismatches", get(payload, "mismatch_count")),
            code("Missing fields", get(payload, "missing_field_count")),
            text("Repair", get(payload, "repair_recommendation")),
            code("Compact only", get(payload, "read_boundary", "compact_only")),
            code("Raw artifacts read", get(payload, "read_boundary", "raw_artifacts_read")),
        ],
    )
