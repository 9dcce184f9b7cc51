"""`benchledger benchmark attempt-learning-gate`: may one attempt be counted against the budget?"""

from __future__ import annotations

import click

from benchledger.cli.reviews import FORMAT_OPTION, load_input, run_review
from benchledger.projections.artifacts import Artifact
from benchledger.projections.attempt_learning_gate import NAME


@click.command(NAME)
@FORMAT_OPTION
@click.option(
    "--benchmark-run-json",
    "benchmark_run_json",
    required=True,
    help="Path to a compact benchmark_run_v0 JSON object.",
)
@click.option(
    "--benchmark-learning-ledger-json",
    "benchmark_learning_ledger_json",
    default=None,
    help="Optional path to a compact benchmark_learning_ledger_v0 JSON object.",
)
@click.option(
    "--require-budget-count-allowed",
    is_flag=True,
    default=False,
    help="Return non-zero unless the compact attempt has an actionable learning row and may be counted.",
)
@click.pass_context
def command(
    ctx: click.Context,
    fmt: str,
    benchmark_run_json: str,
    benchmark_learning_ledger_json: str | None,
    require_budget_count_allowed: bool,
) -> None:
    """Decide whether a compact attempt may be counted, repeated or followed by a new candidate."""
    options = {"require_budget_count_allowed": require_budget_count_allowed}

    def collect() -> list[Artifact]:
        artifacts = [load_input(benchmark_run_json, "--benchmark-run-json", "run")]
        # An empty path means "no learning row", as in the reference.
        if benchmark_learning_ledger_json:
            artifacts.append(load_input(benchmark_learning_ledger_json, "--benchmark-learning-ledger-json", "learning-ledger"))
        return artifacts

    run_review(ctx, NAME, fmt, options, collect)
