"""The ``benchledger`` root command."""

from __future__ import annotations

import click

from benchledger.cli.db import db
from benchledger.cli.ingest import ingest_command
from benchledger.cli.interop import INTEROP_COMMANDS
from benchledger.cli.queries import (
    audit_command,
    goals_command,
    history_command,
    replay_command,
    show_command,
    status_command,
)
from benchledger.cli.reviews import benchmark


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    type=click.Choice(["markdown", "json"]),
    default=None,
    help="Default output format for commands that take --format (a command's own --format wins).",
)
@click.pass_context
def cli(ctx: click.Context, database_url: str | None, global_format: str | None) -> None:
    """benchledger: the durable, auditable ledger of agent-benchmark evidence."""
    ctx.ensure_object(dict)
    ctx.obj["database_url"] = database_url
    ctx.obj["format"] = global_format


for command in (
    ingest_command,
    goals_command,
    show_command,
    history_command,
    status_command,
    replay_command,
    audit_command,
    *INTEROP_COMMANDS,
    benchmark,
    db,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="benchledger")
