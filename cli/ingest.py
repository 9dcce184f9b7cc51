"""``benchledger ingest``: append a run's compact artifacts to a goal as one batch."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from benchledger.cli.common import goal_option, open_ledger
from benchledger.cli.output import format_option
from benchledger.errors import SHOWN_PROBLEMS, capped
from benchledger.projections.artifacts import KINDS


def _progress(files: list[str]):
    """A progress bar on a terminal for large batches; silent otherwise."""
    if len(files) > 200 and sys.stderr.isatty():
        return click.progressbar(files, label="reading", file=sys.stderr)
    return _Quiet(files)


class _Quiet:
    def __init__(self, items: list[str]) -> None:
        self.items = items

    def __enter__(self) -> list[str]:
        return self.items

    def __exit__(self, *exc: Any) -> None:
        return None


# What a dry run says instead of an outcome: nothing it reports has happened.
_WOULD = {"appended": "would append", "duplicate": "duplicate"}


def _markdown(report: dict[str, Any]) -> str:
    if not report["ok"]:
        lines = [f"# Ingest refused: nothing written to `{report['goal_id']}`", ""]
        lines += [f"- {line}" for line in capped([f"{e['source']}: {e['error']}" for e in report["errors"]])]
        return "\n".join(lines) + "\n"
    dry_run = report["dry_run"]
    status = (lambda s: _WOULD[s]) if dry_run else (lambda s: s)  # noqa: E731
    lines = [
        f"# Ingest into `{report['goal_id']}`" + (" (dry run: nothing was written)" if dry_run else ""),
        "",
        f"- {'would append' if dry_run else 'appended'}: {report['appended_count']} event(s); "
        f"{'already in the goal' if dry_run else 'duplicates'}: {report['duplicate_count']}",
        f"- batch: `{report['batch_event_id']}` ({status(report['batch_status'])})",
        "",
    ]
    for e in report["events"]:
        where = f"#{e['position']} v{e['stream_version']}"
        lines.append(f"- {status(e['status']):12} {e['kind']:20} {where:12} {e['source']}")
    return "\n".join(lines) + "\n"


@click.command("ingest")
@click.option("--kind", type=click.Choice(KINDS), help="Kind of every document (needed for lifecycle inputs and adapter invocations, which carry no reliable schema).")
@click.option("--dry-run", is_flag=True, help="Validate and report what would be appended, without writing.")
@format_option("markdown", "json")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.pass_context
def ingest_command(ctx: click.Context, goal: str, kind: str | None, dry_run: bool, fmt: str, paths: tuple[str, ...]) -> None:
    """Append compact artifacts to GOAL as one batch: all of them or none.

    PATH is a JSON file, a directory (its *.json, *.ndjson and *.jsonl files,
    recursively, sorted), an NDJSON file (one artifact a line) or - for
    standard input. The kind of each document is detected from its
    schema_version (run, comparison, result, learning-ledger, claim-review);
    --kind names it otherwise (see the choices above).
    """
    from benchledger.ledger.application import NothingToIngest, ingest
    from benchledger.ledger.intake.artifacts import collect_artifacts
    from benchledger.ledger.intake.files import expand_paths
    from benchledger.ledger.storage_guard import UnstorableContent

    files = expand_paths(list(paths))
    with _progress(files) as progress:
        artifacts, sources, errors = collect_artifacts(progress, kind)
    if not artifacts and not errors:
        raise NothingToIngest(
            f"{', '.join(paths)}: no artifact to ingest (a folder is read for *.json, *.ndjson and *.jsonl); "
            f"nothing was written, goal {goal!r} was not created"
        )
    if not errors:
        with open_ledger(ctx) as ledger:
            try:
                outcome = ingest(ledger, goal, artifacts, source="cli ingest", dry_run=dry_run)
            except UnstorableContent as refused:  # reported like the files intake refused
                errors = refused.problems
    if errors:
        report = {
            "ok": False,
            "goal_id": goal,
            "error_count": len(errors),
            "errors": [{"source": s, "error": e} for s, e in errors[:SHOWN_PROBLEMS]],
        }
        for line in capped([f"{source}: {error}" for source, error in errors]):
            click.echo(f"error: {line}", err=True)
    else:
        report = {
            "ok": True,
            "dry_run": dry_run,
            "goal_id": goal,
            "batch_event_id": outcome.batch.event.event_id,
            "batch_status": outcome.batch.status,
            "appended_count": outcome.appended_count,
            "duplicate_count": outcome.duplicate_count,
            "events": [
                {
                    "event_id": m.event.event_id,
                    "position": m.event.position,
                    "stream_version": m.event.stream_version,
                    "kind": m.event.kind,
                    "schema_version": m.event.schema_version,
                    "status": m.status,
                    "source": source,
                }
                for m, source in zip(outcome.members, sources)
            ],
        }
    click.echo(json.dumps(report, indent=2, ensure_ascii=False) if fmt == "json" else _markdown(report), nl=fmt == "json")
    ctx.exit(0 if report["ok"] else 1)


ingest_command.params.insert(0, goal_option(required=True, help="The goal (stream) the batch is appended to."))
