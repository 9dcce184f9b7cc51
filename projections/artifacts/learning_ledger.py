"""``benchmark_learning_ledger_v0`` compaction (common-inputs.md §5, common-inputs-part1.md §5.3/§5.5).

Gates and routing permissions survive only as JSON booleans, so a ledger that
writes ``"budget_count_allowed": "true"`` reads as not allowed. Any output of
the learning-ledger review is a valid input (its ``ok``/``error`` keys drop out).
"""

from __future__ import annotations

from typing import Any

from benchledger.projections.artifacts.safe import (
    FieldTable,
    bool_or_none,
    bool_or_text_rule,
    compact_artifact,
    delta_value,
    fields,
    list_rule,
    section_rule,
    text_rule,
)

SCHEMA_VERSION = "benchmark_learning_ledger_v0"
ENVELOPE_KEY = "benchmark_learning_ledger"

LIFECYCLE_GATE_FIELDS: FieldTable = (
    ("budget_count_allowed", bool_or_none),
    ("blocked_reason", bool_or_text_rule(160)),
)

LEARNING_QUOTA_GATE_FIELDS: FieldTable = (
    *fields(bool_or_none, "actionable_learning_present", "spend_allowed"),
    ("blocked_reason", bool_or_text_rule(160)),
    ("actionable_reasons", list_rule(5)),
)

OVERHEAD_FIELDS: FieldTable = (
    *fields(delta_value, "cost_delta_usd", "wall_time_delta_seconds_or_ms"),
    ("label", text_rule(120)),
)

ROUTING_FIELDS: FieldTable = (
    *fields(bool_or_none, "repeat_allowed", "new_candidate_allowed"),
    ("next_allowed_action", text_rule(180)),
)

READ_BOUNDARY_FIELDS: FieldTable = fields(
    bool_or_none, "compact_only", "raw_artifacts_read", "task_text_read", "local_paths_recorded"
)

LEDGER_FIELDS: FieldTable = (
    *fields(text_rule(180), "task_id", "comparison_id", "learning_status", "claim_strength"),
    *fields(delta_value, "official_task_score_delta", "control_plane_score_delta"),
    *fields(list_rule(5), "repair_candidates", "claim_blockers"),
    ("lifecycle_gate", section_rule(LIFECYCLE_GATE_FIELDS)),
    ("learning_quota_gate", section_rule(LEARNING_QUOTA_GATE_FIELDS)),
    ("overhead", section_rule(OVERHEAD_FIELDS)),
    ("routing", section_rule(ROUTING_FIELDS)),
    ("read_boundary", section_rule(READ_BOUNDARY_FIELDS)),
)


def compact_learning_ledger(value: Any) -> dict[str, Any]:
    """The compact ledger row of ``value`` (bare or under ``benchmark_learning_ledger``).

    Raises :class:`NotCompactable` when no row of that schema is found or
    nothing but its schema survives.
    """
    return compact_artifact(value, ENVELOPE_KEY, SCHEMA_VERSION, LEDGER_FIELDS)
