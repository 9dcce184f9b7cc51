"""Options and helpers shared by the commands: opening the ledger, the goal option.

Every command takes the goal the same way: ``--goal GOAL`` (repeatable where a
command takes several: ``report``, ``serve``). The older spellings still work
and are hidden from ``--help``: ``--goal-id`` (LoopX's ``baseline-failure-gate``
flag, accepted everywhere) and, for ``history`` and ``show``, the goal as the
first argument (for ``report`` and ``serve``, the goals as arguments). ``--goal`` completes goal names from
the ledger in a shell that loaded ``_BENCHLEDGER_COMPLETE=bash_source benchledger``.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click
from click.shell_completion import CompletionItem

from benchledger.errors import InvalidInput, capped
from benchledger.ledger.api import Ledger, is_goal_id
from benchledger.projections.attempts import ATTEMPT_ID_SYNTAX, valid_attempt_id

GOAL_ALIASES = ("--goal-id",)
# A new goal whose name is close to an existing goal's, or a file's, is refused as a likely mistake (docs/cli.md, "New goals").
NEW_GOAL_HELP = "GOAL is meant to be a new goal, even though its name is close to an existing goal's or a file's (else refused as a likely mistake)."
# What creates a goal: the next step a listing of no goal gives (`goals`, the report's and serve's index).
FIRST_GOAL_STEP = "benchledger ingest --goal GOAL FILE..."


def _validate_goal(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not is_goal_id(value):
        raise click.BadParameter(
            f"{value!r}: use 1-121 letters, digits, '_', '.', ':' or '-', starting with a letter or digit"
        )
    return value


def validate_goal_ids(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """A callback for a GOAL... argument: each one a valid goal id."""
    for value in values:
        _validate_goal(ctx, param, value)
    return values


def complete_goal_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The ledger's goal names starting with ``incomplete``; nothing when the ledger cannot be read.

    A completion runs on every Tab press: it never creates the embedded ledger
    and never prints an error into the user's command line.
    """
    from benchledger.ledger.api import open_existing

    try:
        ledger = open_existing(ctx.find_root().params.get("database_url"))
        if ledger is None:
            return []
        with ledger:
            names = ledger.goal_ids()
    except Exception:  # any failure (no server, not a ledger, old schema) completes nothing, silently
        return []
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


