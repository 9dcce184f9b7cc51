"""``benchledger ingest``: append a run's compact artifacts to a goal as one batch."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import click

from benchledger.cli.common import (
    NEW_GOAL_HELP,
    OneValueOption,
    attempt_id,
    echo_archived_notes,
    echo_errors,
    goal_filter,
    goal_option,
    input_path,
    jobs_option,
    open_ledger,
)
from benchledger.cli.output import echo_json, echo_pieces, format_option, json_document, json_listing
from benchledger.errors import SHOWN_PROBLEMS, capped
from benchledger.ledger.api import INGEST_ORDERS, plan_ingest, plan_ingest_tree
from benchledger.projections.artifacts import KINDS

if TYPE_CHECKING:
    from benchledger.ledger import IngestOutcome


def _progress(total: int):
    """Wraps each batch's files in one progress bar on a terminal for large ingests; passes them through otherwise."""
    if total > 200 and sys.stderr.isatty():
        bar = click.progressbar(length=total, label="reading", file=sys.stderr)

        def advancing(files: Iterable[str]) -> Iterator[str]:
            for file in files:
                yield file
                bar.update(1)

        return bar, advancing
    return contextlib.nullcontext(), lambda files: files


# What a dry run says instead of an outcome: nothing it reports has happened.
_WOULD = {"appended": "would append", "duplicate": "duplicate"}


def _markdown(outcome: IngestOutcome) -> Iterator[str]:
    """The markdown report, a line at a time (an ingest may report 10^5 events)."""
    dry_run = outcome.dry_run
    status = (lambda s: _WOULD[s]) if dry_run else (lambda s: s)  # noqa: E731
    # The counts are of artifacts; each new batch is an ingest_batch event more, which `goals`, `history` and the
    # positions (#1, then #3) count: said, so that five ingests "appending" 6 events do not leave a goal of 11 unexplained.
    batches = sum(b.batch.status == "appended" for b in outcome.batches)
    grouped = f" (artifacts; +{batches} ingest_batch event(s) grouping them)" if batches else ""
    lines = [
        f"# Ingest into `{outcome.goal_id}`" + (" (dry run: nothing was written)" if dry_run else ""),
        "",
        f"- {'would append' if dry_run else 'appended'}: {outcome.appended_count} event(s); "
        f"{'already in the goal' if dry_run else 'duplicates'}: {outcome.duplicate_count}{grouped}",
    ]
    single = outcome.single
    if single is not None:
        lines.append(f"- batch: `{single.batch.event_id}` ({status(single.batch.status)})")
        if single.batch.status == "duplicate":
            lines.append("- nothing new: every artifact is stored and this batch already groups them")
        lines += [f"- note: {note}" for note in single.notes]
    else:
        for b in outcome.batches:
            lines.append(
                f"- batch `{b.batch.event_id}` ({status(b.batch.status)}): {b.label} "
                f"({b.appended_count} {'to append' if dry_run else 'appended'}, {b.duplicate_count} duplicate)"
            )
            lines += [f"  - note: {note}" for note in b.notes]
    lines += [f"- skipped (--skip-unknown): {source}: {reason}" for source, reason in outcome.skipped]
    lines += [f"- taken once: {source}: {repeated}" for source, repeated in outcome.taken_once]
    lines.append("")
    yield from (line + "\n" for line in lines)
    for e in outcome.members():
        where = f"#{e.position} v{e.stream_version}"
        yield f"- {status(e.status):12} {e.kind:20} {where:12} {e.source}\n"


def _refused_markdown(outcome: IngestOutcome) -> str:
    lines = [f"# Ingest refused: nothing written to `{outcome.goal_id}`", ""]
    shown = [f"{source}: {error}" for source, error in outcome.errors[:SHOWN_PROBLEMS]]
    lines += [f"- {line}" for line in capped(shown, total=len(outcome.errors))]  # (the count of the rest, as stderr says it)
    return "".join(line + "\n" for line in lines)


