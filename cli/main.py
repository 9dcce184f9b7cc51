"""The ``benchledger`` root command, and the one place errors become exit codes.

A :class:`~benchledger.errors.BenchledgerError` from any command prints
``benchledger: <message>`` on stderr and exits with its ``exit_code``
(docs/cli.md, "Exit codes"). Anything else is a bug: it prints one line naming the
exception and exits 70, never a traceback; ``BENCHLEDGER_DEBUG=1`` lets it
propagate instead (the test suite sets it, so bugs fail tests loudly).
"""

from __future__ import annotations

import errno
import gc
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from benchledger import __version__
from benchledger.cli.output import FORMATS, printable, refuse_unused_root_format

# Every command, by name: "module:attribute" of its click command. A command's module (and with it
# SQLAlchemy, the reducers, the report's templates ...) is imported only when that command runs;
# `--help` imports them all to list them.
COMMANDS = {
    "info": "benchledger.cli.queries:info_command",
    "ingest": "benchledger.cli.ingest:ingest_command",
    "ingest-batches": "benchledger.cli.ingest:ingest_batches_command",
    "retract": "benchledger.cli.ingest:retract_command",
    "goals": "benchledger.cli.queries:goals_command",
    "show": "benchledger.cli.queries:show_command",
    "history": "benchledger.cli.queries:history_command",
    "status": "benchledger.cli.queries:status_command",
    "replay": "benchledger.cli.queries:replay_command",
    "audit": "benchledger.cli.queries:audit_command",
    "import-loopx": "benchledger.cli.interop:import_loopx_command",
    "runs": "benchledger.cli.runs:runs_command",
    "compare": "benchledger.cli.runs:compare_command",
    "export": "benchledger.cli.interop:export_command",
    "import-ndjson": "benchledger.cli.interop:import_ndjson_command",
    "merge": "benchledger.cli.interop:merge_command",
    "report": "benchledger.cli.report:report_command",
    "serve": "benchledger.cli.report:serve_command",
    "benchmark": "benchledger.cli.reviews:benchmark",
    "db": "benchledger.cli.db:db",
    **{name: f"benchledger.cli.proofs:{name.replace('-', '_')}_command" for name in ("keygen", "checkpoint", "checkpoints", "prove", "prove-consistency", "verify-consistency", "publish", "verify")},
}


@contextmanager
def imports_frozen(ctx: click.Context) -> Iterator[None]:
    """The cyclic garbage collector off while a command's modules are imported, and what they made frozen after.

    Only in the console script's own process (``main``): a program calling ``cli``
    itself keeps its collector as it was. Used around loading a command and
    around opening its ledger (``cli.common.open_ledger``), which imports the
    library API and the database backend.

    Importing SQLAlchemy allocates a hundred thousand objects that live as long as
    the process and leaves next to no cyclic garbage, yet the allocations trigger
    collections that walk all of them again and again; merely paused, the collector
    would walk them all once it is back on. Frozen (moved to the permanent
    generation), they are skipped by the command's collections and the
    interpreter's at exit. The collector is back on before the command runs.
    """
    if not getattr(ctx.find_root().command, "whole_process", False):
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


