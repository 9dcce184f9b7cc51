"""`benchledger benchmark learning-ledger`: turn a paired outcome into a learning row."""

from __future__ import annotations

import click

from benchledger.cli.review_commands.claim_review import collect_paired_inputs, paired_input_options
from benchledger.cli.reviews import FORMAT_OPTION, run_review
from benchledger.projections.learning_ledger import NAME


@click.command(NAME)
@FORMAT_OPTION
@paired_input_options
@click.option(
    "--require-actionable-learning",
    is_flag=True,
    default=False,
    help="Return non-zero unless the compact ledger contains an actionable LoopX learning signal, "
    "such as a repair candidate or clean score-recovery evidence.",
)
@click.pass_context
def command(
    ctx: click.Context,
    fmt: str,
    benchmark_comparison_json: str,
    benchmark_run_json: tuple[str, ...],
    require_actionable_learning: bool,
) -> None:
    """Record what a paired benchmark outcome teaches and where the next budget may go."""
    options = {"require_actionable_learning": require_actionable_learning}
    run_review(ctx, NAME, fmt, options, lambda: collect_paired_inputs(benchmark_comparison_json, benchmark_run_json))