@click.command("ingest")
@click.option(
    "--kind",
    cls=OneValueOption,
    once="it names the kind of every document; ingest each kind on its own",
    type=click.Choice(KINDS),
    help="Kind of every document (needed for lifecycle inputs and adapter invocations, which carry no reliable schema).",
)
@click.option("--dry-run", is_flag=True, help="Validate and report what would be appended, without writing.")
@click.option("--new-goal", is_flag=True, help=NEW_GOAL_HELP)
@click.option(
    "--batch-per-directory",
    "root",
    metavar="ROOT",
    help="A job tree instead of PATHs: each directory below ROOT that directly holds input files is one batch (--order); all or none.",
)
@click.option(
    "--order",
    type=click.Choice(INGEST_ORDERS),
    default=None,
    help="With --batch-per-directory: the batches in directory-name order (the default), or in time order of the "
    "earliest time their documents state (recorded_at, generated_at, finished_at, started_at, launched_at).",
)
@click.option(
    "--include",
    "include",
    metavar="GLOB",
    multiple=True,
    help="Read only the files of folders that GLOB matches (its name; its path below the folder when GLOB has a /); "
    "repeatable. Default: *.json, *.ndjson, *.jsonl and the same gzipped.",
)
@click.option(
    "--attempt",
    "attempt",
    cls=OneValueOption,
    once="a batch joins one attempt; ingest each attempt's files on their own",
    metavar="ID",
    callback=lambda ctx, param, value: attempt_id(value),
    help="The attempt of GOAL the batch joins (1, 2, …; the goal's next number opens it); default: the attempt "
    "rule places it (docs/linking.md, \"Naming the attempt\").",
)
@click.option(
    "--skip-unknown",
    is_flag=True,
    help="Leave out (and list) documents whose kind cannot be told, such as a job-summary.json, instead of refusing the ingest.",
)
@format_option("markdown", "json")
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.pass_context
def ingest_command(
    ctx: click.Context,
    goal: str,
    kind: str | None,
    dry_run: bool,
    new_goal: bool,
    root: str | None,
    order: str | None,
    include: tuple[str, ...],
    attempt: str | None,
    skip_unknown: bool,
    fmt: str,
    paths: tuple[str, ...],
) -> None:
    """Append compact artifacts to GOAL as one batch: all of them or none.

    PATH is a JSON file, a directory (its *.json, *.ndjson and *.jsonl files,
    recursively, sorted), an NDJSON file (one artifact a line) or - for
    standard input. The kind of each document is detected from its
    schema_version (run, comparison, result, learning-ledger, claim-review,
    and the lifecycle inputs' own schemas: docs/cli.md, "Ingest"); --kind names it
    otherwise (its choices are listed below). With
    --batch-per-directory ROOT each directory of the tree is a batch of its
    own, and the whole tree is still one transaction. A gzip file
    (run.json.gz) is read decompressed. A batch holds at most 5,000 artifacts
    and 64 MiB of documents (docs/cli.md, "Limits"). A new GOAL whose name is
    close to an existing goal's, or a file's (a likely mistake), is refused unless --new-goal.
    --attempt ID puts the batch in that attempt of GOAL instead of where the
    attempt rule places it.
    """
    if bool(root) == bool(paths):
        raise click.UsageError("give PATH... or --batch-per-directory ROOT (one of them)")
    if order is not None and not root:
        raise click.UsageError("--order orders the batches of --batch-per-directory ROOT; PATH... is one batch")
    plan = plan_ingest_tree(goal, root, include=include, order=order or "name") if root else plan_ingest(goal, paths, include=include)
    bar, progress = _progress(plan.file_count)
    with open_ledger(ctx, writes=not dry_run, dry_run=dry_run) as ledger, bar:
        outcome = ledger.ingest_files(
            plan, kind=kind, dry_run=dry_run, source="cli ingest", progress=progress, skip_unknown=skip_unknown, new_goal=new_goal,
            attempt=attempt,
        )
    if not outcome.ok:
        echo_errors([f"{source}: {error}" for source, error in outcome.errors])
        click.echo(json_document(outcome.as_dict()) if fmt == "json" else _refused_markdown(outcome), nl=fmt == "json")
        ctx.exit(1)
    echo_archived_notes(outcome.archived_goals, command="ingest", dry_run=dry_run)
    if fmt == "json":
        echo_pieces(json_listing(outcome.head(), "events", (m.as_dict() for m in outcome.members())))
    else:
        echo_pieces(_markdown(outcome))
    ctx.exit(0)


