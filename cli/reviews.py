"""``benchledger benchmark …``: the eight LoopX-compatible review commands.

Each command parses its flags, reads and normalizes its input files in the
reference's order (the first refused input produces the review's error
payload), and hands the artifacts to :func:`run_review`, which evaluates the
review through a ledger and prints the payload.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Callable
from typing import Any

import click

from benchledger.cli.common import NEW_GOAL_HELP, echo_archived_notes, goal_option, open_ledger
from benchledger.cli.output import format_option, json_document
from benchledger.ledger.api import evaluate_review, read_json
from benchledger.projections import REVIEW_MODULES, review_module
from benchledger.projections.artifacts import Artifact, IntakeError, NotCompactable
from benchledger.projections.artifacts.kinds import KIND_SCHEMAS, normalize

GOAL_META = "benchledger.goal"
NEW_GOAL_META = "benchledger.new_goal"
# baseline-failure-gate keeps LoopX's own --goal-id / --execute.
COMMANDS_WITH_OWN_GOAL = {"baseline_failure_gate"}

# LoopX's own --format (markdown | json), resolved against the root --format like every command's.
FORMAT_OPTION = format_option("markdown", "json")


# A negative number, which argparse (and so LoopX) takes as an option's value.
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _looks_like_an_option(token: str) -> bool:
    """Whether LoopX's argparse would read ``token`` as an option rather than as a value."""
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token) and " " not in token


def refuse_as_argparse_does(command: click.Command, args: list[str]) -> None:
    """A usage error (exit 2) where LoopX's parser gives one and click would not.

    An option's value may not look like an option: ``--agent-kwarg -x=1`` is
    refused by the reference ("expected one argument") while click would take
    ``-x=1`` as the value; the attached form ``--agent-kwarg=-x=1`` is accepted
    by both. And a lone ``--`` is refused: a review takes no positional
    argument, so argparse has nothing to give what follows the marker to (not
    even nothing), where click drops a trailing ``--`` and prints the review.
    """
    takes_a_value = {
        name for param in command.params if isinstance(param, click.Option) and not param.is_flag for name in param.opts
    }
    for position, token in enumerate(args):
        if token == "--":
            raise click.UsageError(f"unrecognized arguments: {' '.join(args[position:])}")
        if token in takes_a_value and position + 1 < len(args) and _looks_like_an_option(args[position + 1]):
            raise click.UsageError(f"argument {token}: expected one argument")


class _ReviewGroup(click.Group):
    """Loads a review command's module only when that command runs (fast start, lazy imports)."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            refuse_as_argparse_does(command, rest)
        return name, command, rest

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(REVIEW_MODULES)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = REVIEW_MODULES.get(name)
        if module is None:
            return None
        # The command modules bear the names of the reducer modules they serve.
        command = importlib.import_module(f"benchledger.cli.review_commands.{module}").command
        if module not in COMMANDS_WITH_OWN_GOAL and not any(p.name == "goal" for p in command.params):
            _add_goal_option(command)
        return command


@click.group(cls=_ReviewGroup)
def benchmark() -> None:
    """LoopX 0.4.8-compatible reviews, evaluated through the ledger.

    Each command takes the same flags as `loopx benchmark <command>` and prints
    the same payload. Its inputs are ingested as one batch into a throwaway
    in-memory ledger and the review is reduced from the stored events; with
    --goal they are ingested into the real ledger and the review is kept.
    """


def load(
    path: str,
    kind: str,
    *,
    not_object: str,
    not_compactable: str,
) -> Artifact:
    """Read ``path`` and normalize it as ``kind``, with the command's own error texts.

    Read and parse failures keep the platform's message; a document that is not
    a JSON object raises ``not_object``; one the normalizer cannot compact
    raises ``not_compactable``. Other normalizer failures keep their own text.
    """
    document = read_json(path)
    if not isinstance(document.value, dict):
        raise IntakeError(not_object)
    try:
        payload = normalize(kind, document.value)
    except NotCompactable as exc:
        raise IntakeError(not_compactable) from exc
    return Artifact(kind, payload, document.sha256, origin=path)


def not_compactable(flag: str, kind: str) -> str:
    """The reference's refusal of an input its normalizer cannot compact."""
    return f"{flag} did not contain a compactable {KIND_SCHEMAS[kind]} object"


