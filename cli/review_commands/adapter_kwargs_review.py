"""`benchledger benchmark review-adapter-kwargs` (placeholder until the review lands)."""

import click


@click.command("review-adapter-kwargs")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("review-adapter-kwargs is not implemented yet")
