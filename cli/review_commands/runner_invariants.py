"""`benchledger benchmark review-runner-invariants` (placeholder until the review lands)."""

import click


@click.command("review-runner-invariants")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("review-runner-invariants is not implemented yet")
