"""Options and helpers shared by the commands: opening the ledger, goal ids, errors."""

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


def goal_option(*, required: bool = False, help: str) -> click.Option:
    return click.Option(["--goal"], metavar="GOAL", required=required, callback=_validate_goal, help=help)


@contextmanager
def open_ledger(ctx: click.Context) -> Iterator[Any]:
    """Open the ledger the root options name; storage errors become clear one-line errors."""
    from benchledger.ledger.config import resolve_url
    from benchledger.ledger.migrate import LedgerNeedsUpgrade
    from benchledger.ledger.store import Ledger, LedgerError

    url = resolve_url((ctx.find_root().obj or {}).get("database_url"))
    try:
        ledger = Ledger.open(url)
    except (LedgerNeedsUpgrade, LedgerError) as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        yield ledger
    except LedgerError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        ledger.close()
