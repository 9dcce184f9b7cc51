"""The read side of ``benchledger runs`` and ``compare``: run events from the store, shaped by ``projections.runs``.

Runs are computed at query time rather than materialized: the view spans
goals, and reading the run events of a ledger is one ordered scan. Pass rates
over every run are counted while the events stream past, newest first
(``projections.runs.NewestFirst``), so their memory follows the benchmarks and
arms shown, not the ledger; listings and pairs build the whole runs model of
their scope.

Filters are checked against what the ledger holds: a ``--status`` that is no
known status, or a benchmark, case, arm or mode that no run in the goal(s)
has, is an :class:`UnknownFilterValue` naming the values there are, not an
empty listing that looks like an answer.
"""

from __future__ import annotations

import functools
import gc
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

from benchledger.errors import InvalidInput
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections import retraction, runs
from benchledger.projections.batch_manifest import BATCH_KIND

# What the runs model reads: runs, the comparisons that pair them, the batches that group them, retractions.
MODEL_KINDS = (*runs.RUN_KINDS, runs.COMPARISON_KIND, BATCH_KIND, retraction.KIND)
# filter -> the run field it matches
FILTER_FIELDS = {"benchmark": "benchmark_id", "case": "case_id", "arm": "arm"}
# How many valid values an error lists before it says how many more there are.
CHOICES_SHOWN = 12
# Goals named (two or more) that hold more than this share of the ledger's events are read in one scan of it (_model_events).
ONE_SCAN_SHARE = 0.5


class UnknownFilterValue(InvalidInput, ValueError):
    """A ``runs`` filter whose value no run can have: the valid choices are in the message."""


Params = ParamSpec("Params")
Built = TypeVar("Built")