def load_input(path: str, flag: str, kind: str, *, repeatable: bool = False) -> Artifact:
    """:func:`load` with the reference's messages for ``flag`` (a repeatable flag's say "JSON objects")."""
    not_object = f"{flag} must contain {'JSON objects' if repeatable else 'a JSON object'}"
    return load(path, kind, not_object=not_object, not_compactable=not_compactable(flag, kind))


def print_review(ctx: click.Context, name: str, payload: dict[str, Any], fmt: str) -> None:
    """Print the review as LoopX prints it and exit 0 (ok) or 1.

    Its text is written as LoopX's ``print`` writes it: raw, so a terminal colour code an input holds (``\x1b[31m``)
    stays, where ``click.echo`` would drop it from a pipe; and encoded as standard output encodes it, with its own
    error handler. Under a C or C.UTF-8 locale that is ``surrogateescape``: a lone surrogate U+DC80-U+DCFF (read from
    a ``\udcff`` escape, or from a byte no UTF-8 holds on standard input) is written as the byte it stands for. A
    review holding a character that standard output cannot write (another lone surrogate, read from a ``\ud800``
    escape) is not printed, as LoopX prints nothing for it (it fails, exit 1): benchledger says why in one line
    instead of a traceback.
    """
    text = json_document(payload, escape_surrogates=False) if fmt == "json" else review_module(name).render_markdown(payload)
    stdout = sys.stdout  # (what print writes to)
    try:
        data = f"{text}\n".encode(stdout.encoding or "utf-8", stdout.errors or "strict")
    except UnicodeEncodeError as exc:
        character = exc.object[exc.start]
        what = (
            "an unpaired UTF-16 surrogate (a \\ud800-\\udfff escape of its input)"
            if "\ud800" <= character <= "\udfff"
            else f"the character {character!r}"
        )
        click.echo(
            f"benchledger: the {name} review holds {what}, which standard output ({stdout.encoding}, errors={stdout.errors}) "
            "cannot write: nothing is printed, as LoopX 0.4.8 prints nothing for it (exit 1); remove it from the input",
            err=True,
        )
        ctx.exit(1)
    stdout.flush()
    stdout.buffer.write(data)
    stdout.buffer.flush()
    ctx.exit(0 if payload.get("ok") is True else 1)


def run_review(
    ctx: click.Context,
    name: str,
    fmt: str,
    options: dict[str, Any],
    collect: Callable[[], list[Artifact]],
) -> None:
    """Collect the inputs, evaluate the review, print it and exit 0 (ok) or 1."""
    try:
        artifacts = collect()
    except IntakeError as exc:
        payload = review_module(name).error_payload(str(exc), options)
    else:
        goal = ctx.meta.get(GOAL_META)
        if goal:
            with open_ledger(ctx, writes=True) as ledger:
                review = ledger.keep_review(goal, name, artifacts, options, new_goal=ctx.meta.get(NEW_GOAL_META, False))
            payload = review.payload
            echo_archived_notes(review.archived_goals, command=f"benchmark {name}")
        else:
            payload = evaluate_review(name, artifacts, options).payload
    print_review(ctx, name, payload, fmt)


def _add_goal_option(command: click.Command) -> None:
    """Give a review command ``--goal`` without every command module repeating it."""
    command.params.append(
        goal_option(
            help="Keep the review: ingest its inputs as one batch into this goal of the ledger "
            "(--database-url, else BENCHLEDGER_DATABASE_URL, else the embedded default). "
            "Without it the review runs in a throwaway in-memory ledger."
        )
    )
    command.params.append(click.Option(["--new-goal"], is_flag=True, help="With --goal: " + NEW_GOAL_HELP))
    callback = command.callback

    @functools.wraps(callback)
    def with_goal(*args: Any, goal: str | None, new_goal: bool, **kwargs: Any) -> Any:
        if new_goal and not goal:
            raise click.UsageError("--new-goal goes with --goal (a review without --goal keeps nothing)")
        click.get_current_context().meta[GOAL_META] = goal
        click.get_current_context().meta[NEW_GOAL_META] = new_goal
        return callback(*args, **kwargs)

    command.callback = with_goal

