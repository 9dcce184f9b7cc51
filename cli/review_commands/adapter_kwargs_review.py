"""`benchledger benchmark review-adapter-kwargs`: are generated loopx_* adapter kwargs absorbed?"""

from __future__ import annotations

import click

from benchledger.cli.reviews import FORMAT_OPTION, run_review
from benchledger.ledger.api import read_json
from benchledger.projections.adapter_kwargs_review import DEFAULT_ADAPTER_LABEL, KIND, NAME
from benchledger.projections.artifacts import Artifact, IntakeError
from benchledger.projections.artifacts.adapter_invocation import flag_argv
from benchledger.projections.artifacts.kinds import normalize

NOT_AN_ARGV_LIST = "--command-json must contain a JSON argv list"


def command_json_invocation(path: str) -> Artifact:
    """The adapter invocation recorded in a ``--command-json`` argv file (its path is not kept)."""
    document = read_json(path)
    if not isinstance(document.value, list):
        raise IntakeError(NOT_AN_ARGV_LIST)
    return Artifact(KIND, normalize(KIND, document.value), document.sha256, "command-json", origin=path)


@click.command(NAME)
@FORMAT_OPTION
@click.option("--adapter-label", default=DEFAULT_ADAPTER_LABEL, help="Public-safe adapter label.")
@click.option(
    "--agent-kwarg",
    "agent_kwarg",
    multiple=True,
    help="Generated agent kwarg in KEY=VALUE form. Repeat as needed.",
)
@click.option(
    "--command-json",
    "command_json",
    default=None,
    help="Optional JSON file containing a command argv list from which --agent-kwarg entries "
    "will be extracted. The path is not recorded.",
)
@click.option(
    "--accepted-loopx-kwarg",
    "accepted_loopx_kwarg",
    multiple=True,
    help="LoopX kwarg key explicitly consumed by the adapter. Repeat as needed unless "
    "--terminal-bench-managed-codex is used.",
)
@click.option(
    "--allowed-base-passthrough",
    "allowed_base_passthrough",
    multiple=True,
    help="Optional loopx_* kwarg key allowed to pass to the base constructor.",
)
@click.option(
    "--terminal-bench-managed-codex",
    is_flag=True,
    default=False,
    help="Use the built-in GoalHarnessManagedCodex accepted kwarg contract.",
)
@click.option(
    "--require-clean",
    is_flag=True,
    default=False,
    help="Return non-zero unless all generated loopx_* kwargs are absorbed.",
)
@click.pass_context
def command(
    ctx: click.Context,
    fmt: str,
    adapter_label: str,
    agent_kwarg: tuple[str, ...],
    command_json: str | None,
    accepted_loopx_kwarg: tuple[str, ...],
    allowed_base_passthrough: tuple[str, ...],
    terminal_bench_managed_codex: bool,
    require_clean: bool,
) -> None:
    """Check that every generated loopx_* kwarg is consumed by the adapter or allowed through."""
    options = {
        "adapter_label": adapter_label,
        "accepted_loopx_kwarg": list(accepted_loopx_kwarg),
        "allowed_base_passthrough": list(allowed_base_passthrough),
        "terminal_bench_managed_codex": terminal_bench_managed_codex,
        "require_clean": require_clean,
    }

    def collect() -> list[Artifact]:
        # The argv file is read before the flags are checked: its error wins.
        artifacts = []
        if command_json:  # an empty path means "not given"
            artifacts.append(command_json_invocation(command_json))
        if agent_kwarg:
            artifacts.append(Artifact(KIND, normalize(KIND, flag_argv(agent_kwarg)), None, "agent-kwarg", origin="--agent-kwarg"))
        return artifacts

    run_review(ctx, NAME, fmt, options, collect)
