"""`benchledger benchmark review-claim` (placeholder until the review lands)."""

import click


@click.command("review-claim")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("review-claim is not implemented yet")