ingest_command.params.insert(0, goal_option(required=True, help="The goal (stream) the batch is appended to."))


def _batches_markdown(report: dict[str, Any]) -> str:
    if not report["ok"]:  # (refusals are found before the first transaction: nothing was written)
        lines = [f"# ingest-batches refused: nothing written from `{report['file']}`", ""]
        shown = [f"line {e['line']}: {e['error']}" if e["line"] is not None else e["error"] for e in report["errors"]]
        lines += [f"- {line}" for line in capped(shown, total=report["error_count"])]
        return "\n".join(lines) + "\n"
    # The counts are of artifacts, as ingest's: each new batch is an ingest_batch event more, said beside them (so that 5
    # lines of one run "appending" 5 events do not leave `info` counting 10 unexplained).
    batches = report["batches_appended"]
    grouped = f" (artifacts; +{batches} ingest_batch event(s) grouping them: {report['events_appended']} in all)" if batches else ""
    taken_once = [f"line {t['line']}: {t['source']}: {t['reason']}" for t in report["taken_once"]]
    return (
        f"# ingest-batches from `{report['file']}`\n\n"
        f"- batches: {report['batches']} ({batches} new), artifacts: {report['artifacts']}\n"
        f"- appended: {report['appended']} event(s); duplicates: {report['duplicates']}{grouped}; transactions: {report['transactions']}\n"
    ) + "".join(f"- taken once: {line}\n" for line in capped(taken_once, total=report["taken_once_count"]))


@click.command("ingest-batches")
@format_option("markdown", "json")
@jobs_option(
    "Worker processes that validate the lines (parse, normalize, the store's guard); 1: validate here. The batches "
    "are appended by this process alone, in file order, whatever the count, while N-1 others fold what it appends"
)
@click.argument("file", metavar="FILE|-")
@click.pass_context
def ingest_batches_command(ctx: click.Context, fmt: str, jobs: int, file: str) -> None:
    """Append many batches from an NDJSON file (or - for standard input), one batch a line.

    Each line is {"goal_id": "...", "kind": null or a kind, "artifacts": [...]}
    with an optional "source" label and "attempt" (the attempt of the goal the
    batch joins, as ingest --attempt). Every line is validated first: any invalid
    line writes nothing (the lines are named). The batches are then appended in
    transactions of about a thousand artifacts; running the same file again after
    an interruption appends only what is missing. With --jobs N, N worker
    processes validate the lines and N-1 fold what is appended; what is written
    is the same as with --jobs 1.
    """
    with contextlib.ExitStack() as stack:
        path, name = stack.enter_context(input_path(file))
        ledger = stack.enter_context(open_ledger(ctx, writes=True))
        bar = None
        if sys.stderr.isatty():
            bar = stack.enter_context(click.progressbar(length=1, label="appending artifacts", file=sys.stderr))
        outcome = ledger.ingest_batch_file(path, name=name, started=_sized(bar), progress=bar.update if bar else None, jobs=jobs)
    report = outcome.as_dict()
    echo_archived_notes(report["archived_goals"], command="ingest-batches")
    if not outcome.ok:
        echo_errors(
            [f"{report['file']}:{e['line']}: {e['error']}" if e["line"] is not None else e["error"] for e in report["errors"]],
            outcome.error_count,
        )
    if fmt == "json":
        echo_json(report)
    else:
        click.echo(_batches_markdown(report), nl=False)
    ctx.exit(0 if outcome.ok else 1)


