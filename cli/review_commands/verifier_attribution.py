"""`benchledger benchmark review-verifier-attribution` (placeholder until the review lands)."""

import click


@click.command("review-verifier-attribution")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("review-verifier-attribution is not implemented yet")
