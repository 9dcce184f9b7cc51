"""Commands of the ledger's Merkle log (docs/proofs.md): checkpoint, prove, prove-consistency, verify-consistency."""

from __future__ import annotations

import click

from benchledger.cli.common import open_ledger
from benchledger.cli.output import echo_json, format_option
from benchledger.errors import InvalidInput

TREE_SIZE_HELP = "The tree of the first N events (default: every event the ledger holds)."


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as file:
            return file.read(1024 * 1024)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{what} {path}: cannot be read ({exc.strerror if isinstance(exc, OSError) else exc})") from None


@click.command("checkpoint")
@click.option("--tree-size", type=click.IntRange(min=0), metavar="N", help=TREE_SIZE_HELP)
@click.option("--origin", metavar="ORIGIN", help="The checkpoint's first line, naming the log (default: benchledger).")
@format_option("table", "json")
@click.pass_context
def checkpoint_command(ctx: click.Context, tree_size: int | None, origin: str | None, fmt: str) -> None:
    """Print the log's tree head as a C2SP tlog-checkpoint note: origin, tree size, base64 root hash (the note itself; --format json: its fields too).

    Keep it (a file, a git repository, a transparency log): `prove-consistency`
    later shows that the ledger only grew since, and `verify-consistency`
    checks that without the ledger.
    """
    with open_ledger(ctx) as ledger:
        head = ledger.checkpoint(tree_size=tree_size, origin=origin)
    if fmt == "json":
        echo_json(head.as_dict())
    else:
        click.echo(head.note, nl=False)


@click.command("prove")
@click.argument("event_ids", nargs=-1, required=True, metavar="EVENT_ID...")
@click.option("--tree-size", type=click.IntRange(min=1), metavar="N", help=TREE_SIZE_HELP)
@format_option("table", "json")
@click.pass_context
def prove_command(ctx: click.Context, event_ids: tuple[str, ...], tree_size: int | None, fmt: str) -> None:
    """Print an RFC 9162 inclusion proof of each event in the log's tree (its root, the path from each event's leaf)."""
    with open_ledger(ctx) as ledger:
        proofs = ledger.prove(list(event_ids), tree_size=tree_size)
    if fmt == "json":
        echo_json(proofs.as_dict())
        return
    click.echo(f"tree of {proofs.tree_size} events, root {proofs.root_hash}")
    for p in proofs.proofs:
        click.echo(f"- {p.event_id} (goal {p.goal_id}, position {p.position}, leaf {p.leaf_index}): {len(p.proof)} node(s)")
        for node in p.proof:
            click.echo(f"    {node}")


@click.command("prove-consistency")
@click.argument("old_size", type=click.IntRange(min=1))
@click.argument("new_size", type=click.IntRange(min=1), required=False)
@format_option("table", "json")
@click.pass_context
def prove_consistency_command(ctx: click.Context, old_size: int, new_size: int | None, fmt: str) -> None:
    """Print an RFC 9162 consistency proof: the tree of OLD_SIZE events is a prefix of the tree of NEW_SIZE (default: every event).

    `--format json` prints what `verify-consistency` reads as its PROOF.
    """
    with open_ledger(ctx) as ledger:
        proof = ledger.prove_consistency(old_size, new_size)
    if fmt == "json":
        echo_json(proof.as_dict())
        return
    click.echo(f"tree of {proof.old_size} events (root {proof.old_root}) -> tree of {proof.new_size} (root {proof.new_root}): {len(proof.proof)} node(s)")
    for node in proof.proof:
        click.echo(f"    {node}")


@click.command("verify-consistency")
@click.argument("old", metavar="OLD.checkpoint")
@click.argument("new", metavar="NEW.checkpoint")
@click.argument("proof", metavar="PROOF")
@format_option("table", "json")
def verify_consistency_command(old: str, new: str, proof: str, fmt: str) -> None:
    """Check, without a ledger, that the log of NEW.checkpoint grew from OLD.checkpoint's (PROOF: `prove-consistency --format json`).

    Exits 1, saying why, when the proof does not tie the two roots together:
    the log was rewritten between the two checkpoints (or they are of two logs).
    """
    from benchledger.ledger.api import verify_consistency

    checked = verify_consistency(
        _read_text(old, "OLD.checkpoint"), _read_text(new, "NEW.checkpoint"), _read_text(proof, "PROOF"), names=(old, new, proof)
    )
    if fmt == "json":
        echo_json(checked.as_dict())
        return
    click.echo(
        f"consistent: the log {checked.origin!r} of {checked.new_size} events (root {checked.new_root}) "
        f"extends its tree of {checked.old_size} events (root {checked.old_root})"
    )
    click.echo("signatures: not checked" if checked.signatures_checked is None else f"signatures: checked ({checked.signatures_checked})")
