"""Interoperability commands: import-loopx, runs, export, import-ndjson."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from benchledger.cli.common import echo_errors, goal_option, input_path, open_ledger
from benchledger.cli.output import echo_json, echo_rows, format_option, utc_text, wide_option
from benchledger.errors import capped
from benchledger.ledger.results import CurrentRun, LoopxImport, PassRate, Refusal, Run, RunPair


def _refusals(title: str, refused: Sequence[Refusal], count: int | None = None) -> str:
    """A refusal in markdown: its first :data:`~benchledger.errors.SHOWN_PROBLEMS` reasons, then how many more (of ``count``, default all listed)."""
    lines = capped([f"{r.source}: {r.reason}" for r in refused], total=count)
    return "\n".join([f"# {title}", "", *(f"- {line}" for line in lines)]) + "\n"


def _import_markdown(report: LoopxImport) -> str:
    if not report.ok:
        return _refusals(f"LoopX import refused: nothing written to `{report.goal_id}`", report.refused)
    verb = "would append" if report.dry_run else "appended"
    return "\n".join(
        [
            f"# LoopX import into `{report.goal_id}` ({report.source_format})" + (" (dry run)" if report.dry_run else ""),
            "",
            f"- rows read: {report.rows_read}",
            f"- duplicate rows (taken once): {report.duplicate_rows}",
            f"- rows without a benchmark artifact (skipped): {report.rows_without_artifacts}",
            f"- {verb}: {report.events_appended} event(s); already in the goal: {report.events_already_present}",
        ]
    ) + "\n"


@click.command("import-loopx")
@click.argument("path", metavar="PATH")
@click.option("--dry-run", is_flag=True, help="Read and check everything, report what would be appended, write nothing.")
@format_option("markdown", "json")
@click.pass_context
def import_loopx_command(ctx: click.Context, goal: str, path: str, dry_run: bool, fmt: str) -> None:
    """Import existing LoopX history into GOAL, all or nothing.

    PATH is either

    \b
    * a LoopX run ledger (benchmark_run_ledger_v0, e.g. benchmark-run-ledger.json):
      each run row becomes one benchmark_run_ledger_row_v0 event holding the row
      as LoopX wrote it (archived rows included), in recorded_at order;
    * a LoopX runtime history: a runtime root (goals/<goal>/runs/index.jsonl;
      the goal named GOAL, or the only one), a goal folder, its runs folder or
      the index.jsonl itself. The benchmark_run / benchmark_comparison /
      benchmark_result / benchmark_learning_ledger objects each record embeds are
      normalized like `benchledger ingest` and appended as one batch per record.
      Per-run records are found by the file name of the row's json_path, beside
      the index. Repeated index rows are taken once and counted.

    Rows are held to the ledger's at-rest rule, as ingest is (docs/privacy.md): one
    holding a local path or a secret-like string (free-text notes included) is
    refused with the field that holds it.
    Any refused row: nothing is written, the refusals are listed (the first 20,
    then how many more), exit 1.
    Importing the same history again appends nothing.
    """
    from benchledger.ledger.api import plan_loopx_import

    plan = plan_loopx_import(path, goal)
    if plan.ok:
        with open_ledger(ctx) as ledger:
            report = ledger.import_loopx(plan, dry_run=dry_run)
    else:  # (nothing to write: the ledger is not even opened)
        report = plan.refusal(dry_run=dry_run)
    if not report.ok:
        echo_errors([f"{r.source}: {r.reason}" for r in report.refused])
    if fmt == "json":
        echo_json(report.as_dict())
    else:
        click.echo(_import_markdown(report), nl=False)
    ctx.exit(0 if report.ok else 1)


import_loopx_command.params.insert(0, goal_option(required=True, help="The goal (stream) the history is imported into."))


def _score(run: Run | None) -> str:
    from benchledger.projections.runs import score_text

    return score_text(run.score_status, run.official_score) if run else ""


def _countable(run: Run) -> str:
    return "yes" if run.countable else f"no: {run.not_countable_reason}"


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


@click.command("runs")
@click.option("--benchmark", metavar="ID", help="Only runs of this benchmark id (e.g. terminal-bench@2.0).")
@click.option("--case", metavar="ID", help="Only runs of this case (task) id.")
@click.option("--arm", metavar="ARM", help="Only runs of this arm (a row's arm_id; for an ingested run, its mode).")
@click.option("--mode", metavar="MODE", help="Only runs of this mode.")
@click.option("--status", metavar="S", help="Only runs whose run status (completed, recorded, blocked, running) or score status (passed, failed, missing) is S.")
@click.option("--current", is_flag=True, help="Show the current countable run of each case and arm instead (see below).")
@click.option("--paired", is_flag=True, help="One row per pair: a task's baseline and treatment runs side by side, with the score delta.")
@click.option("--summary", is_flag=True, help="Pass rates per benchmark and arm (with --current: over each arm's current run).")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Only the first N rows of the listing (not with --summary).")
@format_option("table", "json", "csv")
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
    limit: int | None,
    fmt: str,
    wide: bool,
) -> None:
    """Benchmark runs: imported LoopX run-ledger rows and ingested runs alike.

    Each run is listed once, in its latest version (re-importing a LoopX ledger
    whose row changed supersedes the older row). Ingested compact runs carry no
    run id, arm, status or attempt accounting: their event id stands in for the
    run id, their mode for the arm (their job name for a missing case id), and
    status / score status are derived the way LoopX derives them for its
    ledger rows.

    A filter value no run can match (a misspelt status, a benchmark, case, arm
    or mode no run of the goal(s) has) is refused with the valid choices.

    --current: the current countable run of each goal, benchmark, case and arm
    (archived, running and attempt-accounting-excluded runs do not count; the
    full rule: docs/interop.md). --benchmark, --case and --goal choose the
    cases; --arm, --mode and --status then filter the arms by their current run
    (--status failed: the arms whose current run failed).

    --paired: a comparison's baseline and treatment runs, and a LoopX run
    group's baseline and treatment arms, on one row (the pairing rule:
    docs/interop.md). --summary: pass rate = passed / (passed + failed) per
    benchmark and arm.
    """
    if paired and (current or summary):
        raise click.UsageError("--paired cannot be combined with --current or --summary", ctx)
    if summary and limit is not None:
        raise click.UsageError("--limit does not apply to --summary (one row per benchmark and arm)", ctx)
    filters = {"goal_id": goal, "benchmark": benchmark, "case": case, "arm": arm, "mode": mode, "status": status}
    with open_ledger(ctx) as ledger:
        if paired:
            _echo_listing(ledger.run_pairs(**filters, limit=limit), PAIR_HEADERS, _pair_row, fmt, wide)
        elif summary:
            _echo_listing(ledger.pass_rates(**filters, current=current), RATE_HEADERS, _rate_row, fmt, wide)
        elif current:
            _echo_listing(ledger.current_runs(**filters, limit=limit), CURRENT_HEADERS, _current_row, fmt, wide)
        else:
            _echo_listing(ledger.runs(**filters, limit=limit), RUN_HEADERS, _run_row, fmt, wide)


def _echo_listing(listing: Any, headers: list[str], row: Callable[[Any], list[Any]], fmt: str, wide: bool) -> None:
    """A ``runs`` listing: JSON as its ``as_dict()``, else one table/CSV row per item."""
    if fmt == "json":
        echo_json(listing.as_dict())
    else:
        echo_rows(headers, [row(item) for item in listing], fmt, wide=wide)


def _run_row(run: Run) -> list[Any]:
    return [run.goal_id, run.run_id, run.benchmark_id, run.case_id, run.arm, run.status, _score(run), utc_text(run.recorded_at), _countable(run)]


def _current_row(e: CurrentRun) -> list[Any]:
    run = e.current
    return [e.goal_id, e.benchmark_id, e.case_id, e.arm, run.run_id if run else "(none countable)",
            run and run.status, _score(run), utc_text(run and run.recorded_at), f"{e.countable_run_count}/{e.run_count}"]


def _pair_row(p: RunPair) -> list[Any]:
    return [p.goal_id, p.benchmark_id, p.case_id, p.pair_id, p.baseline and p.baseline.arm, _score(p.baseline),
            p.treatment and p.treatment.arm, _score(p.treatment), "" if p.score_delta is None else f"{p.score_delta:+g}"]


def _rate_row(r: PassRate) -> list[Any]:
    return [r.benchmark_id, r.arm, r.runs, r.passed, r.failed, r.unscored, _rate(r.pass_rate)]


RUN_HEADERS = ["goal", "run", "benchmark", "case", "arm", "status", "score", "recorded (UTC)", "countable"]
CURRENT_HEADERS = ["goal", "benchmark", "case", "arm", "current run", "status", "score", "recorded (UTC)", "countable/runs"]
PAIR_HEADERS = ["goal", "benchmark", "case", "pair", "baseline arm", "baseline", "treatment arm", "treatment", "delta"]
RATE_HEADERS = ["benchmark", "arm", "runs", "passed", "failed", "unscored", "pass rate"]


runs_command.params.insert(0, goal_option(help="Only this goal's runs (default: every goal)."))


@click.command("export")
@click.pass_context
def export_command(ctx: click.Context, goal: str | None) -> None:
    """Write every event as NDJSON to standard output, in position order.

    One line per event with every stored field: position, event_id, goal_id,
    stream_version, kind, schema_version, payload (the stored canonical JSON
    text), payload_sha256, source_sha256, prev_hash, chain_hash, recorded_at,
    source. The last line is the trailer: {"benchledger_export": "trailer-v1",
    goal_id, events, last_position, digest}, so a copy that lost its tail is
    refused on import. docs/hash-chain.md shows how to audit the file by hand;
    `benchledger import-ndjson` restores it into an empty ledger.

    Example: benchledger export > ledger.ndjson
    """
    with open_ledger(ctx) as ledger:
        for line in ledger.export(goal_id=goal):
            # Bytes go to the binary stream: UTF-8 whatever the terminal's locale.
            click.echo(line.encode("utf-8"))


export_command.params.insert(0, goal_option(help="Only this goal's events (its positions keep the gaps other goals leave)."))


@click.command("import-ndjson")
@click.argument("file", metavar="FILE|-")
@click.option(
    "--unverifiable-tail",
    is_flag=True,
    help="Accept a file without the export trailer (written by an older benchledger): every line is still verified, "
    "but lost last lines cannot be detected.",
)
@format_option("markdown", "json")
@click.pass_context
def import_ndjson_command(ctx: click.Context, file: str, unverifiable_tail: bool, fmt: str) -> None:
    """Restore a `benchledger export` file (or - for standard input) into an EMPTY ledger, exactly.

    The same event ids, versions, payloads, chain hashes and digest: the file
    is verified first (payload hashes, event ids, every goal's chain, positions
    1..N for a whole-ledger export, and the trailer: the count, last position
    and digest the export ended with), and refused — nothing written, the
    first 20 problems listed and the rest counted, exit 1 — unless everything holds. An export of one goal
    (`export --goal`) is renumbered to positions 1..N. The projections of the
    imported goals are rebuilt in the same transaction. A ledger that already
    holds events is refused.
    """
    from benchledger.ledger import ExportRefused

    with input_path(file) as (path, name), open_ledger(ctx) as ledger:
        try:
            result = ledger.import_export(path, unverifiable_tail=unverifiable_tail, name=name)
        except ExportRefused as exc:
            if fmt == "json":
                echo_json(exc.as_dict())
            else:
                click.echo(_refusals(str(exc), [Refusal(name, problem) for problem in exc.problems], exc.problem_count), nl=False)
            echo_errors([f"{name}: {problem}" for problem in exc.problems], exc.problem_count)
            ctx.exit(1)
    if fmt == "json":
        echo_json(result.as_dict())
    else:
        unverified = "" if result.tail_verified else "\n- tail: NOT verified (the file has no export trailer)"
        click.echo(
            f"# Imported {result.events} event(s) of {len(result.goals)} goal(s)\n\n"
            f"- goals: {', '.join(result.goals) or '(none)'}\n- digest: `{result.digest}`{unverified}"
        )

