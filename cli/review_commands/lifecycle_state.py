"""`benchledger benchmark lifecycle-state`: phase, first blocker and gates of one attempt."""

from __future__ import annotations

from typing import NamedTuple

import click

from benchledger.cli.reviews import FORMAT_OPTION, load, not_compactable, run_review
from benchledger.projections.artifacts import Artifact
from benchledger.projections.lifecycle_state import NAME

NOT_AN_OBJECT = "lifecycle input JSON must contain an object"


class LifecycleInput(NamedTuple):
    flag: str
    kind: str
    help: str
    # The error when the kind's normalizer refuses the object; raw kinds are never refused.
    refused: str = NOT_AN_OBJECT

    @property
    def name(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


# In the reference's reading order: the first refused input is the one reported.
INPUTS = (
    LifecycleInput("--preflight-json", "preflight", "Path to compact benchmark preflight JSON."),
    LifecycleInput("--launch-json", "launch", "Path to compact launch summary JSON."),
    LifecycleInput("--post-launch-json", "post-launch", "Path to compact post-launch materialization JSON."),
    LifecycleInput(
        "--benchmark-run-json",
        "run",
        "Path to compact benchmark_run_v0 JSON.",
        not_compactable("--benchmark-run-json", "run"),
    ),
    LifecycleInput(
        "--benchmark-comparison-json",
        "comparison",
        "Path to compact benchmark_comparison_v0 JSON.",
        not_compactable("--benchmark-comparison-json", "comparison"),
    ),
    LifecycleInput(
        "--claim-review-json",
        "claim-review",
        "Path to compact benchmark_claim_review_v0 JSON.",
        "--claim-review-json must contain benchmark_claim_review_v0",
    ),
    LifecycleInput(
        "--benchmark-learning-ledger-json",
        "learning-ledger",
        "Path to compact benchmark_learning_ledger_v0 JSON.",
        not_compactable("--benchmark-learning-ledger-json", "learning-ledger"),
    ),
)


def input_options(function):
    for spec in reversed(INPUTS):
        function = click.option(spec.flag, spec.name, default=None, metavar="PATH", help=spec.help)(function)
    return function


@click.command(NAME)
@FORMAT_OPTION
@input_options
@click.option(
    "--require-budget-count-allowed",
    is_flag=True,
    default=False,
    help="Exit non-zero unless the lifecycle state allows budget counting.",
)
@click.pass_context
def command(ctx: click.Context, fmt: str, require_budget_count_allowed: bool, **paths: str | None) -> None:
    """Where a benchmark attempt stands, what blocks it and which gates are open."""
    # Paths name inputs, not flags: they stay out of the options a stored review keeps.
    options = {"require_budget_count_allowed": require_budget_count_allowed}

    def collect() -> list[Artifact]:
        return [
            load(path, spec.kind, not_object=NOT_AN_OBJECT, not_compactable=spec.refused)
            for spec in INPUTS
            # An empty path means the input was not given.
            if (path := paths[spec.name])
        ]

    run_review(ctx, NAME, fmt, options, collect)
