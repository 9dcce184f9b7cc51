"""`benchledger benchmark review-verifier-attribution`: is a baseline score failure the verifier's fault?"""

from __future__ import annotations

import click

from benchledger.cli.reviews import FORMAT_OPTION, load_input, run_review
from benchledger.projections.artifacts import Artifact
from benchledger.projections.verifier_attribution import NAME


@click.command(NAME)
@FORMAT_OPTION
@click.option(
    "--benchmark-run-json",
    "benchmark_run_json",
    required=True,
    multiple=True,
    metavar="PATH",
    help="Path to a compact benchmark_run_v0 JSON object. Repeat for baseline and treatment compact run files.",
)
@click.pass_context
def command(ctx: click.Context, fmt: str, benchmark_run_json: tuple[str, ...]) -> None:
    """Classify each run's score failure and route the baseline's attribution caveat."""

    def collect() -> list[Artifact]:
        # Each file is read, shape-checked and compacted before the next one is opened.
        return [
            load_input(path, "--benchmark-run-json", "run", repeatable=True)
            for path in benchmark_run_json
        ]

    run_review(ctx, NAME, fmt, {}, collect)
