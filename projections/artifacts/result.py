"""``benchmark_result_v0`` compaction (common-inputs-part1.md §5.4/§5.5, baseline-failure-gate.md §2).

Only baseline-failure-gate reads results; it tries a result first and falls
back to a run, so compactability (not just the kept fields) decides which
path an input takes.

Counts: the reference knows five counters (found by probing it). They are
read from the ``counts`` object, overridden key by key by the same keys at
the top level of the result (a top-level ``null`` or ``"n/a"`` hides a valid
nested value), then kept only when numeric (N-NUMMAP).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchledger.projections.artifacts import NotCompactable
from benchledger.projections.artifacts.safe import (
    FieldTable,
    bool_or_none,
    compact_source,
    envelope_source,
    fields,
    list_rule,
    number,
    numeric_map,
    section_rule,
    text_rule,
)

SCHEMA_VERSION = "benchmark_result_v0"
ENVELOPE_KEY = "benchmark_result"
COUNT_KEYS = ("step_count", "wall_time_ms", "cost_usd", "writeback_count", "spend_count")

# Official and control-plane scores share one shape: a label, a number, a verdict.
SCORE_FIELDS: FieldTable = (
    ("kind", text_rule(80)),
    ("value", number),
    ("passed", bool_or_none),
)


def _merged_counts(source: Mapping[str, Any]) -> dict[str, int | float]:
    nested = source.get("counts")
    merged = {**(nested if isinstance(nested, Mapping) else {}), **{k: source[k] for k in COUNT_KEYS if k in source}}
    return numeric_map(merged, COUNT_KEYS)


RESULT_FIELDS: FieldTable = (
    *fields(
        text_rule(120),
        "task_id",
        "scenario_id",
        "worker_mode",
        "harness_identity",
        "worker_surface",
        "terminal_state",
        "trace_publicness",
    ),
    *fields(section_rule(SCORE_FIELDS), "official_task_score", "control_plane_score"),
    # compact_result puts the merged counters here before the table runs.
    ("counts", lambda merged_counts: merged_counts or None),
    *fields(
        bool_or_none,
        "open_todo_preserved",
        "archive_hygiene_passed",
        "queue_contract_passed",
        "state_reconstructable",
        "stop_policy_correct",
    ),
    ("failure_attribution_labels", list_rule(5)),
)


def compact_result(value: Any) -> dict[str, Any]:
    """The compact result of ``value`` (bare or under ``benchmark_result``).

    Raises :class:`NotCompactable` when no result of that schema is found or
    nothing but its schema survives.
    """
    source = envelope_source(value, ENVELOPE_KEY, SCHEMA_VERSION)
    if source is None:
        raise NotCompactable(f"no {SCHEMA_VERSION} object")
    return compact_source({**source, "counts": _merged_counts(source)}, SCHEMA_VERSION, RESULT_FIELDS)
