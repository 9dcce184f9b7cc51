"""``runs`` and ``compare``: the runs model's listings and the paired statistics, printed."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import click

from benchledger.cli.common import as_of_after_last_event_text, echo_as_of_after_last_event, goal_option, open_ledger
from benchledger.cli.output import echo_json, echo_rows, format_option, signed_number, utc_text, wide_option
from benchledger.ledger.api import RESAMPLES
from benchledger.ledger.results import Comparison, Comparisons, CurrentRun, PassRate, Run, RunPair

# A benchmark or arm cell of a run whose record names none (a compact run without benchmark_id or mode; JSON: null):
# said, not left blank, which read as a row whose cells were lost (docs/interop.md, "The runs model").
NONE_NAMED = "(none)"


def _named(value: str | None) -> str:
    return value or NONE_NAMED


def _score(run: Run | None) -> str:
    from benchledger.projections.runs import score_text

    return score_text(run.score_status, run.official_score) if run else ""


def _countable(run: Run) -> str:
    return "yes" if run.countable else f"no: {run.not_countable_reason}"


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


@click.command("runs")
@click.option("--benchmark", metavar="ID", help="Only runs of this benchmark id (e.g. terminal-bench@2.0).")
@click.option("--case", metavar="TASK", help="Only runs of this case (task): fix-git or terminal-bench@2.0/fix-git.")
@click.option("--arm", metavar="ARM", help="Only runs of this arm, in any spelling (codex_loopx and Codex-LoopX are one arm).")
@click.option("--mode", metavar="MODE", help="Only runs of this mode, in any spelling.")
@click.option("--status", metavar="S", help="Only runs whose run status (completed, recorded, blocked, running) or score status (passed, failed, missing) is S.")
@click.option("--current", is_flag=True, help="Show the current countable run of each case and arm instead (see below).")
@click.option("--paired", is_flag=True, help="One row per pair: a task's baseline and treatment runs side by side, with the score delta.")
@click.option("--summary", is_flag=True, help="Pass rates per benchmark and arm (with --current: over each case's current run per arm).")
@click.option("--include-archived", is_flag=True,
              help="With --summary: count archived runs in the rates too (not those left out for another reason as well).")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Only the first N rows of the listing (not with --summary).")
@format_option("table", "json", "markdown", "csv")
@wide_option
@click.pass_context
def runs_command(
    ctx: click.Context,
    goal: str | None,
    benchmark: str | None,
    case: str | None,
    arm: str | None,
    mode: str | None,
    status: str | None,
    current: bool,
    paired: bool,
    summary: bool,
    include_archived: bool,
    limit: int | None,
    fmt: str,
    wide: bool,
) -> None:
    """Benchmark runs: imported LoopX run-ledger rows and ingested runs alike (the runs model: docs/interop.md).

    Each run is listed once, in its latest version (re-importing a LoopX ledger
    whose row changed supersedes the older row); retracted runs are not listed.
    A run's case is its benchmark task (its own case or task id, its first
    trial's, or the task of the comparison ingested with it; never the job
    name); its arm is its LoopX arm id, else its mode, spelt as LoopX compares
    modes (lower case, "_" as "-"); --wide (and CSV) add the spelling recorded.

    A filter value no run can match (a misspelt status, a benchmark, case, arm
    or mode no run of the goal(s) has) is refused with the valid choices.

    --current: the current countable run of each goal, benchmark, case and arm
    (the full rule: docs/interop.md). --benchmark, --case and --goal choose the cases; --arm, --mode and --status
    then filter the arms by their current run.

    --paired: a comparison beside the runs of its own task (from its own batch,
    else the latest countable run of that task and arm before it, marked), and a
    LoopX run group's baseline and treatment arms, on one row; a missing side
    says why.

    --summary: pass rate = passed / (passed + failed) per benchmark and arm,
    over current, countable, unretracted runs; archived, superseded, retracted
    and not countable runs are counted in their own columns, each run once
    (an archived run that is also no countable attempt is not countable).
    --include-archived counts the archived column in the rate too. The first
    line says what is counted. --current --summary: the rate is over each case's
    current countable run per arm (its earlier countable runs are not counted);
    the runs left out are counted as --summary counts them.
    """
    if paired and (current or summary):
        raise click.UsageError("--paired cannot be combined with --current or --summary", ctx)
    if summary and limit is not None:
        raise click.UsageError("--limit does not apply to --summary (one row per benchmark and arm)", ctx)
    if include_archived and not summary:
        raise click.UsageError("--include-archived applies to --summary only", ctx)
    filters = {"goal_id": goal, "benchmark": benchmark, "case": case, "arm": arm, "mode": mode, "status": status}
    with open_ledger(ctx) as ledger:
        if paired:
            _echo_listing(ledger.run_pairs(**filters, limit=limit), PAIR_HEADERS, _pair_row, fmt, wide)
        elif summary:
            rates = ledger.pass_rates(**filters, current=current, include_archived=include_archived)
            if fmt in ("table", "markdown"):  # (what is counted, said first, in lines that fit 80 columns however wide)
                click.echo(textwrap.fill(rates.counted or "", COUNTED_WIDTH) + "\n")
            headers, row = (RATE_HEADERS + ["arm as recorded"], _wide_rate_row) if wide or fmt == "csv" else (RATE_HEADERS, _rate_row)
            _echo_listing(rates, headers, row, fmt, wide)
        elif current:
            _echo_listing(ledger.current_runs(**filters, limit=limit), CURRENT_HEADERS, _current_row, fmt, wide)
        else:
            headers, row = (RUN_HEADERS + ["arm as recorded", "job"], _wide_run_row) if wide or fmt == "csv" else (RUN_HEADERS, _run_row)
            _echo_listing(ledger.runs(**filters, limit=limit), headers, row, fmt, wide)


runs_command.params.insert(0, goal_option(help="Only this goal's runs (default: every goal)."))


def _echo_listing(listing: Any, headers: list[str], row: Callable[[Any], list[Any]], fmt: str, wide: bool) -> None:
    """A ``runs`` listing: JSON as its ``as_dict()``, else one table/markdown/CSV row per item."""
    if fmt == "json":
        echo_json(listing.as_dict())
    else:
        echo_rows(headers, [row(item) for item in listing], fmt, wide=wide,
                  empty="no run matches here (`runs` lists ingested runs and imported LoopX rows; `benchledger info` names the ledger)")


def _run_row(run: Run) -> list[Any]:
    return [run.goal_id, run.run_id, _named(run.benchmark_id), run.case_id, _named(run.arm), run.status, _score(run), utc_text(run.recorded_at), _countable(run)]


def _wide_run_row(run: Run) -> list[Any]:
    return [*_run_row(run), run.arm_spelling, run.job_name]


def _current_row(e: CurrentRun) -> list[Any]:
    run = e.current
    return [e.goal_id, _named(e.benchmark_id), e.case_id, _named(e.arm), run.run_id if run else "(none countable)",
            run and run.status, _score(run), utc_text(run and run.recorded_at), f"{e.countable_run_count}/{e.run_count}"]


def _side_note(side: str, run: Run | None, found_by: str | None, missing: str | None) -> str | None:
    if run is None:
        return f"no {side}: {missing}"
    # (a side `compare` and `runs --summary` leave out is said so: an archived pair's "+0" is no evidence they count)
    uncounted = f"{side} not countable: {run.not_countable_reason}" if not run.countable else None
    if found_by == "earlier_run":
        found = f"{side} from an earlier batch ({utc_text(run.recorded_at)})"
    elif found_by == "claim_review":
        found = f"{side} as the claim review reads it"
    else:
        found = None
    return ", ".join(note for note in (found, uncounted) if note) or None


def _pair_row(p: RunPair) -> list[Any]:
    notes = [n for n in (_side_note("baseline", p.baseline, p.baseline_found_by, p.baseline_missing),
                         _side_note("treatment", p.treatment, p.treatment_found_by, p.treatment_missing)) if n]
    return [p.goal_id, _named(p.benchmark_id), p.case_id, p.pair_id, _named(p.baseline_arm), _score(p.baseline),
            _named(p.treatment_arm), _score(p.treatment), "" if p.score_delta is None else signed_number(p.score_delta), "; ".join(notes)]


def _rate_row(r: PassRate) -> list[Any]:
    return [_named(r.benchmark_id), _named(r.arm), r.runs, r.passed, r.failed, r.unscored, _percent(r.pass_rate),
            r.archived, r.superseded, r.retracted, r.not_countable]


def _wide_rate_row(r: PassRate) -> list[Any]:
    return [*_rate_row(r), ", ".join(r.arm_spellings)]


RUN_HEADERS = ["goal", "run", "benchmark", "case", "arm", "status", "score", "recorded (UTC)", "countable"]
CURRENT_HEADERS = ["goal", "benchmark", "case", "arm", "current run", "status", "score", "recorded (UTC)", "countable/runs"]
PAIR_HEADERS = ["goal", "benchmark", "case", "pair", "baseline arm", "baseline", "treatment arm", "treatment", "delta", "note"]
COUNTED_WIDTH = 80
RATE_HEADERS = ["benchmark", "arm", "runs", "passed", "failed", "unscored", "pass rate",
                "archived", "superseded", "retracted", "not countable"]


# -- compare ------------------------------------------------------------------------------------

def _compared(include_archived: bool) -> str:
    """What compare's rates are, said before its table (with ``include_archived``, both it and `runs --summary` count the
    archived runs that nothing else leaves out: projections.runs.counts_in_rate)."""
    archived, summary = (" and archived ones that nothing else leaves out", " --include-archived") if include_archived else ("", "")
    return (
        f"Each arm's pass rate is the mean of its per-task pass rates over the tasks both arms ran (countable, scored runs{archived}), "
        f"so it differs from the pooled rate of `runs --summary{summary}`: passed / (passed + failed) over the arm's current, "
        f"countable, unretracted runs{archived} of every task; tasks only one arm ran are counted in the last columns and named below."
    )


def _points(value: float | None) -> str:
    """A difference of rates in percentage points, signed."""
    return "" if value is None else f"{value * 100:+.1f}"


def _interval(c: Comparison) -> str:
    return "" if c.interval is None else f"[{c.interval[0] * 100:+.1f}, {c.interval[1] * 100:+.1f}]"


def _p(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


def _compare_row(c: Comparison) -> list[Any]:
    return [
        _named(c.benchmark_id), c.baseline_arm, c.treatment_arm, c.tasks, _percent(c.baseline_pass_rate), _percent(c.treatment_pass_rate),
        _points(c.difference), _interval(c), c.test, _p(c.p_value), _p(c.adjusted_p_value),
        _detectable(c),
        c.verdict, len(c.baseline_only_tasks), len(c.treatment_only_tasks),
    ]


def _detectable(c: Comparison) -> str:
    """The minimum detectable difference in points; "none" where the comparison states none (docs/statistics.md: too few
    tasks, no spread, or beyond any difference), blank where there is no comparison at all (no paired task)."""
    if c.minimum_detectable_difference is not None:
        return f"{c.minimum_detectable_difference * 100:.1f}"
    return "" if c.note else "none"


COMPARE_HEADERS = [
    "benchmark", "baseline arm", "treatment arm", "tasks", "baseline", "treatment", "difference (pts)", "95% interval (pts)",
    "test", "p", "p (Holm)", "detectable (pts)", "verdict", "baseline only", "treatment only",
]


def _unpaired_lines(comparisons: Comparisons) -> list[str]:
    """Why a pair of arms has no comparison, and the tasks one arm ran and the other did not, named (the first few of each)."""
    lines = [f"{_named(c.benchmark_id)} ({c.baseline_arm} vs {c.treatment_arm}): {c.note}" for c in comparisons if c.note]
    for c in comparisons:
        for arm, tasks in ((c.baseline_arm, c.baseline_only_tasks), (c.treatment_arm, c.treatment_only_tasks)):
            if tasks:
                shown = ", ".join(tasks[:10]) + (f" … ({len(tasks) - 10} more)" if len(tasks) > 10 else "")
                lines.append(f"{_named(c.benchmark_id)} ({c.baseline_arm} vs {c.treatment_arm}): {len(tasks)} task(s) only in {arm}, left out: {shown}")
    return lines


@click.command("compare")
@click.option("--goal", "goals", multiple=True, metavar="GOAL", help="Only these goals' runs (repeatable; default: the whole ledger).")
@click.option("--as-of", metavar="POSITION|TIME", help="Only the evidence recorded up to then (a ledger position or an ISO-8601 time).")
@click.option("--benchmark", metavar="ID", help="Only this benchmark.")
@click.option("--baseline", metavar="ARM", help="The baseline arm (any spelling); with --treatment.")
@click.option("--treatment", metavar="ARM", help="The treatment arm (any spelling); with --baseline.")
@click.option("--include-archived", is_flag=True, help="Count archived runs as evidence too (not those left out for another reason as well).")
@click.option("--seed", type=int, default=0, show_default=True, help="The bootstrap's seed: the same ledger and seed give the same interval.")
@click.option("--resamples", type=click.IntRange(*RESAMPLES), default=2000, show_default=True, help="Bootstrap resamples.")
@format_option("table", "json", "markdown", "csv")
@wide_option
@click.pass_context
def compare_command(
    ctx: click.Context, goals: tuple[str, ...], as_of: str | None, benchmark: str | None, baseline: str | None, treatment: str | None,
    include_archived: bool, seed: int, resamples: int, fmt: str, wide: bool,
) -> None:
    """Did the treatment arm beat the baseline? Per benchmark, over the tasks both arms ran.

    Each countable, scored run of a task is one trial of it. Per benchmark and
    arm pair (--baseline and --treatment, else every pair that comparisons and
    LoopX run groups name): each arm's pass rate (the mean of per-task rates),
    the paired difference in percentage points with a cluster-bootstrap 95%
    interval (tasks resampled, a task's trials kept together; seeded), the exact
    McNemar test (one trial per task and arm) or exact sign test, p-values
    Holm-adjusted across the comparisons of this call, the smallest difference
    this many tasks could detect, and a verdict: treatment better, no
    detectable difference, or treatment worse. Tasks only one arm ran are
    counted and named. What this claims and what it does not: docs/statistics.md.
    """
    if (baseline is None) != (treatment is None):
        raise click.UsageError("--baseline and --treatment go together (or give neither: every arm pair that pairs name)", ctx)
    with open_ledger(ctx) as ledger:
        found = ledger.compare(
            goal_ids=goals, as_of=as_of, benchmark=benchmark, baseline=baseline, treatment=treatment,
            include_archived=include_archived, seed=seed, resamples=resamples,
        )
    after_last_event = found.scope["as_of_after_last_event"]
    if fmt in ("json", "csv"):
        echo_as_of_after_last_event(as_of, after_last_event)
    if fmt == "json":
        echo_json(found.as_dict())
        return
    # (what --as-of resolved to, said first as history says it: a time names the last event the ledger recorded by then)
    when = None if as_of is None else f"As of position {found.scope['as_of_position']} (--as-of {as_of}): the events up to it only."
    if as_of is not None and after_last_event is not None:
        when = as_of_after_last_event_text(as_of, after_last_event) + "."
    if fmt != "csv" and when:
        click.echo(when)
    if fmt != "csv" and not found.comparisons:
        click.echo("No arm pair to compare: no comparison or LoopX run group names one here; give --baseline ARM --treatment ARM.")
        return
    if fmt == "markdown":
        click.echo("## Treatment against baseline, per benchmark\n")
    if fmt != "csv":  # (what the rates are, said first: not the pooled rates of `runs --summary`, which a reader has seen)
        click.echo(textwrap.fill(_compared(include_archived), COUNTED_WIDTH) + "\n")
    echo_rows(COMPARE_HEADERS, [_compare_row(c) for c in found], fmt, wide=wide)
    if fmt != "csv":
        for line in _unpaired_lines(found):
            click.echo(("- " if fmt == "markdown" else "") + line)
