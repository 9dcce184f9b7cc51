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
    from benchledger.ledger.migrate import current_revision, upgrade
    from benchledger.ledger.store import create_ledger_engine

    engine = create_ledger_engine(_url(ctx))
    upgrade(engine, revision)
    with engine.connect() as connection:
        click.echo(f"ledger schema at revision {current_revision(connection)}")


@db.command("current")
@click.pass_context
def current_command(ctx: click.Context) -> None:
    """Print the ledger's schema revision and the one this benchledger needs."""
    from benchledger.ledger.migrate import HEAD_REVISION, current_revision
    from benchledger.ledger.store import create_ledger_engine

    engine = create_ledger_engine(_url(ctx))
    with engine.connect() as connection:
        revision = current_revision(connection)
    state = "up to date" if revision == HEAD_REVISION else "needs `benchledger db upgrade`"
    click.echo(f"{revision or 'not initialized'} (head {HEAD_REVISION}: {state})")
