"""`benchledger benchmark learning-ledger` (placeholder until the review lands)."""

import click


@click.command("learning-ledger")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("learning-ledger is not implemented yet")
