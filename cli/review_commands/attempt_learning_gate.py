"""`benchledger benchmark attempt-learning-gate` (placeholder until the review lands)."""

import click


@click.command("attempt-learning-gate")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("attempt-learning-gate is not implemented yet")
