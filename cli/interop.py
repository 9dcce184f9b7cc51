"""Interoperability commands: import-loopx, export, import-ndjson, merge."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from benchledger.cli.common import NEW_GOAL_HELP, echo_archived_notes, echo_errors, goal_option, input_path, open_ledger
from benchledger.cli.output import echo_json, format_option
from benchledger.errors import capped, redact_url
from benchledger.ledger.results import LoopxImport, Refusal


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


def _exit_refused(ctx: click.Context, refused: Any, name: str, fmt: str) -> NoReturn:
    """An export file ``import-ndjson`` or ``merge`` refused: its problems (JSON, or markdown and stderr), exit 1."""
    if fmt == "json":
        echo_json(refused.as_dict())
    else:
        click.echo(_refusals(str(refused), [Refusal(name, problem) for problem in refused.problems], refused.problem_count), nl=False)
    echo_errors([f"{name}: {problem}" for problem in refused.problems], refused.problem_count)
    ctx.exit(1)


@click.command("import-loopx")
@click.argument("path", metavar="PATH")
@click.option("--dry-run", is_flag=True, help="Read and check everything, report what would be appended, write nothing.")
@click.option("--new-goal", is_flag=True, help=NEW_GOAL_HELP)
@format_option("markdown", "json")
@click.pass_context
def import_loopx_command(ctx: click.Context, goal: str, path: str, dry_run: bool, new_goal: bool, fmt: str) -> None:
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
        with open_ledger(ctx, writes=not dry_run, dry_run=dry_run) as ledger:
            report = ledger.import_loopx(plan, dry_run=dry_run, new_goal=new_goal)
    else:  # (nothing to write: the ledger is not even opened)
        report = plan.refusal(dry_run=dry_run)
    if not report.ok:
        echo_errors([f"{r.source}: {r.reason}" for r in report.refused])
    echo_archived_notes(report.archived_goals, command="import-loopx", dry_run=dry_run)
    if fmt == "json":
        echo_json(report.as_dict())
    else:
        click.echo(_import_markdown(report), nl=False)
    ctx.exit(0 if report.ok else 1)


import_loopx_command.params.insert(0, goal_option(required=True, help="The goal (stream) the history is imported into."))


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

    with input_path(file) as (path, name), open_ledger(ctx, writes=True) as ledger:
        try:
            result = ledger.import_export(path, unverifiable_tail=unverifiable_tail, name=name)
        except ExportRefused as exc:
            _exit_refused(ctx, exc, name, fmt)
    if fmt == "json":
        echo_json(result.as_dict())
    else:
        unverified = "" if result.tail_verified else "\n- tail: NOT verified (the file has no export trailer)"
        click.echo(
            f"# Imported {result.events} event(s) of {len(result.goals)} goal(s)\n\n"
            f"- goals: {', '.join(capped(result.goals)) or '(none)'}\n- digest: `{result.digest}`{unverified}"
        )



@click.command("merge")
@click.argument("file", metavar="FILE|-", required=False)
@click.option("--from", "from_url", metavar="URL", help="Merge the ledger at URL (read only: neither created nor migrated) instead of a file.")
@click.option(
    "--unverifiable-tail",
    is_flag=True,
    help="Accept a file without the export trailer (written by an older benchledger), as import-ndjson does.",
)
@format_option("markdown", "json")
@click.pass_context
def merge_command(ctx: click.Context, file: str | None, from_url: str | None, unverifiable_tail: bool, fmt: str) -> None:
    """Merge another ledger into this one: a `benchledger export` file (or - for standard input), or --from URL.

    All or nothing, in one transaction. A goal this ledger lacks is copied
    whole; a goal both hold is taken only where one copy is a prefix of the
    other (the rest is appended); goals whose copies have parted refuse the
    merge, each named with the first stream version where they differ (exit 1,
    nothing written). Events are stored verbatim (ids, payloads, recorded
    times, chain hashes), so each merged goal's digest (`audit --goal G`) is
    the same in both ledgers; the report lists it. The file is verified first
    as import-ndjson verifies it, and the merged goals' projections are
    rebuilt in the same transaction. Merging the same ledger again adds nothing.

    Example: benchledger --database-url postgresql://team@db/ledger merge --from sqlite:///$HOME/ledger.sqlite
    """
    from benchledger.ledger import ExportRefused

    if (file is None) == (from_url is None):
        raise click.UsageError("give FILE (or -) or --from URL (one of them)", ctx)
    if from_url is not None and unverifiable_tail:
        raise click.UsageError("--unverifiable-tail goes with a FILE (a ledger read --from is exported whole, trailer included)", ctx)
    with contextlib.ExitStack() as stack:
        path, name = stack.enter_context(input_path(file)) if file is not None else (None, redact_url(from_url or ""))
        ledger = stack.enter_context(open_ledger(ctx, writes=True))
        try:
            if path is not None:
                report = ledger.merge(path, unverifiable_tail=unverifiable_tail, name=name)
            else:
                report = ledger.merge_from(from_url or "")
        except ExportRefused as exc:
            _exit_refused(ctx, exc, name, fmt)
    if fmt == "json":
        echo_json(report.as_dict())
        return
    lines = [f"# Merged {report.source}: {report.events_added} event(s) added", ""]
    what = {"copied": "copied (this ledger lacked it)", "appended": "appended to (this ledger held a prefix of it)", "held": "held already"}
    lines += [
        f"- `{g.goal_id}`: {what[g.action]}, {g.events_added} event(s) added; goal digest at version {g.source_events}: `{g.digest}`"
        for g in report.goals
    ]
    click.echo("\n".join(lines))
