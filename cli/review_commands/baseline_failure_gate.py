"""`benchledger benchmark baseline-failure-gate` (placeholder until the review lands)."""

import click


@click.command("baseline-failure-gate")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("baseline-failure-gate is not implemented yet")
