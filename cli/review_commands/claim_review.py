"""`benchledger benchmark review-claim`: may a paired comparison support a score-recovery claim?

The paired inputs (one comparison, then the runs in order) are shared with
`learning-ledger`, which builds on the claim review.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from benchledger.cli.reviews import FORMAT_OPTION, load_input, run_review
from benchledger.projections.artifacts import Artifact
from benchledger.projections.claim_review import NAME


def paired_input_options(command: Callable) -> Callable:
    """The reference's ``--benchmark-comparison-json`` and repeatable ``--benchmark-run-json``."""
    command = click.option(
        "--benchmark-run-json",
        "benchmark_run_json",
        multiple=True,
        help="Path to a compact benchmark_run_v0 JSON object. Repeat for baseline and treatment compact run files.",
    )(command)
    return click.option(
        "--benchmark-comparison-json",
        "benchmark_comparison_json",
        required=True,
        help="Path to a compact benchmark_comparison_v0 JSON object.",
    )(command)


def collect_paired_inputs(comparison_path: str, run_paths: Sequence[str]) -> list[Artifact]:
    """The comparison, then each run in command-line order; the first refused file stops."""
    artifacts = [load_input(comparison_path, "--benchmark-comparison-json", "comparison")]
    for run_path in run_paths:
        artifacts.append(load_input(run_path, "--benchmark-run-json", "run", repeatable=True))
    return artifacts


@click.command(NAME)
@FORMAT_OPTION
@paired_input_options
@click.pass_context
def command(
    ctx: click.Context,
    fmt: str,
    benchmark_comparison_json: str,
    benchmark_run_json: tuple[str, ...],
) -> None:
    """Review whether a paired comparison supports a LoopX-assisted score-recovery claim."""
    run_review(ctx, NAME, fmt, {}, lambda: collect_paired_inputs(benchmark_comparison_json, benchmark_run_json))
