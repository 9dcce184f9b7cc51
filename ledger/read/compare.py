"""``benchledger compare``: per benchmark, a treatment arm against a baseline arm, over the tasks both ran.

The evidence is the runs model's (``ledger.read.runs``): each countable,
scored run of a task is one trial of that task in its arm. The arms compared
are the two given, on every benchmark that holds either, or else every
(benchmark, baseline arm, treatment arm) that a pair names
(``projections.runs.arm_pairs``). The statistics are
``projections.statistics``'s; the p-values of one call are adjusted together
(Holm), and each verdict reads its adjusted p-value.

Tasks with evidence in one arm only are counted and named, never silently dropped; with no task in both arms, the
note says which runs of the two arms were left out and why (retracted, archived, running, not a countable attempt),
by the runs model's reasons.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from benchledger.ledger.read.points import resolve_as_of
from benchledger.ledger.read.runs import UnknownFilterValue, choices_text, runs_model
from benchledger.ledger.storage.store import Store, one_snapshot
from benchledger.projections import runs, statistics


@one_snapshot
def compare(
    ledger: Store,
    *,
    goal_ids: Sequence[str] = (),
    as_of: str | None = None,
    benchmark: str | None = None,
    baseline: str | None = None,
    treatment: str | None = None,
    include_archived: bool = False,
    seed: int = 0,
    resamples: int = 2000,
) -> dict[str, Any]:
    """The comparisons of a scope (goals, default the whole ledger; ``as_of`` a position or time), one per benchmark and arm pair."""
    resolved = resolve_as_of(ledger, None, as_of)  # (over the whole ledger: a time names the last event recorded by then)
    position = None if resolved is None else resolved.position
    model = runs_model(ledger, goal_ids=goal_ids, up_to_position=position)
    return compare_model(
        model, goal_ids=goal_ids, position=position, benchmark=benchmark, baseline=baseline, treatment=treatment,
        include_archived=include_archived, seed=seed, resamples=resamples, after_last_event=resolved and resolved.after_last_event,
    )


def compare_model(
    model: runs.RunsModel,
    *,
    goal_ids: Sequence[str] = (),
    position: int | None = None,
    benchmark: str | None = None,
    baseline: str | None = None,
    treatment: str | None = None,
    include_archived: bool = False,
    seed: int = 0,
    resamples: int = 2000,
    after_last_event: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`compare` over a runs model already read (of ``goal_ids`` up to ``position``, ``after_last_event`` when an
    ``as_of`` named a position after the ledger's last event: ``points.AsOf``), for a reader that needs the model for more."""
    views = list(filter(runs.is_shown, model.runs))
    arms = {v["arm"] for v in views if v["arm"]}
    benchmarks = {v["benchmark_id"] for v in views}
    if benchmark is not None and benchmark not in benchmarks:
        raise UnknownFilterValue(f"--benchmark {benchmark!r} is not the benchmark of any run here; choose from: {choices_text(benchmarks)}")
    for option, arm in (("--baseline", baseline), ("--treatment", treatment)):
        if arm is not None and runs.arm_of(arm) not in arms:
            raise UnknownFilterValue(f"{option} {arm!r} is not the arm of any run here; choose from: {choices_text(arms)}")
    if baseline is not None and treatment is not None:
        wanted = {runs.arm_of(baseline), runs.arm_of(treatment)}
        chosen = sorted(
            {(v["benchmark_id"], runs.arm_of(baseline), runs.arm_of(treatment)) for v in views if v["arm"] in wanted},
            key=lambda t: (t[0] or "", t[1] or "", t[2] or ""),
        )
    else:
        chosen = runs.arm_pairs(model.pairs)
    chosen = [c for c in chosen if benchmark is None or c[0] == benchmark]
    by_arm: dict[tuple[str | None, str | None], list[dict[str, Any]]] = {}
    # (each comparison reads its two arms' runs only: every run once per arm pair was most of compare; retracted runs
    # come along for the note of a comparison without paired tasks, never into a rate: none is countable)
    for view in model.runs:
        if runs.is_shown(view) or view["retracted"]:
            by_arm.setdefault((view["benchmark_id"], view["arm"]), []).append(view)
    found = [
        _compared(by_arm.get((bench, b), []) + by_arm.get((bench, t), []), bench, b, t, include_archived, seed, resamples)
        for bench, b, t in chosen
    ]
    tested = [c for c in found if c["p_value"] is not None]
    for entry, adjusted in zip(tested, statistics.holm_adjust([c["p_value"] for c in tested]), strict=True):
        entry["adjusted_p_value"] = adjusted
        entry["verdict"] = statistics.verdict(adjusted, entry["difference"])
    return {
        "scope": {"goals": list(goal_ids) or None, "as_of_position": position, "as_of_after_last_event": after_last_event,
                  "benchmark": benchmark, "include_archived": include_archived, "seed": seed, "resamples": resamples},
        "comparisons": found,
    }