def _sized(bar: Any):
    """Sets the bar's length once the validation pass has counted the artifacts."""
    if bar is None:
        return None

    def start(total: int) -> None:
        bar.length = total

    return start


@click.command("retract")
@click.argument("events", metavar="EVENT...", nargs=-1, required=True)
@click.option(
    "--reason",
    cls=OneValueOption,
    once="one retraction keeps one reason",
    required=True,
    help="Why the evidence is withdrawn (kept in the ledger: no local paths or secrets).",
)
@goal_filter(help="The goal that holds the events (default: the one goal they belong to).")
@click.option("--dry-run", is_flag=True, help="Check everything and say what would change; write nothing.")
@format_option("markdown", "json")
@click.pass_context
def retract_command(ctx: click.Context, events: tuple[str, ...], reason: str, goal: str | None, dry_run: bool, fmt: str) -> None:
    """Withdraw mistaken evidence: append a retraction of EVENT... (never deletes).

    EVENT is an event id, a unique prefix of one (at least 4 characters), or
    @POSITION, the global position `history` prints in its `pos` column
    (`benchledger retract @42`). Ids are in `history --wide` and `--format json`.

    From the retraction on, the goal's projections, lifecycle, `runs` and
    `show` read as if the retracted events were absent; `history` shows the
    retraction and marks what it withdrew, and `--as-of` a position before it
    shows the old view.
    """
    with open_ledger(ctx, writes=not dry_run, dry_run=dry_run) as ledger:
        retraction = ledger.retract(list(events), reason, goal_id=goal, source="cli retract", dry_run=dry_run)
    if fmt == "json":
        echo_json(retraction.as_dict())
        return
    if retraction.dry_run:
        click.echo(f"# would retract {len(retraction.retracts)} event(s) of goal `{retraction.goal_id}` (dry run: nothing was written)\n")
    else:
        click.echo(f"# retracted {len(retraction.retracts)} event(s) of goal `{retraction.goal_id}` at position {retraction.position}\n")
    click.echo("\n".join(f"- @{e.position} {e.kind} {e.event_id}: {e.summary}" for e in retraction.events))
    before, after = retraction.lifecycle_before, retraction.lifecycle_after
    click.echo(f"\nreason: {retraction.reason}")
    click.echo(f"lifecycle: {_lifecycle_text(before)} -> {_lifecycle_text(after)}" + _gate_changes(before, after))
    changed = [
        f"{name.replace('_', ' ')} {retraction.verdicts_before.get(name) or 'none'} -> {value or 'none'}"
        for name, value in retraction.verdicts_after.items()
        if value != retraction.verdicts_before.get(name)
    ]
    if changed:
        click.echo(
            "verdicts: " + "; ".join(changed) + "\nnote: the reviews now read the evidence left, as LoopX reviews what it is "
            "given; if a comparison does not stand without what was retracted, retract it too"
        )


def _lifecycle_text(lifecycle: Any) -> str:
    # (LoopX's first blocker is "" once nothing blocks: said as none, as the verdicts are)
    return "none" if lifecycle is None else f"phase {lifecycle.current_phase}, first blocker {lifecycle.first_blocker or 'none'}"


def _gate_changes(before: Any, after: Any) -> str:
    """The gates a retraction opens (+) and closes (-), or "(unchanged)" when the lifecycle stays as it is."""
    if before == after:
        return " (unchanged)"
    old, new = (before and before.gates) or {}, (after and after.gates) or {}
    changed = [f"{'+' if new.get(g) is True else '-'}{g}" for g in dict.fromkeys([*old, *new]) if old.get(g) != new.get(g)]
    return f"; gates {' '.join(changed)}" if changed else ""