class _Root(click.Group):
    """The root group: loads the invoked command only (:data:`COMMANDS`) and translates errors once for every command (see module docstring)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    # Set by main(): the process ends with its command, so what the command's imports made is frozen
    # (imports_frozen). A program that calls `cli` itself keeps its collector as it was.
    whole_process = False

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute = COMMANDS[name].split(":")
        with imports_frozen(ctx):
            return getattr(importlib.import_module(module), attribute)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        # click 8.4 and later suggest a close name from the commands added to the group, and none are
        # added here (each is loaded when it runs): the suggestion is made from the table instead.
        except getattr(click.exceptions, "NoSuchCommand", ()) as unknown:
            raise type(unknown)(unknown.command_name, possibilities=COMMANDS, ctx=ctx) from None

    def invoke(self, ctx: click.Context) -> object:
        from benchledger.errors import INTERNAL_ERROR, BenchledgerError, redact_url
        from benchledger.ledger.api import writes_committed

        real_stdout, sys.stdout = sys.stdout, _OutputStream(sys.stdout)
        committed_before = writes_committed()
        try:
            try:
                with _terminated_as_interrupted():
                    return super().invoke(ctx)
            finally:
                # What is still buffered is written here, where a closed pipe is told apart (not at the interpreter's exit).
                sys.stdout.flush()
        except _OutputFailed as failure:
            _report_output_failure(ctx, failure.error, writes_committed() - committed_before)
        except KeyboardInterrupt as interruption:
            _report_interruption(ctx, interruption, writes_committed() - committed_before)
        except BenchledgerError as exc:
            click.echo(f"benchledger: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except click.exceptions.NoSuchOption as unknown:
            if unknown.option_name.lstrip("-") in FORMATS:  # (`history --json`: click would suggest a look-alike such as --since)
                unknown.possibilities = [f"--format {unknown.option_name.lstrip('-')}"]
            raise
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            if os.environ.get("BENCHLEDGER_DEBUG"):
                raise
            first_line = redact_url((str(exc).strip().splitlines() or [""])[0])
            click.echo(
                f"benchledger: internal error ({type(exc).__name__}: {first_line}); "
                "please report it (BENCHLEDGER_DEBUG=1 shows the traceback)",
                err=True,
            )
            ctx.exit(INTERNAL_ERROR)
        finally:
            sys.stdout = real_stdout


class _OutputFailed(Exception):
    """Standard output refused a write (a full disk, a closed pipe): ``error`` is the OSError."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _OutputStream:
    """Standard output (text, or its binary ``buffer``) whose write errors are told apart from every other OSError."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            try:
                return self._stream.write(data)
            except UnicodeEncodeError:
                # Text the stream cannot encode (a lone surrogate that a ledger written before its
                # storage guard kept) is printed as its backslash escape instead of failing the command.
                return self._stream.write(printable(data, self._stream.encoding))
        except OSError as exc:
            raise _OutputFailed(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise _OutputFailed(exc) from exc

    @property
    def buffer(self) -> _OutputStream:
        return _OutputStream(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ErrorStream(_OutputStream):
    """Standard error, where a note or an error that cannot be written (a closed pipe, ``2>&1 | head``) is dropped.

    Standard error is the last place to say anything: a failed write there must not turn the command's own
    outcome (its output, its exit status) into an internal error. The descriptor is pointed at the null device,
    so later notes and the interpreter's final flush do not fail again (a failed flush at exit is status 120).
    """

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except _OutputFailed:
            _silence(self._stream)
            return len(data)

    def flush(self) -> None:
        try:
            super().flush()
        except _OutputFailed:
            _silence(self._stream)

    @property
    def buffer(self) -> _OutputStream:
        return _ErrorStream(self._stream.buffer)


def _silence(stream: Any) -> None:
    """Point ``stream``'s descriptor at the null device (no descriptor: an in-process test runner's stream, left as it is)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass


@contextmanager
def _terminated_as_interrupted() -> Iterator[None]:
    """SIGTERM (``kill``, a service manager, a CI timeout) ends a command as Ctrl-C does: the transaction under way rolled
    back, its files and child processes cleaned up, and one line saying what the ledger kept (by default the process
    just died, saying nothing, whatever it had committed)."""
    if threading.current_thread() is not threading.main_thread():  # (only the main thread may set a handler)
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _report_interruption(ctx: click.Context, interruption: KeyboardInterrupt, committed: int) -> None:
    """Ctrl-C (or SIGTERM): one line saying what the ledger kept, exit 130 (not click's "Aborted!" and 1, which reads as
    "a check said no").

    The transaction under way rolls back as the interruption unwinds it, so what
    stays is exactly what committed before. A write that commits in steps
    (``ingest-batches``) says it in its own terms, as the interruption's text.
    """
    from benchledger.errors import INTERRUPTED

    if str(interruption):
        click.echo(f"benchledger: interrupted; {interruption}", err=True)
    elif committed:
        click.echo(f"benchledger: interrupted; the {committed} transaction(s) it committed are kept, nothing after them was written", err=True)
    else:
        click.echo("benchledger: interrupted; nothing was written", err=True)
    if getattr(ctx.find_root().command, "whole_process", False):
        # What is left is the interpreter's exit, which resets a Python-handled SIGINT to the default
        # action: a SIGINT still pending then killed the process after this line (status -2, not 130;
        # seen once in CI, workers running). An ignored SIGINT stays ignored, and a pending one is
        # dropped. (Only as the console script: in a caller's process the disposition is the caller's.)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    ctx.exit(INTERRUPTED)