def _compared(
    views: list[dict[str, Any]], benchmark: str | None, baseline: str, treatment: str, include_archived: bool, seed: int, resamples: int,
) -> dict[str, Any]:
    outcomes = runs.task_outcomes(views, benchmark, (baseline, treatment), include_archived=include_archived)
    paired = [
        statistics.TaskOutcomes(task, tuple(arms[baseline]), tuple(arms[treatment]))
        for task, arms in sorted(outcomes.items()) if arms[baseline] and arms[treatment]
    ]
    entry: dict[str, Any] = {
        "benchmark_id": benchmark, "baseline_arm": baseline, "treatment_arm": treatment,
        "tasks": len(paired),
        "baseline_trials": sum(len(t.baseline) for t in paired), "treatment_trials": sum(len(t.treatment) for t in paired),
        "baseline_only_tasks": sorted(task for task, arms in outcomes.items() if arms[baseline] and not arms[treatment]),
        "treatment_only_tasks": sorted(task for task, arms in outcomes.items() if arms[treatment] and not arms[baseline]),
        "baseline_pass_rate": None, "treatment_pass_rate": None, "difference": None, "interval": None, "test": None,
        "p_value": None, "adjusted_p_value": None, "discordant": None, "minimum_detectable_difference": None,
        "verdict": "no paired tasks", "note": None,
    }
    if paired:
        result = statistics.compare_arms(paired, seed=seed, resamples=resamples)
        entry.update({name: value for name, value in result.as_dict().items() if name in entry})
    else:
        entry["note"] = "no task has countable, scored runs in both arms" + _left_out(views, include_archived)
    return entry


def _left_out(views: list[dict[str, Any]], include_archived: bool) -> str:
    """What a note without paired tasks adds: the runs of ``views`` (two arms' runs, retracted ones included) that no
    rate counts, by the runs model's reason, most telling first (``runs.EXCLUSION_ORDER``, then LoopX's flags)."""
    reasons = Counter(v["not_countable_reason"] for v in views if not runs.counts_in_rate(v, include_archived=include_archived))
    reasons.pop(None, None)
    if not reasons:
        return ""
    phrases = {runs.RETRACTED: "retracted run(s)", runs.ARCHIVED: "archived run(s)", runs.RUNNING: "run(s) still running"}
    flags = sorted(r for r in reasons if r not in runs.EXCLUSION_ORDER)  # (``case_attempt_countable=false``, ...)
    order = [*(r for r in runs.EXCLUSION_ORDER if r != runs.ARCHIVED), *flags, runs.ARCHIVED]
    parts = [f"{reasons[r]} {phrases.get(r, f'run(s) with {r}')}" for r in order if reasons[r]]
    archived = ""
    if reasons[runs.ARCHIVED]:
        archived = " (--include-archived counts them)" if len(parts) == 1 else " (--include-archived counts the archived ones)"
    return f"; {', '.join(parts)} of these arms are left out{archived}"

