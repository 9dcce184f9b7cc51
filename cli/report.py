"""``benchledger report`` (a static site) and ``benchledger serve`` (the same pages over HTTP, live, read-only).

Both import their libraries (Jinja2, Plotly: the ``report`` extra) inside the
command, so every other command starts without them.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Any

import click

from benchledger.cli.common import open_ledger, with_goals
from benchledger.errors import InvalidInput

REPORT_EXTRA = "pip install 'benchledger[report]'"
INCLUDE_ARCHIVED_HELP = "Index archived goals too, marked (`goals archive`); without it they are left out unless named by --goal."


def _bar(length: int, label: str) -> Any:
    return click.progressbar(length=length, label=label, file=sys.stderr)


def _web() -> Any:
    """The presentation modules, or a clear error naming the extra to install."""
    try:
        from benchledger.cli.web import pages, server
    except ModuleNotFoundError as exc:
        raise InvalidInput(f"this command needs {exc.name}, from the report extra: {REPORT_EXTRA}") from exc
    return pages, server


def _combined(audits: list[Any], goals: list[str]) -> dict[str, Any]:
    """The audits of the goals named (``scope``, each goal's digest in ``digests``) as one result the index shows; the ledger's when none is named."""
    if not goals:
        return {**audits[0].as_dict(), "scope": None}
    shown = [audit.as_dict() for audit in audits]
    return {
        "ok": all(a["ok"] for a in shown),
        "events_checked": sum(a["events_checked"] for a in shown),
        "goals_checked": sum(a["goals_checked"] for a in shown),
        "projections_checked": sum(a["projections_checked"] for a in shown),
        "problems": [p for a in shown for p in a["problems"]],
        "problem_count": sum(a["problem_count"] for a in shown),
        "scope": goals,
        "digests": {goal: a["digest"] for goal, a in zip(goals, shown, strict=True)},
    }


@with_goals(help="Only this goal's pages (repeatable; default: every goal); the index then shows the audit of these goals only.")
@click.command("report")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder to write the site into: a new or empty one, or an earlier report (replaced whole); anything else is refused.")
@click.option("--include-archived", "--all", "include_archived", is_flag=True, help=INCLUDE_ARCHIVED_HELP)
@click.pass_context
def report_command(ctx: click.Context, goals: tuple[str, ...], output: Path, include_archived: bool) -> None:
    """Write an offline HTML report: an index of the goals (or those named by --goal) and a page per goal.

    Open OUTPUT/index.html in a browser: the pages load nothing from the
    network (plotly.js is written once into OUTPUT/assets). The report is built
    beside OUTPUT and then put in its place, with a .benchledger-report file
    that lets the next report replace it. With --goal, the index shows the audit
    of those goals, not of the whole ledger (`benchledger audit` proves that).
    A comparison's own review pages are written for those a goal's first page
    shows; `benchledger serve` shows every one.
    """
    pages, _ = _web()
    from datetime import UTC, datetime

    terminal = sys.stderr.isatty()  # progress on a terminal only: a log or a pipe gets the last line alone
    # One snapshot: every page, and the audit the index shows, describe the same moment.
    with open_ledger(ctx) as ledger, ledger.snapshot() as view, ExitStack() as bars:
        site = pages.Site(view, list(goals), lambda: result, include_archived=include_archived, written=True)
        # The audit of what the report shows: the goals named (`audit --goal G` each, as the index says), else the
        # whole ledger's (`audit --jobs 1`, as `serve` runs it). A report of one goal costs what that goal holds.
        with _bar(view.event_count(), "auditing") if terminal else nullcontext() as auditing:
            audits = [view.audit(goal_id=goal, progress=auditing.update if auditing else None) for goal in goals] if goals else [
                view.audit(progress=auditing.update if auditing else None)
            ]
        result = {
            **_combined(audits, list(goals)), "checked_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "stale": False,
        }
        writing: list[Any] = []

        def progress(done: int, total: int) -> None:
            if not writing:
                writing.append(bars.enter_context(_bar(total, "writing pages")))
            writing[0].update(1)

        try:
            written = pages.write_site(site, output, progress if terminal else None)
        except OSError as exc:  # a file in the folder's path, a read-only or full disk: the user's to fix, not a bug
            raise InvalidInput(f"cannot write the report into {output}: {exc.strerror or exc} ({exc.filename})") from exc
    click.echo(f"wrote {written} files into {output}; open {output / 'index.html'}")


@with_goals(help="Only this goal's pages (repeatable; default: every goal).")
@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; anything but loopback is warned about.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option("--include-archived", "--all", "include_archived", is_flag=True, help=INCLUDE_ARCHIVED_HELP)
@click.pass_context
def serve_command(ctx: click.Context, goals: tuple[str, ...], host: str, port: int, include_archived: bool) -> None:
    """Serve the report's pages live from the ledger, read-only (GET and HEAD only).

    Every reload reads the ledger again, so events ingested meanwhile show up.
    """
    _, server = _web()
    if not server.is_loopback(host):
        click.echo(f"benchledger: warning: serving on {host}: anyone who can reach it can read this ledger", err=True)
    with open_ledger(ctx) as ledger:
        try:
            server.serve(ledger, list(goals), host, port, announce=lambda line: click.echo(line), include_archived=include_archived)
        except OSError as exc:
            raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc

