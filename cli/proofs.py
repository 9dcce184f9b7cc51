"""Commands of the ledger's Merkle log (docs/proofs.md): keygen, checkpoint, checkpoints, prove, prove-consistency,
verify-consistency, publish and verify (claim bundles)."""

from __future__ import annotations

import json
import os

import click

from benchledger.cli.common import open_ledger, with_goal
from benchledger.cli.output import echo_json, echo_rows, format_option, utc_text
from benchledger.errors import InvalidInput

TREE_SIZE_HELP = "The tree of the first N events (default: every event the ledger holds)."


def _read_text(path: str, what: str, *, limit: int = 1024 * 1024) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as file:
            text = file.read(limit + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{what} {path}: cannot be read ({exc.strerror if isinstance(exc, OSError) else exc})") from None
    if len(text) > limit:
        raise InvalidInput(f"{what} {path}: larger than {limit} characters, not what benchledger writes")
    return text


def _public_keys(keys: tuple[str, ...], trusted: str | None) -> list[tuple[str, str]]:
    return [(_read_text(path, "--key"), path) for path in keys] + ([(_read_text(trusted, "--trusted-keys"), trusted)] if trusted else [])


@click.command("keygen")
@click.option("--name", required=True, help="The key's name: the origin of the checkpoints it signs (e.g. example.org/bench-ledger).")
@click.option("--output", "prefix", required=True, metavar="PREFIX", help="Writes PREFIX.key (the signing key, mode 600) and PREFIX.pub.")
def keygen_command(name: str, prefix: str) -> None:
    """Make an Ed25519 signing key for checkpoints (C2SP signed-note format; needs the [sign] extra).

    The signing key stays in PREFIX.key: give it to `checkpoint --key`, never
    to the ledger. Publish PREFIX.pub: verifiers check signatures with it.
    """
    from benchledger.ledger.api import generate_key

    signing, public = generate_key(name)
    made: list[str] = []
    for path, text, mode in ((f"{prefix}.key", signing, 0o600), (f"{prefix}.pub", public, 0o644)):
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except OSError as exc:
            for written in made:  # (a .key beside someone else's .pub would sign what that .pub does not verify)
                os.remove(written)
            why = "it exists: keygen never overwrites a key" if isinstance(exc, FileExistsError) else exc.strerror
            raise InvalidInput(f"{path}: cannot be created ({why}); nothing was written") from None
        made.append(path)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text + "\n")
    click.echo(public)
    click.echo(f"benchledger: wrote {prefix}.key (the signing key: keep it secret) and {prefix}.pub (publish it)", err=True)


@click.command("checkpoint")
@click.option("--tree-size", type=click.IntRange(min=0), metavar="N", help=TREE_SIZE_HELP + " Not with --key.")
@click.option("--origin", metavar="ORIGIN", help="The checkpoint's first line, naming the log (default: the key's name, else benchledger).")
@click.option("--key", "key_file", metavar="KEY", help="Sign the current tree head with this signing key (keygen's PREFIX.key) and keep it.")
@format_option("table", "json")
@click.pass_context
def checkpoint_command(ctx: click.Context, tree_size: int | None, origin: str | None, key_file: str | None, fmt: str) -> None:
    """Print the log's tree head as a C2SP tlog-checkpoint note: origin, tree size, base64 root hash (the note itself; --format json: its fields too).

    With --key, the note is signed (Ed25519, C2SP signed-note) and kept in the
    ledger (`checkpoints` lists them); signing is refused when the last signed
    checkpoint's root is no longer the log's. Keep the note (a file, a git
    repository, a transparency log): `prove-consistency` later shows that the
    ledger only grew since, and `verify-consistency` checks it without the ledger.
    """
    if key_file is not None and tree_size is not None:
        raise click.UsageError("--key signs the current tree head: --tree-size is for an unsigned checkpoint")
    with open_ledger(ctx, writes=key_file is not None) as ledger:  # (a signed checkpoint is kept in the ledger)
        if key_file is None:
            head = ledger.checkpoint(tree_size=tree_size, origin=origin)
        else:
            head = ledger.sign_checkpoint(_read_text(key_file, "--key"), origin=origin, key_source=key_file)
    if fmt == "json":
        echo_json(head.as_dict())
    else:
        click.echo(head.note, nl=False)


@click.command("checkpoints")
@format_option("table", "json")
@click.pass_context
def checkpoints_command(ctx: click.Context, fmt: str) -> None:
    """List the checkpoints `checkpoint --key` signed: number, tree size, root hash, when (--format json: the signed notes too)."""
    with open_ledger(ctx) as ledger:
        kept = ledger.checkpoints()
    if fmt == "json":
        echo_json([checkpoint.as_dict() for checkpoint in kept])
        return
    echo_rows(["number", "tree size", "root hash", "recorded at"], [(c.number, c.tree_size, c.root_hash, utc_text(c.recorded_at)) for c in kept], fmt,
              empty="no checkpoint has been signed in this ledger (`benchledger checkpoint --key KEY` signs one)")


@click.command("prove")
@click.argument("event_ids", nargs=-1, required=True, metavar="EVENT...")
@click.option("--tree-size", type=click.IntRange(min=1), metavar="N", help=TREE_SIZE_HELP)
@click.option("--checkpoint", type=click.IntRange(min=1), metavar="N", help="The tree of signed checkpoint N (`checkpoints` lists them); the output carries its note.")
@format_option("table", "json")
@click.pass_context
def prove_command(ctx: click.Context, event_ids: tuple[str, ...], tree_size: int | None, checkpoint: int | None, fmt: str) -> None:
    """Print an RFC 9162 inclusion proof of each event in the log's tree (its root, the path from each event's leaf).

    EVENT is an event id, a unique prefix of one (at least 4 characters), or
    @POSITION, the global position `history` prints in its `pos` column
    (`benchledger prove @42`), as `retract` takes them.
    """
    with open_ledger(ctx) as ledger:
        proofs = ledger.prove(list(event_ids), tree_size=tree_size, checkpoint=checkpoint)
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
@click.option("--key", "keys", multiple=True, metavar="PUB", help="A public key (keygen's PREFIX.pub): both checkpoints must be signed by it (repeatable).")
@click.option("--trusted-keys", metavar="FILE", help="A file of public keys, one a line: both checkpoints must be signed by one of them.")
@format_option("table", "json")
def verify_consistency_command(old: str, new: str, proof: str, keys: tuple[str, ...], trusted_keys: str | None, fmt: str) -> None:
    """Check, without a ledger, that the log of NEW.checkpoint grew from OLD.checkpoint's (PROOF: `prove-consistency --format json`).

    Exits 1, saying why, when the proof does not tie the two roots together:
    the log was rewritten between the two checkpoints (or they are of two logs).
    """
    from benchledger.ledger.api import verify_consistency

    checked = verify_consistency(
        _read_text(old, "OLD.checkpoint"),
        _read_text(new, "NEW.checkpoint"),
        _read_text(proof, "PROOF"),
        public_keys=_public_keys(keys, trusted_keys),
        names=(old, new, proof),
    )
    if fmt == "json":
        echo_json(checked.as_dict())
        return
    click.echo(
        f"consistent: the log {checked.origin!r} of {checked.new_size} events (root {checked.new_root}) "
        f"extends its tree of {checked.old_size} events (root {checked.old_root})"
    )
    click.echo("signatures: not checked (no --key)" if checked.signatures_checked is None else f"signatures: checked, by {checked.signatures_checked}")


@with_goal(help="The goal whose comparison is published.")
@click.command("publish")
@click.option("--comparison", "comparison_id", required=True, metavar="ID", help="The comparison: its comparison_id (as `show` lists it), or its comparison event's id (as `history --wide` shows it).")
@click.option("--key", "key_file", required=True, metavar="KEY", help="The signing key (keygen's PREFIX.key) of the checkpoint the bundle is proved against.")
@click.option("--output", required=True, metavar="FILE", help="Where to write the claim bundle (JSON); never over an existing file.")
@click.option("--origin", metavar="ORIGIN", help="The checkpoint's origin (default: the key's name).")
@click.pass_context
def publish_command(ctx: click.Context, goal: str, comparison_id: str, key_file: str, output: str, origin: str | None) -> None:
    """Write a claim bundle: a comparison's reviews, every event they were computed from, an inclusion proof of each
    against a checkpoint signed by KEY, and the checkpoint. `verify` checks it with no ledger.

    The checkpoint is the one KEY signed of the log as it is now, if kept (the
    log has not grown since: publishing again changes no checkpoint a reader
    holds), else one signed now and kept (`checkpoints` lists them)."""
    try:  # (claimed before anything is signed: a file in the way must not leave a new checkpoint behind)
        file = open(output, "x", encoding="utf-8")  # noqa: SIM115 (removed again below when nothing is written to it)
    except OSError as exc:
        raise InvalidInput(f"--output {output}: cannot be written ({exc.strerror}); publish never overwrites a file") from None
    with file:
        try:
            with open_ledger(ctx, writes=True) as ledger:
                bundle = ledger.publish(goal, comparison_id, _read_text(key_file, "--key"), origin=origin, key_source=key_file)
        except BaseException:
            file.close()
            os.unlink(output)
            raise
        document = bundle.as_dict()
        json.dump(document, file, indent=1, ensure_ascii=False)
        file.write("\n")
    kept = bundle.checkpoint
    how = "kept already: the log has not grown since this key signed it" if bundle.checkpoint_reused else "signed now and kept"
    click.echo(
        f"wrote {output}: {len(document['reviews'])} review(s) of comparison {document['comparison_id']!r}, "
        f"{len(document['events'])} event(s) proved in signed checkpoint {kept.number} of {kept.tree_size} events ({how})"
    )


@click.command("verify")
@click.argument("bundle", metavar="CLAIM.json")
@click.option("--key", "keys", multiple=True, metavar="PUB", help="A public key (keygen's PREFIX.pub) the checkpoint must be signed by (repeatable).")
@click.option("--trusted-keys", metavar="FILE", help="A file of public keys, one a line: the checkpoint must be signed by one of them.")
@format_option("table", "json")
def verify_command(bundle: str, keys: tuple[str, ...], trusted_keys: str | None, fmt: str) -> None:
    """Check a claim bundle with no ledger and no network: the checkpoint's signature, every event's hashes and chain,
    every inclusion proof, and the reviews recomputed from the events with the same reducers. Exits 1 naming the problem."""
    from benchledger.ledger.api import verify_claim

    if not keys and not trusted_keys:
        raise click.UsageError("give the publisher's public key: --key PUB or --trusted-keys FILE")
    checked = verify_claim(_read_text(bundle, "CLAIM.json", limit=256 * 1024 * 1024), _public_keys(keys, trusted_keys), name=bundle)
    if fmt == "json":
        echo_json(checked.as_dict())
        return
    click.echo(
        f"verified: comparison {checked.comparison_id!r} of goal {checked.goal_id!r}, claim strength {checked.claim_strength}, "
        f"from {checked.events} event(s) in the log {checked.origin!r} of {checked.tree_size} events, signed by {', '.join(checked.signed_by)}"
    )
    for line in checked.checked:
        click.echo(f"- checked: {line}")
    for line in checked.not_checked:
        click.echo(f"- not checked: {line}")
