"""``benchmark_comparison_v0`` compaction (common-inputs.md §4, common-inputs-part1.md §5.2/§5.5).

The compact comparison keeps identifiers, deltas, readiness booleans, a few
label lists, the claim boundary, the baseline failure gate block, the decision
and up to five result references; everything else (``wall_time_delta_seconds``
included) is dropped. The baseline-failure-gate review also runs its own
output row through this compactor, so the field order here is its output order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from benchledger.projections.artifacts import IntakeError
from benchledger.projections.artifacts.safe import (
    FieldTable,
    bool_or_none,
    compact_artifact,
    compact_fields,
    delta_value,
    fields,
    integer,
    list_rule,
    section_rule,
    text_rule,
)

SCHEMA_VERSION = "benchmark_comparison_v0"
ENVELOPE_KEY = "benchmark_comparison"
GATE_SCHEMA_VERSION = "benchmark_baseline_failure_gate_v0"
MAX_RESULT_REFS = 5

GATE_FIELDS: FieldTable = (
    *fields(
        text_rule(180),
        "baseline_mode",
        "baseline_scenario_id",
        "baseline_terminal_state",
        "failure_phase",
        "failure_class",
        "negative_selection_reason",
        "minimum_next_evidence",
        "next_action",
    ),
    *fields(
        bool_or_none,
        "baseline_failed",
        "control_plane_addressable",
        "treatment_eligible",
        "same_task_semantics",
        "same_runner_protocol",
        "trace_publicness_verified",
    ),
    ("baseline_attempt_count", integer),
    *fields(list_rule(5), "failure_attribution_labels", "evidence_refs"),
)

CLAIM_BOUNDARY_FIELDS: FieldTable = fields(
    bool_or_none,
    "leaderboard_claim_allowed",
    "official_score_uplift_claim_allowed",
    "assisted_collaboration_claim_allowed",
    "raw_trace_excluded",
    "credential_values_recorded",
)

DECISION_FIELDS: FieldTable = (
    *fields(bool_or_none, "score_uplift", "validation_enhancement_point"),
    ("why", text_rule(240)),
)

RESULT_REF_FIELDS: FieldTable = fields(text_rule(140), "scenario_id", "task_id", "result_id")


def _baseline_failure_gate(value: Any) -> dict[str, Any] | None:
    """The gate block under its fixed schema; dropped when only the schema would remain."""
    if not isinstance(value, Mapping):
        return None
    gate = compact_fields(value, GATE_FIELDS)
    return {"schema_version": GATE_SCHEMA_VERSION, **gate} if gate else None


def _iterate(value: Any) -> Iterator[Any]:
    """Iterate ``value`` as the reference does: a number or ``true`` fails with Python's own text."""
    try:
        return iter(value)
    except TypeError as exc:
        raise IntakeError(str(exc)) from exc


def _result_refs(value: Any) -> list[dict[str, Any]] | None:
    """Up to five non-empty compact references from the object items of ``value``.

    Strings and objects are iterable (characters, keys), so they yield nothing
    rather than failing.
    """
    if not value:
        return None
    refs: list[dict[str, Any]] = []
    for item in _iterate(value):
        if len(refs) >= MAX_RESULT_REFS:
            break
        ref = compact_fields(item, RESULT_REF_FIELDS) if isinstance(item, Mapping) else None
        if ref:
            refs.append(ref)
    return refs or None


COMPARISON_FIELDS: FieldTable = (
    *fields(
        text_rule(180),
        "task_id",
        "comparison_id",
        "decision_id",
        "benchmark_id",
        "baseline_scenario_id",
        "treatment_scenario_id",
        "next_action",
    ),
    ("mode_pair", list_rule(5)),
    *fields(
        delta_value,
        "scenario_count",
        "official_task_score_delta",
        "control_plane_score_delta",
        "cost_delta_usd",
        "with_loopx_overhead_ms",
        "with_loopx_extra_writebacks",
        "with_loopx_extra_spends",
        "checklist_pass_count",
    ),
    *fields(
        bool_or_none,
        "both_success",
        "ready_to_attempt_no_submit_setup_probe",
        "ready_to_run_real_benchmark",
        "ready_to_submit_leaderboard",
        "requires_explicit_authorization_for_real_execution",
    ),
    *fields(
        list_rule(5),
        "metrics_compared",
        "interrupt_fixture_markers",
        "stop_conditions",
        "failure_attribution_labels",
    ),
    ("claim_boundary", section_rule(CLAIM_BOUNDARY_FIELDS)),
    ("baseline_failure_gate", _baseline_failure_gate),
    ("decision", section_rule(DECISION_FIELDS)),
    ("result_refs", _result_refs),
)


def compact_comparison(value: Any) -> dict[str, Any]:
    """The compact ``benchmark_comparison_v0`` of ``value`` (bare or under ``benchmark_comparison``).

    Raises :class:`NotCompactable` when no comparison of that schema is found or
    nothing but its schema survives, and :class:`IntakeError` with Python's text
    when ``result_refs`` is a non-iterable truthy value.
    """
    return compact_artifact(value, ENVELOPE_KEY, SCHEMA_VERSION, COMPARISON_FIELDS)