def collector_paused(build: Callable[Params, Built]) -> Callable[Params, Built]:
    """``build`` with Python's cyclic garbage collector paused while it runs (restored after, as it was).

    (A fold step pauses it too: :func:`benchledger.ledger.service.folding.fold_step`.)

    Building the runs model keeps about ten containers per event (events,
    decoded payloads, views, pairs) and frees none, so the collector's passes
    over them, triggered by the allocations alone, find nothing: they made up
    a quarter of ``compare``'s CPU time on 10^4 runs (benchmarks/compare.py).
    The model holds no reference cycle; whatever cycle the database driver
    leaves is collected once the collector runs again.
    """
    @functools.wraps(build)
    def paused(*args: Params.args, **kwargs: Params.kwargs) -> Built:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return build(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused


@one_snapshot
def _model_events(ledger: Store, goal_ids: Sequence[str], up_to_position: int | None = None) -> list[StoredEvent]:
    held = 0  # (the events the goals named hold)
    for goal_id in goal_ids:
        if not isinstance(goal_id, str):
            raise InvalidInput(f"a goal is named by its id (a str), not by a {type(goal_id).__name__}: {goal_id!r}")
        held += ledger.require_goal(goal_id)["last_version"]
    if not goal_ids:
        return list(ledger.read_all(kinds=MODEL_KINDS, up_to_position=up_to_position))
    named = {goal_id: i for i, goal_id in enumerate(dict.fromkeys(goal_ids))}
    if len(named) > 1 and held > ONE_SCAN_SHARE * last_position(ledger):
        # Goals holding most of the ledger (the report's index of every goal but the archived ones): one scan of it, the
        # other goals' events dropped, in the order the reads goal by goal give (a stable sort keeps each goal's events
        # in position order). Goal by goal, 2,250 of a 10^5-event ledger's 2,251 goals took 8.3-9.3 s to build the
        # report's runs model where this takes 3.9-4.1 s, what the whole ledger's takes (SQLite, two runs each).
        found = [e for e in ledger.read_all(kinds=MODEL_KINDS, up_to_position=up_to_position) if e.goal_id in named]
        return sorted(found, key=lambda e: named[e.goal_id])
    # A goal's events of each kind are read on their own, then merged in position order: read together, every page
    # cost the database a sort of all the goal's events after it (the (goal_id, kind) index holds each kind in
    # position order, the kinds together in none): 0.8 s of SQLite's CPU time for the 47,005 events of a 10^4-attempt
    # goal, against 0.2 s kind by kind (benchmarks/runs_model.py).
    return [
        e for goal_id in named
        # (one kind's read ends before the next begins; sorted() finds the kinds' runs of positions already in order)
        for e in sorted(
            (e for kind in MODEL_KINDS for e in ledger.read_all(goal_id=goal_id, kinds=(kind,), up_to_position=up_to_position)),
            key=operator.attrgetter("position"),
        )
    ]


def last_position(ledger: Store) -> int:
    """The ledger's last event position (0 when empty): what a reader compares to see whether anything new arrived, and
    about how many events the ledger holds."""
    with ledger.reading() as connection:
        return Transaction(connection).last_position()


def runs_model(ledger: Store, *, goal_ids: Sequence[str] = (), up_to_position: int | None = None) -> runs.RunsModel:
    """The runs model (``projections.runs.runs_model``) of the goals named (none: the whole ledger), up to a position."""
    return runs_model_and_events(ledger, goal_ids=goal_ids, up_to_position=up_to_position)[0]


@collector_paused
def runs_model_and_events(
    ledger: Store, *, goal_ids: Sequence[str] = (), up_to_position: int | None = None,
) -> tuple[runs.RunsModel, list[StoredEvent]]:
    """:func:`runs_model` and the events it was built from, for a reader that needs more of their payloads (the report's failure labels)."""
    events = _model_events(ledger, goal_ids, up_to_position)
    return runs.runs_model(events), events


@collector_paused
def list_runs(ledger: Store, *, goal_id: str | None = None) -> list[dict[str, Any]]:
    """Every run (imported LoopX rows and ingested compact runs), latest version of each, in listing order."""
    return runs.run_views(_model_events(ledger, [goal_id] if goal_id else []))


def choices_text(values: Iterable[Any]) -> str:
    """The values a refused option could have taken, sorted, the first :data:`CHOICES_SHOWN` then how many more."""
    shown = sorted({str(v) for v in values if v is not None})
    if not shown:
        return "(no runs)"
    more = len(shown) - CHOICES_SHOWN
    return ", ".join(shown[:CHOICES_SHOWN]) + (f" … ({more} more)" if more > 0 else "")


class FilterChoices:
    """The values the runs read so far could match, for the filters given; :meth:`refuse_unknown` once all are read."""

    def __init__(self, filters: Mapping[str, str | None]) -> None:
        self._filters = {name: value for name, value in filters.items() if value is not None}
        self._known: dict[str, set[Any]] = {name: set() for name in self._filters}
        if "status" in self._known:
            self._known["status"].update((*runs.RUN_STATUSES, *runs.SCORE_STATUSES))

    def add(self, view: Mapping[str, Any]) -> None:
        for name, known in self._known.items():
            if name == "status":
                known.update((view["status"], view["score_status"]))
            elif name == "case" and view["case_id"] and view["benchmark_id"]:
                known.add(view["case_id"])
                known.add(f"{view['benchmark_id']}/{view['case_id']}")
            elif name == "mode":
                known.add(runs.arm_of(view["mode"]))
            else:
                known.add(view[FILTER_FIELDS[name]])

    def refuse_unknown(self) -> None:
        """Refuse a filter value that cannot match (rule: module docstring)."""
        for name, value in self._filters.items():
            known = self._known[name]
            matched = runs.arm_of(value) in known if name in ("arm", "mode") else value in known
            if not matched:
                what = "a run or score status" if name == "status" else f"the {name} of any run here"
                raise UnknownFilterValue(f"--{name} {value!r} is not {what}; choose from: {choices_text(known)}")


def check_filters(views: Iterable[Mapping[str, Any]], **filters: str | None) -> None:
    choices = FilterChoices(filters)
    for view in views:
        choices.add(view)
    choices.refuse_unknown()


def select_runs(
    ledger: Store,
    *,
    goal_id: str | None = None,
    benchmark: str | None = None,
    case: str | None = None,
    arm: str | None = None,
    mode: str | None = None,
    status: str | None = None,
    current: bool = False,
) -> list[dict[str, Any]]:
    """``benchledger runs``: the runs (or, with ``current``, each arm's current countable run) that match.

    ``goal_id``, ``benchmark`` and ``case`` choose the cases; ``arm``, ``mode``
    and ``status`` then filter the runs, or with ``current`` the arms by their
    current run (the rule: docs/interop.md).
    """
    views = list_runs(ledger, goal_id=goal_id)
    check_filters(views, benchmark=benchmark, case=case, arm=arm, mode=mode, status=status)
    views = [v for v in views if runs.matches(v, benchmark=benchmark, case=case)]
    selected = {"arm": arm, "mode": mode, "status": status}
    if not current:
        return [v for v in views if runs.matches(v, **selected)]
    return [
        entry for entry in runs.current_runs(views)
        if not any(selected.values()) or (entry["current"] is not None and runs.matches(entry["current"], **selected))
    ]


def run_pass_rates(
    ledger: Store, *, goal_id: str | None = None, current: bool = False, include_archived: bool = False, **filters: str | None
) -> list[dict[str, Any]]:
    """``runs --summary``: pass rates per benchmark and arm (``projections.runs.PassRateCounts``).

    Over every run the filters match (archived, superseded and retracted ones
    counted in their own columns), or with ``current`` over each case's current
    countable run per arm, the runs left out counted as without it
    (``projections.runs.current_pass_rates``; an archived run is never current,
    so ``include_archived`` does not apply). Without ``current`` or ``case`` the
    runs are counted as they stream past; ``current`` and a case filter need the
    model, which gives a compact run its comparison's task.
    """
    if current:
        if include_archived:
            raise InvalidInput("--include-archived does not apply to --current: an archived run is never a current run")
        views = runs_model(ledger, goal_ids=[goal_id] if goal_id else []).runs
        check_filters(filter(runs.is_shown, views), **filters)
        chosen = [v for v in views if runs.matches(v, benchmark=filters.get("benchmark"), case=filters.get("case"))]
        return runs.current_pass_rates(chosen, arm=filters.get("arm"), mode=filters.get("mode"), status=filters.get("status"))
    if filters.get("case") is not None:
        views = runs_model(ledger, goal_ids=[goal_id] if goal_id else []).runs
        check_filters(views, **filters)
        return runs.pass_rates((v for v in views if runs.matches(v, **filters)), include_archived=include_archived)
    return _streamed_pass_rates(ledger, goal_id, include_archived, filters)


@one_snapshot
def _streamed_pass_rates(ledger: Store, goal_id: str | None, include_archived: bool, filters: Mapping[str, str | None]) -> list[dict[str, Any]]:
    if goal_id is not None:
        ledger.require_goal(goal_id)
    marker, counts, choices = runs.NewestFirst(), runs.PassRateCounts(include_archived=include_archived), FilterChoices(filters)
    for event in ledger.read_all(goal_id=goal_id, kinds=(*runs.RUN_KINDS, retraction.KIND), newest_first=True):
        view = marker.view(event)
        if view is not None:
            choices.add(view)
            if runs.matches(view, **filters):
                counts.add(view)
    choices.refuse_unknown()
    return counts.entries()


def counted_sentence(current: bool = False, include_archived: bool = False) -> str:
    """What a pass rate counts, said first wherever pass rates are printed."""
    runs_counted = "each arm's current countable run of each case" if current else "current, countable, unretracted runs"
    archived = " and archived ones that nothing else leaves out (--include-archived)" if include_archived and not current else ""
    replaced = "; a case's earlier countable runs of an arm are not counted at all: its current run replaces them" if current else ""
    return (
        f"Pass rates count {runs_counted}{archived} per benchmark and arm: passed / (passed + failed); "
        f"runs left out are counted by why (archived, superseded, retracted, not countable){replaced}."
    )


def goal_pass_rates(ledger: Store, goal_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Per goal, its pass rates per benchmark and arm (the report's): :func:`run_pass_rates` of each goal."""
    return {goal_id: run_pass_rates(ledger, goal_id=goal_id) for goal_id in goal_ids}


def select_pairs(ledger: Store, *, goal_id: str | None = None, **filters: str | None) -> list[dict[str, Any]]:
    """``runs --paired``: baseline and treatment side by side (rule: ``projections.runs.pairs``).

    The filters are :func:`select_runs`'s: ``goal_id``, ``benchmark`` and
    ``case`` choose the pairs; ``arm``, ``mode`` and ``status`` keep the pairs
    one of whose two runs matches.
    """
    model = runs_model(ledger, goal_ids=[goal_id] if goal_id else [])
    check_filters(filter(runs.is_shown, model.runs), **filters)
    chosen = {name: filters.get(name) for name in ("benchmark", "case")}
    selected = {name: filters.get(name) for name in ("arm", "mode", "status")}
    return [
        p for p in model.pairs
        if runs.matches(p, **chosen)
        and (not any(selected.values()) or any(p[side] is not None and runs.matches(p[side], **selected) for side in (runs.BASELINE, runs.TREATMENT)))
    ]
