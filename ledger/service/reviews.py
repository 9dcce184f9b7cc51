"""The review commands over the ledger: evaluate a review, keep its batch in a goal, ``baseline-failure-gate --execute``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchledger.errors import CheckFailed, InvalidInput
from benchledger.ledger.service.ingest import ingest
from benchledger.ledger.service.ingest_outcome import BatchOutcome
from benchledger.ledger.storage.engine import shown_url
from benchledger.ledger.storage.store import (
    Store,
)
from benchledger.projections import REVIEW_MODULES, review_module
from benchledger.projections.artifacts import Artifact
from benchledger.projections.batch_manifest import batch_inputs
from benchledger.projections.projector import (
    ProjectionFault,
)

REVIEW_GOAL = "review"
# A retraction is checked against the goal as read, then appended only if the goal has not moved



def recorded_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The flags a review's batch records: those its reducer declares, never input file paths."""
    return {key: options[key] for key in review_module(name).DEFAULT_OPTIONS if key in options}


def evaluate_review(
    name: str,
    artifacts: Sequence[Artifact],
    options: Mapping[str, Any],
    *,
    ledger: Store | None = None,
    goal_id: str | None = None,
    new_goal: bool = False,
) -> tuple[dict[str, Any], BatchOutcome]:
    """Ingest a review command's inputs as one batch and reduce them from the stored events.

    Without ``ledger`` the batch goes into a fresh in-memory ledger that only
    this review reads (no other projection is materialized there): the
    stateless LoopX-style call and the stored path reduce the same stored
    events. A reducer failure becomes the review's error payload, as in LoopX.
    """
    if name not in REVIEW_MODULES:  # (a library caller's name: the command line offers only these)
        raise InvalidInput(f"no review named {name!r}; the reviews are: {', '.join(sorted(REVIEW_MODULES))}")
    persistent = ledger is not None
    ledger = ledger or Store.in_memory()
    module = review_module(name)
    outcome = ingest(
        ledger,
        goal_id or REVIEW_GOAL,
        artifacts,
        source=f"benchmark {name}",
        review={"command": name, "options": recorded_options(name, options)},
        materialize=persistent,
        new_goal=new_goal,
    )
    stored = ledger.events_by_id([outcome.batch.event_id, *(m.event_id for m in outcome.members)])
    inputs = batch_inputs(stored[outcome.batch.event_id].payload, stored)
    try:
        payload = module.reduce(inputs, options)
    except Exception as exc:  # LoopX reports any reducer failure as the error payload
        payload = module.error_payload(str(exc), options)
    return payload, outcome


def evaluate_and_keep(
    ledger: Store, goal_id: str, name: str, artifacts: Sequence[Artifact], options: Mapping[str, Any], *, new_goal: bool = False
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """:func:`evaluate_review` into ``goal_id`` of ``ledger``: the inputs are kept, with the review's flags.

    What is kept must be storable (the store's guard, ``ledger.storage.guard``:
    no input or recorded flag may hold a local path, a secret, NaN, ...), and the
    projections the batch changes must reduce; otherwise nothing is written.
    Returns the payload and, as ``IngestOutcome.archived_goals``, the goal when it is archived and the batch appended.
    """
    try:
        payload, outcome = evaluate_review(name, artifacts, options, ledger=ledger, goal_id=goal_id, new_goal=new_goal)
    except ProjectionFault as exc:
        raise CheckFailed(f"nothing was stored: {exc}") from exc
    return payload, _archived_goals(ledger, outcome)


def _archived_goals(ledger: Store, outcome: BatchOutcome) -> tuple[str, ...]:
    """``IngestOutcome.archived_goals`` of a kept review's batch: its goal, when it is archived and the batch appended."""
    if outcome.batch.status != "appended":
        return ()
    with ledger.transaction() as tx:
        return tuple(sorted(tx.archived_goals([outcome.goal_id])))



# benchledger keeps one ledger (shared through its database), so there is no
# cross-project registry to synchronize after an append.
NO_GLOBAL_REGISTRY = {"ok": True, "dry_run": False, "skipped": True, "reason": "benchledger has no global registry to sync"}


def execute_baseline_failure_gate(
    artifacts: Sequence[Artifact], options: Mapping[str, Any], *, database_url: str | None = None, new_goal: bool = False
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``baseline-failure-gate --execute``: review as a dry run; if the gate passes, keep it in its goal.

    The goal id is checked after the review, as LoopX does (a bad one is the
    review's error payload). The baseline is kept as a batch of the goal with
    the gate's flags: that batch is benchledger's history event, and the
    goal's ``baseline-failure-gate`` projection is rebuilt from it on replay.
    LoopX's file locations in the receipt become the ledger's own locators.
    """
    from datetime import datetime

    from benchledger.errors import InvalidGoalId
    from benchledger.ledger.storage.event_records import validate_goal_id
    from benchledger.ledger.storage.store import open_store
    from benchledger.projections import baseline_failure_gate as gate

    payload, _ = evaluate_review(gate.NAME, artifacts, options)
    if payload.get("ok") is not True:
        return payload, ()
    try:
        goal_id = validate_goal_id(gate.validated_goal_id(options["goal_id"]))
    except InvalidGoalId as exc:
        return gate.error_payload(str(exc), options), ()
    ledger = open_store(database_url)
    try:
        payload, outcome = evaluate_review(gate.NAME, artifacts, options, ledger=ledger, goal_id=goal_id, new_goal=new_goal)
        registry = shown_url(ledger.engine.url)
        batch = ledger.events_by_id([outcome.batch.event_id])[outcome.batch.event_id]
        archived_goals = _archived_goals(ledger, outcome)
    finally:
        ledger.close()
    if payload.get("ok") is not True:
        return payload, archived_goals
    recorded = datetime.fromisoformat(batch.recorded_at.replace("Z", "+00:00")).astimezone()
    receipt = {
        "generated_at": recorded.isoformat(timespec="seconds"),
        "registry": registry,
        "runtime_root": f"goal:{goal_id}",
        "json_path": f"event:{batch.event_id}",
        "markdown_path": None,
        "index_path": f"position:{batch.position}",
        "global_sync": gate.GLOBAL_SYNC_DISABLED if options["no_global_sync"] else NO_GLOBAL_REGISTRY,
    }
    return gate.executed_payload(payload, gate.history_event(payload, goal_id, options), receipt), archived_goals
