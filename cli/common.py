"""Options and helpers shared by the commands: opening the ledger, goal ids."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from benchledger.ledger.store import GOAL_ID_PATTERN


def _validate_goal(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not GOAL_ID_PATTERN.fullmatch(value):
        raise click.BadParameter(
            f"{value!r}: use 1-121 letters, digits, '_', '.', ':' or '-', starting with a letter or digit"
        )
    return value


def validate_goal_ids(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """A callback for a GOAL... argument: each one a valid goal id."""
    for value in values:
        _validate_goal(ctx, param, value)
    return values


def goal_option(*, required: bool = False, help: str) -> click.Option:
    return click.Option(["--goal"], metavar="GOAL", required=required, callback=_validate_goal, help=help)


@contextmanager
def open_ledger(ctx: click.Context) -> Iterator[Any]:
    """Open the ledger the root options name (its errors are reported by ``cli.main``)."""
    from benchledger.ledger import open_ledger as open_at

    ledger = open_at((ctx.find_root().obj or {}).get("database_url"))
    try:
        yield ledger
    finally:
        ledger.close()
