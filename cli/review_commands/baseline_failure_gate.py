"""`benchledger benchmark baseline-failure-gate`: gate a failed baseline before any treatment run.

By default (and with ``--dry-run``) it previews the gate comparison row; with
``--execute`` the row is appended as an event to the goal's history.
"""

from __future__ import annotations

from typing import Any

import click

from benchledger.cli.common import NEW_GOAL_HELP, echo_archived_notes, goal_filter
from benchledger.cli.reviews import FORMAT_OPTION, print_review, run_review
from benchledger.ledger.api import read_json
from benchledger.projections import baseline_failure_gate as review
from benchledger.projections.artifacts import Artifact, IntakeError, NotCompactable
from benchledger.projections.artifacts.kinds import normalize_result_else_run

DELIVERY_BATCH_SCALES = ("test_only", "single_surface", "multi_surface", "implementation")
DELIVERY_OUTCOMES = ("surface_only", "outcome_gap", "outcome_progress", "primary_goal_outcome")


def collect_baseline(options: dict[str, Any]) -> list[Artifact]:
    """Check the mode flags, then read the one baseline file (``-``: stdin) as a result, else a run."""
    problem = review.mode_error(options)
    if problem is not None:
        raise IntakeError(problem)
    document = read_json(options["baseline_result_json"], stdin_dash=True)
    if not isinstance(document.value, dict):
        raise IntakeError(review.NOT_AN_OBJECT_ERROR)
    try:
        kind, payload = normalize_result_else_run(document.value)
    except NotCompactable:
        raise IntakeError(review.NOT_COMPACTABLE_ERROR) from None
    return [Artifact(kind, payload, document.sha256, "baseline", origin=options["baseline_result_json"])]


def _execute(ctx: click.Context, fmt: str, options: dict[str, Any], new_goal: bool) -> None:
    """Review exactly as a dry run would, then keep the row in the goal's history (the rules: ledger)."""
    from benchledger.ledger.api import execute_baseline_failure_gate

    try:
        artifacts = collect_baseline(options)
    except IntakeError as exc:
        payload = review.error_payload(str(exc), options)
    else:
        url = (ctx.find_root().obj or {}).get("database_url")
        executed = execute_baseline_failure_gate(artifacts, options, url=url, new_goal=new_goal)
        payload = executed.payload
        echo_archived_notes(executed.archived_goals, command="baseline-failure-gate --execute")
    print_review(ctx, review.NAME, payload, fmt)


@click.command("baseline-failure-gate")
@FORMAT_OPTION
@goal_filter(
    name="goal_id",
    validate=False,
    help="Goal whose history receives the row; required with --execute (LoopX's --goal-id works too).",
)
@click.option("--benchmark-id", required=True, help="Public-safe benchmark id for the comparison row.")
@click.option(
    "--baseline-result-json",
    required=True,
    help="Compact benchmark_result_v0 or benchmark_run_v0 JSON object; '-' reads stdin.",
)
@click.option("--baseline-mode", default=review.DEFAULT_BASELINE_MODE, show_default=True)
@click.option("--treatment-scenario-id", default=review.DEFAULT_TREATMENT_SCENARIO_ID, show_default=True)
@click.option("--comparison-id")
@click.option("--failure-phase")
@click.option("--failure-class")
@click.option("--failure-attribution-label", multiple=True, help="Failure attribution label; repeatable.")
@click.option("--control-plane-addressable", is_flag=True, help="The failure is plausibly fixable by LoopX.")
@click.option("--same-task-semantics", is_flag=True, help="Treatment uses the same task semantics.")
@click.option("--same-runner-protocol", is_flag=True, help="Treatment uses the same runner protocol.")
@click.option("--trace-publicness-verified", is_flag=True, help="The compact result excludes private traces.")
@click.option("--baseline-attempt-count", type=int, default=1, show_default=True)
@click.option("--minimum-next-evidence")
@click.option("--negative-selection-reason")
@click.option("--next-action")
@click.option("--evidence-ref", multiple=True, help="Compact evidence reference; repeatable.")
@click.option("--classification")
@click.option("--recommended-action")
@click.option("--delivery-batch-scale", type=click.Choice(DELIVERY_BATCH_SCALES))
@click.option("--delivery-outcome", type=click.Choice(DELIVERY_OUTCOMES))
@click.option("--dry-run", is_flag=True, help="Preview without writing (the default).")
@click.option("--execute", is_flag=True, help="Append the gate comparison to the goal's history.")
@click.option("--no-global-sync", is_flag=True, help="Skip the global registry sync after an append.")
@click.option("--new-goal", is_flag=True, help="With --execute: " + NEW_GOAL_HELP)
@click.pass_context
def command(ctx: click.Context, fmt: str, new_goal: bool, **flags: Any) -> None:
    """Gate a failed goal-mode baseline before a LoopX treatment run."""
    options = {name: list(value) if isinstance(value, tuple) else value for name, value in flags.items()}
    if options["execute"]:
        _execute(ctx, fmt, options, new_goal)
    else:
        run_review(ctx, review.NAME, fmt, options, lambda: collect_baseline(options))
