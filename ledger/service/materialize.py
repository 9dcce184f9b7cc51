"""Materialized projections: a goal's new events folded into its stored rows, resumed from its checkpoint (``service.goal_folds``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from benchledger.ledger.service import folding
from benchledger.ledger.service.folding import FoldedStep
from benchledger.ledger.service.goal_folds import GoalFolds, GoalRows, TransactionReads, fold_goals
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections import catalog


def materialize_goals(
    tx: Transaction,
    first_new: Mapping[str, int],
    new_events: Sequence[StoredEvent] | None = None,
    folds: GoalFolds | None = None,
) -> None:
    """Bring the projections of goals that just gained events up to date, inside the append's transaction.

    ``first_new`` maps each goal to its first new position; ``new_events``,
    when the caller holds them, are every event the transaction appended (so
    they are not read back). Each goal's fold resumes from its stored
    checkpoint and reads only the events after it (and, by id, the few
    earlier ones those read: those the checkpoints name are read for all the
    goals at once): only the rows the new
    events create or change are computed and written over the stored ones,
    with the new checkpoint. A goal whose checkpoint is missing, of other
    versions or unreadable is folded from its first event instead, and so is
    a goal whose new events hold a retraction: then all of its rows are
    rebuilt, the rows of retracted evidence (which no longer exist) removed,
    lifecycle steps written where missing and never removed (they are
    history), so an ingest leaves what a replay would. A reducer that raises
    aborts the transaction (nothing is written). ``folds`` folds the goals
    (:class:`GoalFolds`: continuing the writer's earlier folds, perhaps in
    worker processes); by default :func:`fold_goals` here, each goal resumed.
    """
    folded = folds.fold(tx, first_new, new_events) if folds is not None else fold_goals(TransactionReads(tx), first_new, new_events, None)
    write_goal_rows(tx, folded)


def write_goal_rows(tx: Transaction, folded: Iterable[GoalRows]) -> None:
    """Write the rows of goals folded in ``tx`` (:func:`fold_goals`) over the stored ones."""
    replaced = catalog.projection_versions().keys() - {catalog.STEP}  # (a stored row's key starts with its projection)
    rows = []
    for goal in folded:
        if not goal.whole:
            rows += goal.rows
            continue
        # One comparison with all the goal's stored rows; of those the fold no longer makes, lifecycle
        # steps stay (they are history) and rows of projections this code does not know are not its to remove.
        changed, unwanted = tx.projection_rows_diff([goal.goal_id], goal.rows)
        tx.write_projection_rows_diff([goal.goal_id], changed, [key for key in unwanted if key[0] in replaced])
    tx.upsert_projection_rows(rows)


def rebuild_projections(tx: Transaction, goals: Sequence[str]) -> Iterator[FoldedStep]:
    """Rebuild the stored projections of ``goals``, a step of goals at a time, in this process; yields each step.

    (For a transaction whose events no other process sees yet: import-ndjson.)
    """
    upto = tx.last_position()
    for start in range(0, len(goals), folding.GOALS_PER_STEP):
        step = folding.fold_step(tx, list(goals[start : start + folding.GOALS_PER_STEP]), upto, mode=folding.FoldMode.WRITE)
        tx.write_projection_rows_diff([goal.goal_id for goal in step.folded], step.changed, step.unwanted)
        yield step
