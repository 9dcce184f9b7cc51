"""``benchledger report`` (a static site) and ``benchledger serve`` (the same pages over HTTP, live, read-only).

Both import their libraries (Jinja2, Plotly: the ``report`` extra) inside the
command, so every other command starts without them.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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


def _combined(audits: list[dict[str, Any]], goals: list[str]) -> dict[str, Any]:
    """The audits of the goals named (``scope``, each goal's digest in ``digests``) as one result the index shows; the ledger's when none is named."""
    if not goals:
        return {**audits[0], "scope": None}
    return {
        "ok": all(a["ok"] for a in audits),
        "events_checked": sum(a["events_checked"] for a in audits),
        "goals_checked": sum(a["goals_checked"] for a in audits),
        "projections_checked": sum(a["projections_checked"] for a in audits),
        # (all of one kind: the report runs every one history-only, or every one full)
        "projections": "checked" if all(a["projections"] == "checked" for a in audits) else "not checked",
        "problems": [p for a in audits for p in a["problems"]],
        "problem_count": sum(a["problem_count"] for a in audits),
        "scope": goals,
        "digests": {goal: a["digest"] for goal, a in zip(goals, audits, strict=True)},
    }


def _moment(ledger: Any, goals: list[str]) -> tuple[int, ...]:
    """Where what an audit of ``goals`` (none: the whole ledger) reads ends: each goal's last version, else the ledger's last position."""
    return tuple(ledger.event_count(goal) for goal in goals) if goals else (ledger.last_position(),)


@contextmanager
def _stopping(audits: Any) -> Iterator[Any]:
    """``audits``, stopped (their child killed) when the report ends, whichever way: a report that failed leaves no audit running."""
    try:
        yield audits
    finally:
        audits.stop()


def _busy(output: Path) -> str:
    return (
        f"cannot write the report into {output}: it is a mount point (or a folder the system holds), which the report cannot "
        f"take the place of (it is built beside the folder, then moved there): name a folder inside it, e.g. {output / 'report'}"
    )


def _refuse_mount_point(output: Path) -> None:
    """A mount point (an empty volume, or one holding an earlier report) is refused before anything is read or built, in
    words: the build's final rename onto it would fail with the system's "Device or resource busy" after every page was
    written. One holding anything else (``/``) is left to the refusal of a folder that is not a report's."""
    from benchledger.cli.web.report_folder import MARKER

    if not (output.is_dir() and not output.is_symlink() and os.path.ismount(output)):
        return
    try:
        with os.scandir(output) as entries:
            names = {entry.name for entry in entries}
    except OSError:
        return  # (an unreadable folder: the report's own check says so)
    if not names or MARKER in names:
        raise InvalidInput(_busy(output))


@with_goals(help="Only this goal's pages (repeatable; default: every goal); the index then shows the audit of these goals only.")
@click.command("report")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder to write the site into: a new or empty one, or an earlier report (replaced whole); anything else is refused.")
@click.option("--include-archived", "--all", "include_archived", is_flag=True, help=INCLUDE_ARCHIVED_HELP)
@click.option("--full-audit", is_flag=True, help="Show the full audit on the index (`benchledger audit`: every projection refolded too), "
              "not the history-only one (`audit --history-only`) the report shows by default: it refolds every event audited again.")
@click.pass_context
def report_command(ctx: click.Context, goals: tuple[str, ...], output: Path, include_archived: bool, full_audit: bool) -> None:
    """Write an offline HTML report: an index of the goals (or those named by --goal) and a page per goal.

    Open OUTPUT/index.html in a browser: the pages load nothing from the
    network (plotly.js is written once into OUTPUT/assets). The report is built
    beside OUTPUT and then put in its place, with a .benchledger-report file
    that lets the next report replace it. With --goal, the index shows the audit
    of those goals, not of the whole ledger (`benchledger audit` proves that).
    A comparison's own review pages are written for those a goal's first page
    shows; `benchledger serve` shows every one. The audit runs in a child
    process while the pages are written; the index is written once it is done.
    It checks the history (`audit --history-only`: hashes, chains, the Merkle
    log, the digest) and does not refold the projections, as the index says;
    --full-audit shows the full audit (`benchledger audit`, as `serve` runs it).
    """
    pages, _ = _web()
    _refuse_mount_point(output)
    from datetime import UTC, datetime

    from benchledger.cli.web.audit_child import AuditsBeside

    terminal = sys.stderr.isatty()  # progress on a terminal only: a log or a pipe gets the last line alone
    named = list(goals)
    audit: dict[str, Any] = {}
    # One snapshot for every page. The audit the index shows (of the goals named, as the index says, else the whole
    # ledger's; of its history alone unless --full-audit, as the index says) runs in a child process while the other
    # pages are written, the index last.
    with open_ledger(ctx) as ledger, ledger.snapshot() as view, ExitStack() as bars:
        site = pages.Site(view, named, lambda: audit, include_archived=include_archived, written=True)  # (unknown goals fail here)
        shown = _moment(view, named)
        if terminal:
            what = "auditing" if full_audit else "auditing the history of"
            click.echo(f"{what} {'goal(s) ' + ', '.join(named) if named else 'the ledger'} in a child process while the pages are written", err=True)
        audits = bars.enter_context(_stopping(AuditsBeside(ledger.url, named, history_only=not full_audit)))
        writing: list[Any] = []

        def progress(done: int, total: int) -> None:
            if not writing:
                writing.append(bars.enter_context(_bar(total, "writing pages")))
            writing[0].update(1)

        def audit_needed() -> None:
            """Wait for the audit (the index's pages are next), saying so on a terminal."""
            if writing and not audits.done():
                writing[0].label = "waiting for the audit"
                writing[0].render_progress()
            results = audits.results()
            if writing:
                writing[0].label = "writing the index"
            audit.update(_combined(results, named), checked_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), stale=False)
            # The child read the ledger as it began, after the pages' snapshot: the same moment unless events were
            # recorded in what it audits meanwhile (the index then says so: an audit reads the ledger as it is).
            audit["moved"] = _moment(ledger, named) != shown

        try:
            written = pages.write_site(site, output, progress if terminal else None, audit_needed)
        except OSError as exc:  # a file in the folder's path, a read-only or full disk: the user's to fix, not a bug
            if exc.errno == errno.EBUSY:  # (a folder mounted there meanwhile, or one the system holds)
                raise InvalidInput(_busy(output)) from exc
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
    The index shows the full audit (`benchledger audit`: every projection
    refolded too), run in the background in a child process, again whenever
    the ledger grew; until it is done the index says it is running. On a
    PostgreSQL hot standby the start line and the index show the replica's lag.
    It runs until stopped: Ctrl-C (or SIGTERM) ends it, saying "stopped", exit 0.
    """
    _, server = _web()
    warned: list[bool] = []

    def announce(line: str) -> None:
        # (the warning once the socket listens: a host it cannot listen on was warned of as "serving", then refused)
        if not warned and not server.is_loopback(host):
            click.echo(f"benchledger: warning: serving on {host}: anyone who can reach it can read this ledger", err=True)
        warned.append(True)
        click.echo(line)

    with open_ledger(ctx) as ledger:
        try:
            server.serve(ledger, list(goals), host, port, announce=announce, include_archived=include_archived)
        except OSError as exc:
            raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc

