"""Compaction of ``benchmark_run_v0`` artifacts, as LoopX 0.4.8 does it.

Every review that reads a run reads the compact form produced here, so these
rules decide what a review can ever see: fields are copied only when they have
the expected JSON type, text passes the public-safe filter (local paths and
secret-looking values vanish), lists and trials are capped, and a few
benchmark-specific rewrites correct the attribution fields before any review
runs. Spec: common-inputs.md §3 and common-inputs-part1.md §5.1.

Layout: the value rules live in ``run_rules``; the field tables, source
selection and section compactors (trials, counters, bridge outcome,
validation, ...) in ``run_tables``; the derived rewrites A-F, each guarded by
a named predicate, in ``run_rewrites``; this module holds :func:`compact_run`,
which applies them in the reference's order. Sub-objects that only feed the rewrites (task staging,
preflight, prerequisites, compose diagnostic, lifecycle contract, runner
failure) are kept with just the fields the rewrites read.

Deliberately not reproduced, because no rule or review reads them: the
derived ``solution_quality_signals`` block (it only makes every matching
source compactable, which :func:`run_source` already decides), the other
informational sub-objects (agent, episode policy, debug gates, ...), and
rewrite D's edits of ``attempt_accounting`` failure labels.
"""

from __future__ import annotations

from typing import Any

from benchledger.projections.artifacts import NotCompactable
from benchledger.projections.artifacts.run_rewrites import (
    is_pre_agent_blocked,
    rewrite_egress_preflight_block,
    rewrite_pre_agent_setup_block,
    rewrite_product_mode_lifecycle,
    rewrite_runner_failure_blockers,
    rewrite_runner_source_mismatch,
    rewrite_verifier_bootstrap,
)
from benchledger.projections.artifacts.run_rules import compact_fields, subset
from benchledger.projections.artifacts.run_tables import (
    ATTRIBUTION_FIELDS,
    IDENTITY_FIELDS,
    OBSERVATION_FIELDS,
    READ_BOUNDARY_FIELDS,
    REWRITE_INPUT_FIELDS,
    RUN_SCHEMA,
    SCORE_AND_COUNTER_FIELDS,
    check_case_event_timeline,
    compact_case_ids,
    compact_trials,
    compact_validation,
    run_source,
)

# ---------------------------------------------------------------------------
# The whole compaction.
# ---------------------------------------------------------------------------


def compact_run(value: Any) -> dict[str, Any]:
    """The reference's compact ``benchmark_run_v0`` of ``value``.

    Raises :class:`NotCompactable` when ``value`` holds no ``benchmark_run_v0``
    source, and :class:`IntakeError` with the reference's Python error text
    when compaction itself fails (§3.8.1).
    """
    source = run_source(value)
    if source is None:
        raise NotCompactable(f"no {RUN_SCHEMA} object")
    check_case_event_timeline(source)

    run: dict[str, Any] = {"schema_version": RUN_SCHEMA}
    run.update(compact_fields(source, IDENTITY_FIELDS))
    run.update(compact_case_ids(source))
    run.update(compact_fields(source, ATTRIBUTION_FIELDS))
    run.update(compact_fields(source, SCORE_AND_COUNTER_FIELDS))
    run.update(compact_fields(source, REWRITE_INPUT_FIELDS))
    rewrite_pre_agent_setup_block(run)
    run.update(compact_fields(source, OBSERVATION_FIELDS))
    rewrite_product_mode_lifecycle(run)
    validation = compact_validation(source.get("validation"), is_pre_agent_blocked(run))
    if validation is not None:
        # The second pass of D belongs to validation compaction: without a
        # validation object it does not happen (even if F reset the attribution).
        run["validation"] = validation
        rewrite_pre_agent_setup_block(run)
    rewrite_runner_source_mismatch(run)
    rewrite_egress_preflight_block(run, source.get("runner_config"))
    rewrite_verifier_bootstrap(run)
    rewrite_runner_failure_blockers(run)
    run.update(compact_trials(source.get("trials")))
    read_boundary = subset(READ_BOUNDARY_FIELDS)(source.get("read_boundary"))
    if read_boundary is not None:
        run["read_boundary"] = read_boundary
    return run
