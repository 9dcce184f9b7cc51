"""``benchledger benchmark …``: the eight LoopX-compatible review commands.

Each command parses its flags, reads and normalizes its input files in the
reference's order (the first refused input produces the review's error
payload), and hands the artifacts to :func:`run_review`, which evaluates the
review through a ledger and prints the payload.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from ledger.intake import Artifact, IntakeError, NotCompactable
from ledger.intake.kinds import normalize
from ledger.intake.reading import read_json
from projections import review as review_module

FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default=None,
    help="Output format (default: the root --format, else markdown).",
)


@click.group()
def benchmark() -> None:
    """LoopX 0.4.8-compatible reviews, evaluated through the ledger."""


def load(
    path: str,
    kind: str,
    *,
    not_object: str,
    not_compactable: str,
    role: str | None = None,
    stdin_dash: bool = False,
) -> Artifact:
    """Read ``path`` and normalize it as ``kind``, with the command's own error texts.

    Read and parse failures keep the platform's message; a document that is not
    a JSON object raises ``not_object``; one the normalizer cannot compact
    raises ``not_compactable``. Other normalizer failures keep their own text.
    """
    document = read_json(path, stdin_dash=stdin_dash)
    if not isinstance(document.value, dict):
        raise IntakeError(not_object)
    try:
        payload = normalize(kind, document.value)
    except NotCompactable as exc:
        raise IntakeError(not_compactable) from exc
    return Artifact(kind, payload, document.sha256, role)


def evaluate(name: str, artifacts: list[Artifact], options: dict[str, Any]) -> dict[str, Any]:
    """Reduce ``artifacts`` with the review ``name``."""
    inputs: dict[str, list[Any]] = {}
    for artifact in artifacts:
        inputs.setdefault(artifact.kind, []).append(artifact.payload)
    return review_module(name).reduce(inputs, options)


def render(name: str, payload: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(payload, indent=2, ensure_ascii=False)
    return review_module(name).render_markdown(payload)


def run_review(
    ctx: click.Context,
    name: str,
    fmt: str | None,
    options: dict[str, Any],
    collect: Callable[[], list[Artifact]],
) -> None:
    """Collect the inputs, evaluate the review, print it and exit 0 (ok) or 1."""
    module = review_module(name)
    try:
        artifacts = collect()
    except IntakeError as exc:
        payload = module.error_payload(str(exc), options)
    else:
        payload = evaluate(name, artifacts, options)
    fmt = fmt or (ctx.find_root().obj or {}).get("format") or "markdown"
    click.echo(render(name, payload, fmt))
    ctx.exit(0 if payload.get("ok") is True else 1)


def _register_commands() -> None:
    import importlib

    from .review_commands import MODULES

    for module in MODULES:
        benchmark.add_command(importlib.import_module(f"cli.review_commands.{module}").command)


_register_commands()
