"""``benchledger db``: schema migrations."""

from __future__ import annotations

import click


def _url(ctx: click.Context) -> str:
    from benchledger.ledger.config import resolve_url

    return resolve_url((ctx.find_root().obj or {}).get("database_url"))


@click.group("db")
def db() -> None:
    """Schema migrations of the ledger database."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.pass_context
def upgrade_command(ctx: click.Context, revision: str) -> None:
    """Apply pending migrations (needed once per release on a server database)."""
    from benchledger.ledger import upgrade_ledger

    click.echo(f"ledger schema at revision {upgrade_ledger(_url(ctx), revision)}")


@db.command("current")
@click.pass_context
def current_command(ctx: click.Context) -> None:
    """Print the ledger's schema revision and the one this benchledger needs."""
    from benchledger.ledger import HEAD_REVISION, ledger_revision

    revision = ledger_revision(_url(ctx))
    state = "up to date" if revision == HEAD_REVISION else "needs `benchledger db upgrade`"
    click.echo(f"{revision or 'not initialized'} (head {HEAD_REVISION}: {state})")
