"""`benchledger benchmark review-runner-invariants`: runner-owned boundary fields of one run."""

from __future__ import annotations

import click

from benchledger.cli.reviews import FORMAT_OPTION, load_input, run_review
from benchledger.projections.artifacts import Artifact
from benchledger.projections.runner_invariants import NAME, RUNNER_OWNED_FIELDS

BOOLEAN_CHOICE = click.Choice(["true", "false"])


def expect_options(function):
    """One ``--expect-<field> {true,false}`` option per runner-owned field, with the runner's default."""
    for field in reversed(RUNNER_OWNED_FIELDS):
        flag = "--" + field.option.replace("_", "-")
        default = "true" if field.default_expectation else "false"
        function = click.option(
            flag,
            field.option,
            type=BOOLEAN_CHOICE,
            default=default,
            show_default=True,
            help=f"Expected runner-owned {field.qualified_name} value.",
        )(function)
    return function


@click.command(NAME)
@FORMAT_OPTION
@click.option(
    "--benchmark-run-json",
    "benchmark_run_json",
    required=True,
    metavar="PATH",
    help="Path to a compact benchmark_run_v0 JSON object.",
)
@click.option("--runner-label", default=None, help="Runner label to include in the review payload.")
@expect_options
@click.option(
    "--require-clean",
    is_flag=True,
    default=False,
    help="Exit non-zero unless every runner-owned invariant field is present and matches.",
)
@click.pass_context
def command(
    ctx: click.Context,
    fmt: str,
    benchmark_run_json: str,
    runner_label: str | None,
    require_clean: bool,
    **expected: str,
) -> None:
    """Check that a worker writeback echoes the runner-owned boundary fields unchanged."""
    options = {
        "runner_label": runner_label,
        **{field.option: expected[field.option] == "true" for field in RUNNER_OWNED_FIELDS},
        "require_clean": require_clean,
    }

    def collect() -> list[Artifact]:
        return [load_input(benchmark_run_json, "--benchmark-run-json", "run")]

    run_review(ctx, NAME, fmt, options, collect)