class AliasedOption(click.Option):
    """An option whose ``hidden_aliases`` work on the command line but stay out of ``--help``."""

    def __init__(self, *args: Any, hidden_aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = hidden_aliases

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        every = self.opts
        self.opts = [o for o in every if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = every


class OneValueOption(click.Option):
    """An option a command takes once: given twice with different values it is refused, not the last one taken.

    Click keeps the last value of a repeated option silently: `export --goal a --goal b` exported b alone,
    `ingest --kind preflight a.json --kind launch b.json` stored both as launches. ``once`` says why one value.
    """

    def __init__(self, *args: Any, callback: Any = None, once: str = "this command takes one", **kwargs: Any) -> None:
        super().__init__(*args, multiple=True, **kwargs)
        self.one_callback, self.once = callback, once

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        given = tuple(dict.fromkeys(super().process_value(ctx, value)))
        if len(given) > 1:
            shown = ", ".join(map(repr, given))
            raise click.BadParameter(f"{self.opts[0]} given twice ({shown}): {self.once}", ctx=ctx, param=self)
        value = given[0] if given else None
        return self.one_callback(ctx, self, value) if self.one_callback else value


class _OneGoalOption(AliasedOption, OneValueOption):
    """``--goal`` of a command that takes one goal (:class:`OneValueOption`), with its hidden aliases."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, once="this command takes one goal", **kwargs)


def _goal_declaration(*, required: bool = False, help: str, name: str = "goal", validate: bool = True) -> tuple[list[str], dict[str, Any]]:
    return ["--goal", *GOAL_ALIASES, name], {
        "hidden_aliases": GOAL_ALIASES,
        "metavar": "GOAL",
        "required": required,
        "callback": _validate_goal if validate else None,
        "shell_complete": complete_goal_names,
        "help": help,
    }


def goal_option(**settings: Any) -> click.Option:
    """``--goal GOAL`` (hidden alias ``--goal-id``), completing goal names, as a parameter to add to a command.

    Settings: ``help``, ``required``, ``name`` (the parameter's name) and
    ``validate=False``, which leaves the id to the command
    (baseline-failure-gate reports a bad one in its review payload, and takes the last
    of a repeated one, as LoopX does). Otherwise two different goals are refused.
    """
    declarations, attributes = _goal_declaration(**settings)
    return _one_goal_class(settings)(declarations, **attributes)


def goal_filter(**settings: Any) -> Any:
    """:func:`goal_option` as a decorator (same settings)."""
    declarations, attributes = _goal_declaration(**settings)
    return click.option(*declarations, cls=_one_goal_class(settings), **attributes)


def _one_goal_class(settings: dict[str, Any]) -> type[AliasedOption]:
    return _OneGoalOption if settings.get("validate", True) else AliasedOption


class _HiddenArgument(click.Argument):
    """A positional argument kept for compatibility: accepted, not shown in usage or help."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


def with_goal(*, help: str, positional_alias: bool = False) -> Any:
    """Decorate a command with a required ``--goal``; ``positional_alias`` also accepts it as the first argument."""

    def decorate(command: click.Command) -> click.Command:
        option = goal_option(help=help)
        command.params.insert(0, option)
        if not positional_alias:
            option.required = True
            return command
        command.params.insert(0, _HiddenArgument(["goal_argument"], required=False, callback=_validate_goal))
        callback = command.callback

        @functools.wraps(callback)
        def merged(*args: Any, goal: str | None, goal_argument: str | None, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            if goal is not None and goal_argument is not None and goal != goal_argument:
                raise click.UsageError(f"two goals given: {goal_argument!r} and --goal {goal!r}", ctx)
            if goal is None and goal_argument is None:
                raise click.MissingParameter(ctx=ctx, param=option)
            return callback(*args, goal=goal or goal_argument, **kwargs)

        command.callback = merged
        return command

    return decorate


def with_goals(*, help: str) -> Any:
    """Decorate a command with a repeatable ``--goal``; the older ``GOAL...`` arguments stay a hidden alias.

    The command receives ``goals``: every goal named either way, once each, in the order given.
    """

    def decorate(command: click.Command) -> click.Command:
        declarations, attributes = _goal_declaration(help=help, name="goal_options")
        command.params.insert(0, AliasedOption(declarations, multiple=True, **{**attributes, "callback": validate_goal_ids}))
        command.params.insert(0, _HiddenArgument(["goal_arguments"], nargs=-1, required=False, callback=validate_goal_ids))
        callback = command.callback

        @functools.wraps(callback)
        def merged(*args: Any, goal_options: tuple[str, ...], goal_arguments: tuple[str, ...], **kwargs: Any) -> Any:
            return callback(*args, goals=tuple(dict.fromkeys((*goal_arguments, *goal_options))), **kwargs)

        command.callback = merged
        return command

    return decorate


def attempt_id(value: str | None) -> str | None:
    """An ``--attempt`` value (``ingest``, ``history``), refused before the ledger is opened unless it is an attempt id."""
    if value is not None and not valid_attempt_id(value):
        raise click.BadParameter(f"{value!r} is not an attempt id: {ATTEMPT_ID_SYNTAX}")
    return value


def echo_errors(lines: list[str], count: int | None = None) -> None:
    """``lines`` on stderr, one ``error:`` line each: the first :data:`~benchledger.errors.SHOWN_PROBLEMS`,
    then how many more (of ``count`` when ``lines`` holds only the first of them)."""
    for line in capped(lines, total=count):
        click.echo(f"error: {line}", err=True)


def as_of_after_last_event_text(as_of: str, last: Mapping[str, Any]) -> str:
    """What an answer says when ``--as-of`` is after the ledger's last event (``last``): it is the current state."""
    return f"--as-of {as_of} is after the ledger's last event (position {last['position']}): this is the current state, as without --as-of"


def echo_as_of_after_last_event(as_of: str | None, last: Mapping[str, Any] | None) -> None:
    """One note on stderr when ``--as-of`` is after the ledger's last event (``last``, as the answer's
    ``as_of_after_last_event`` gives it): a time to come, or a position not reached, reads what is there now. For the
    formats whose output has no line to say it in (JSON, CSV): a table and markdown say it where they name the as-of."""
    if as_of is not None and last is not None:
        click.echo(f"benchledger: note: {as_of_after_last_event_text(as_of, last)}", err=True)


def echo_archived_notes(goal_ids: Iterable[str], *, command: str, dry_run: bool = False) -> None:
    """One note on stderr for each archived goal a write adds evidence to (``IngestOutcome.archived_goals``): the
    listings that leave the goal out leave that evidence out too, so the writer is told, with the way to see it."""
    appended = "would append" if dry_run else "appended"
    for goal in goal_ids:
        click.echo(
            f"benchledger: note: goal '{goal}' is archived: `goals` and the report's index (its pass rates and comparisons) "
            f"leave it out, and with it what this {command} {appended} (`goals --include-archived` and `report "
            f"--include-archived` show it; `goals unarchive {goal}` lists it again)",
            err=True,
        )


@contextmanager
def input_path(file: str) -> Iterator[tuple[str, str]]:
    """``FILE|-`` as ``(a path to read, more than once, the name messages give it)``: ``-`` is standard input, spooled to a temporary file.

    (``import-ndjson -`` reads its input twice; ``ingest-batches -`` reads a regular file.)
    """
    if file != "-":
        yield file, file
        return
    with tempfile.NamedTemporaryFile(prefix="benchledger-stdin-", suffix=".ndjson") as spool:
        shutil.copyfileobj(sys.stdin.buffer, spool, 1024 * 1024)
        spool.flush()
        yield spool.name, "<stdin>"


# The CPUs this process may run on (its affinity, where the system says): the default of every --jobs. More workers
# than JOBS_PER_CPU a CPU only contend for the same CPUs and database connections, and each is started at once.
CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
JOBS_PER_CPU = 4


class _WorkerCount(click.IntRange):
    # click names an IntRange "integer range", and says "'abc' is not a valid integer range" of a typo, as if a
    # range such as 1-4 were wanted: the value is one count.
    name = "integer"

    def _describe_range(self) -> str:
        # (a refusal names the limit's reason: "64 is not in the range 1<=x<=8" alone reads as an arbitrary 8)
        return f"{super()._describe_range()}, at most {JOBS_PER_CPU}x the CPU count ({CPUS} CPU(s) this process may run on)"


def jobs_option(help: str):
    """``--jobs N`` worker processes (default: one per CPU, at most :data:`JOBS_PER_CPU` per CPU); ``help`` says what they do."""
    return click.option(
        "--jobs",
        type=_WorkerCount(min=1, max=JOBS_PER_CPU * CPUS),
        metavar="N",
        default=CPUS,
        show_default="the CPU count",
        help=f"{help}.",  # (the range click shows after it names the limit: _WorkerCount)
    )


@contextmanager
def open_ledger(ctx: click.Context, *, writes: bool = False, any_revision: bool = False, dry_run: bool = False) -> Iterator[Ledger]:
    """Open the ledger the root options name (its errors are reported by ``cli.main``).

    Creating a SQLite ledger is said on stderr: a mistyped
    ``BENCHLEDGER_HOME`` or URL would otherwise look like a ledger that lost its
    goals. A command that only reads creates only the embedded default: a file a
    URL names that does not exist is refused (exit 2), nothing created.
    A SQLite ledger at an older schema revision is upgraded by a command that
    ``writes`` (saying so on stderr, with the copy of the file kept as it was)
    and refused by one that only reads, naming ``db upgrade``: a shared file is
    never changed by a read (docs/configuration.md). ``any_revision``: opened at
    whatever revision it is (``info``, which reports it). A command that
    ``writes`` pointed at a PostgreSQL hot standby is refused before it reads
    its input, naming the standby (docs/deployment.md). A ``dry_run`` writes nothing, so it creates nothing either:
    before the embedded default exists, it is judged against an empty ledger (said on stderr).
    """
    from benchledger.cli.main import imports_frozen

    url = (ctx.find_root().obj or {}).get("database_url")
    # (opening imports the library API and the database backend: SQLAlchemy alone makes a hundred
    # thousand objects that the collector would walk again and again while they are made)
    with imports_frozen(ctx):
        from benchledger.ledger import api

        older = "as-is" if any_revision else "upgrade" if writes else "refuse"
        ledger = api.open(url, older_schema=older, create=writes, create_default=not dry_run)
    if dry_run and not ledger.persistent and url is None:
        click.echo(
            "benchledger: note: no ledger yet (the default one is created by the first command that writes): "
            "this dry run is judged against an empty ledger and creates none",
            err=True,
        )
    elif not ledger.persistent:
        # `sqlite:///$LEDGER` with LEDGER unset: every command would "succeed" on a ledger that ends with the process.
        ledger.close()
        raise InvalidInput(
            f"{url} is an in-memory database: nothing written there outlives the command; "
            "name a file (sqlite:///PATH) or a server (postgresql://USER@HOST/DATABASE)"
        )
    if ledger.created is not None:
        click.echo(f"benchledger: note: created a new, empty ledger at {ledger.created} (`benchledger info` names the ledger in use)", err=True)
    if ledger.upgraded is not None:
        click.echo(f"benchledger: note: {ledger.upgraded.notice()}", err=True)
    with ledger:
        if writes:
            ledger.refuse_writes_on_standby()
        yield ledger


def standby_lag_text(replayed_at: str | None, lag_seconds: float | None) -> str:
    """How far a hot standby is behind its primary, in words (``info``, ``serve``)."""
    if replayed_at is None:
        return "nothing replayed from its primary since it started"
    behind = "caught up with what its primary sent" if lag_seconds == 0 else f"{lag_seconds:.1f} s behind its primary"
    return f"{behind} (last replayed commit {replayed_at})"
