"""``benchledger db``: schema migrations."""

from __future__ import annotations

import click


def _url(ctx: click.Context) -> str | None:
    """The root's ``--database-url`` (else the environment's, else the embedded default: resolved by the ledger)."""
    return (ctx.find_root().obj or {}).get("database_url")


@click.group("db")
def db() -> None:
    """Schema migrations of the ledger database."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.option(
    "--sql",
    "print_sql",
    is_flag=True,
    help="Print the SQL instead of running it, from the revision the database is at (read, nothing changed), for an operator to review first.",
)
@click.option(
    "--from-revision",
    metavar="REV",
    help="With --sql: print the SQL from revision REV instead (connects to nothing).",
)
@click.pass_context
def upgrade_command(ctx: click.Context, revision: str, print_sql: bool, from_revision: str | None) -> None:
    """Apply pending migrations (needed once per release on a server database).

    A SQLite ledger's file is first copied beside it as it was (ledger.sqlite.0004.bak:
    the revision it was at), and the upgrade is said on stderr: an older
    benchledger cannot open the upgraded file.
    """
    from benchledger.ledger.api import upgrade_schema, upgrade_schema_sql

    if from_revision and not print_sql:
        raise click.UsageError("--from-revision only applies with --sql")
    if print_sql:
        click.echo(upgrade_schema_sql(_url(ctx), revision, from_revision), nl=False)
        return

    upgraded = upgrade_schema(_url(ctx), revision)
    if upgraded.from_revision is not None or upgraded.created:
        click.echo(f"benchledger: note: {upgraded.notice()}", err=True)
    click.echo(f"ledger schema at revision {upgraded.revision}")


@db.command("current")
@click.pass_context
def current_command(ctx: click.Context) -> None:
    """Print the ledger's schema revision and the one this benchledger needs."""
    from benchledger.ledger.api import schema_head, schema_revision

    revision, head = schema_revision(_url(ctx)), schema_head()
    if revision == head:
        state = "up to date"
    elif revision is not None and revision > head:
        state = "newer than this benchledger: use the release that wrote it; `db upgrade` cannot take it back"
    else:
        state = "needs `benchledger db upgrade`"
    click.echo(f"{revision or 'not initialized'} (head {head}: {state})")
