"""`benchledger benchmark lifecycle-state` (placeholder until the review lands)."""

import click


@click.command("lifecycle-state")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("lifecycle-state is not implemented yet")