# The status a shell reports for `git log | head` or `grep … | head`: killed by SIGPIPE, 128 + 13.
CLOSED_PIPE = 141


def _report_output_failure(ctx: click.Context, exc: OSError, committed: int) -> None:
    """A report that cannot be printed: a warning once the command committed its change (``committed`` transactions), else an error.

    A reader that closed the pipe (``benchledger history … | head``, EPIPE) wanted
    no more: the command ends quietly as git and grep do, exit 141 (0 when it
    committed a change, which is there). Standard output is then pointed at the
    null device, so the interpreter's final flush of what is still buffered does
    not fail again. (docs/cli.md, "Exit codes", states the rule.)
    """
    from benchledger.errors import USAGE

    reason = exc.strerror or str(exc)
    _silence(sys.stdout)
    if exc.errno == errno.EPIPE:
        ctx.exit(0 if committed else CLOSED_PIPE)
    if committed:
        click.echo(
            f"benchledger: warning: the report could not be written to standard output ({reason}); "
            "the change it reports was committed to the ledger (`benchledger history` shows it)",
            err=True,
        )
        ctx.exit(0)
    click.echo(f"benchledger: cannot write to standard output ({reason}); the output is incomplete", err=True)
    ctx.exit(USAGE)


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--database-url",
    envvar="BENCHLEDGER_DATABASE_URL",
    metavar="URL",
    help="SQLAlchemy URL of the ledger (env BENCHLEDGER_DATABASE_URL). "
    "Default: the embedded SQLite ledger in the per-user data directory.",
)
@click.option(
    "--format",
    "global_format",
    type=click.Choice(FORMATS),
    default=None,
    help="Output format of the command that follows, where it offers that format (a command's own --format wins).",
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _print_version(ctx) if value and not ctx.resilient_parsing else None,
    help="Name the build (version, commit when run from a git checkout, schema revision) and exit.",
)
@click.pass_context
def cli(ctx: click.Context, database_url: str | None, global_format: str | None) -> None:
    """benchledger: the durable, auditable ledger of agent-benchmark evidence."""
    ctx.ensure_object(dict)
    ctx.obj["database_url"] = database_url
    ctx.obj["format"] = global_format
    if ctx.invoked_subcommand is not None:
        refuse_unused_root_format(ctx, global_format, cli.get_command(ctx, ctx.invoked_subcommand))


def build_description() -> str:
    """``benchledger 0.1.0 (commit 376fa2c1d2e3, schema revision 0005)``: the commit only where it is known (a git checkout)."""
    from benchledger.ledger.api import schema_head

    commit = _checkout_commit()
    return f"benchledger {__version__} ({f'commit {commit}, ' if commit else ''}schema revision {schema_head()})"


def _checkout_commit() -> str | None:
    """The commit of the checkout this benchledger runs from (``+modified`` when its tracked files differ), else None.

    Only when the checkout is this package's own (its ``src/benchledger`` is
    this module's package): a wheel installed in a venv inside another
    project's repository must not name that project's commit.
    """
    import subprocess
    from pathlib import Path

    import benchledger

    package = Path(benchledger.__file__).resolve().parent  # (a strict editable install links to the checkout)

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(package), *args], capture_output=True, text=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() / "src" / "benchledger" != package:
        return None
    commit = git("rev-parse", "--short=12", "HEAD")
    if commit is None:
        return None
    return commit + ("+modified" if git("status", "--porcelain", "--untracked-files=no") else "")


def _print_version(ctx: click.Context) -> None:
    click.echo(build_description())
    ctx.exit(0)


def main() -> None:
    """The ``benchledger`` console script (and ``python -m benchledger``)."""
    cli.whole_process = True
    # (for the whole process, not only the command: click prints a usage error after the command's invoke has ended)
    sys.stderr = _ErrorStream(sys.stderr)
    try:
        cli(prog_name="benchledger")
    finally:
        # The interpreter's teardown ends with full garbage collections that walk every object
        # still alive: about 30 ms of a one-artifact ingest when nothing is frozen. The modules the
        # command imported as it ran (the database driver, the reducers) are frozen here, as its own
        # modules were once imported (reference counting still frees what the teardown drops; cycles
        # among them are left to the exiting process, unfinalized). The command has closed its
        # ledger and its files by now, so nothing is left to flush.
        gc.freeze()
