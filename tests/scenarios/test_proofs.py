"""Proofs from the ledger's Merkle log, as a user types them (docs/proofs.md), on every backend.

A maintainer keeps a checkpoint; the ledger grows; ``prove-consistency`` and
``verify-consistency`` (no ledger) show it only grew. Someone rewrites an old
event in SQL (triggers dropped) and rebuilds the log to match: the new
checkpoint no longer extends the kept one, and ``verify-consistency`` says so.
``prove`` gives each event a path that a verifier recomputes with nothing but
the event's chain hash and the checkpoint.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from benchledger.ledger.storage.schema import drop_immutability_ddl
from benchledger.projections import merkle
from benchledger.projections.tlog_checkpoint import parse_checkpoint
from tests.helpers import edit_in_sql, invoke

DEMO = sorted(str(p) for p in (Path(__file__).parents[2] / "examples" / "demo").glob("*.json"))


def _ingest(url: str, goal: str) -> None:
    result = invoke(url, "ingest", "--goal", goal, *DEMO)
    assert result.exit_code == 0, result.output


def _ok(url: str, *args: str) -> str:
    result = invoke(url, *args)
    assert result.exit_code == 0, result.output
    return result.output


def _keep(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _event_ids(url: str, goal: str) -> list[str]:
    return [entry["event_id"] for entry in json.loads(_ok(url, "history", "--goal", goal, "--format", "json"))["entries"]]


def test_the_log_only_grew_and_a_rewrite_is_caught_by_a_kept_checkpoint(migrated_url, tmp_path):
    _ingest(migrated_url, "g1")
    old = _keep(tmp_path, "old.checkpoint", _ok(migrated_url, "checkpoint"))
    assert _ok(migrated_url, "checkpoint").splitlines()[:2] == ["benchledger", "7"]
    _ingest(migrated_url, "g2")
    _ingest(migrated_url, "g3")
    new = _keep(tmp_path, "new.checkpoint", _ok(migrated_url, "checkpoint"))
    proof = _keep(tmp_path, "proof.json", _ok(migrated_url, "prove-consistency", "7", "--format", "json"))
    assert json.loads(Path(proof).read_text())["new_size"] == 21

    checked = invoke(migrated_url, "verify-consistency", old, new, proof)
    assert checked.exit_code == 0, checked.output
    assert "consistent: the log 'benchledger' of 21 events" in checked.output and "signatures: not checked (no --key)" in checked.output
    # (the other way round, the proof proves nothing)
    backwards = invoke(migrated_url, "verify-consistency", new, old, proof)
    assert backwards.exit_code == 1 and "the checkpoints are of 21 and 7" in backwards.output

    # Rewrite event 3 behind benchledger's back, then rebuild the log so that it matches the events again.
    for statement in drop_immutability_ddl("postgresql" if migrated_url.startswith("postgresql") else "sqlite"):
        edit_in_sql(migrated_url, statement)
    edit_in_sql(migrated_url, f"UPDATE events SET chain_hash = '{'ab' * 32}' WHERE position = 3")
    # (the leaf of position 3 and the four complete nodes above it in a tree of 21)
    assert json.loads(_ok(migrated_url, "replay", "--format", "json"))["log_nodes_repaired"] == 5
    rewritten = _keep(tmp_path, "rewritten.checkpoint", _ok(migrated_url, "checkpoint"))
    forged = _keep(tmp_path, "forged.json", _ok(migrated_url, "prove-consistency", "7", "--format", "json"))
    refused = invoke(migrated_url, "verify-consistency", old, rewritten, forged)
    assert refused.exit_code == 1
    assert "benchledger: the consistency proof does not lead to the old root (tree of 7 leaves)" in refused.output
    # The proof made before the rewrite does not tie the new root to the kept one either.
    assert invoke(migrated_url, "verify-consistency", old, rewritten, proof).exit_code == 1


def test_every_event_is_proved_in_the_checkpoint_from_its_chain_hash_alone(migrated_url):
    _ingest(migrated_url, "g1")
    _ingest(migrated_url, "g2")
    ids = _event_ids(migrated_url, "g1") + _event_ids(migrated_url, "g2")
    checkpoint = parse_checkpoint(_ok(migrated_url, "checkpoint"))
    proved = json.loads(_ok(migrated_url, "prove", *ids, "--format", "json"))
    assert proved["tree_size"] == checkpoint.size == 14 and proved["root_hash"] == checkpoint.root.hex()
    assert [p["event_id"] for p in proved["proofs"]] == ids
    for p in proved["proofs"]:
        leaf = merkle.leaf_hash(bytes.fromhex(p["chain_hash"]))
        merkle.verify_inclusion(p["position"] - 1, checkpoint.size, leaf, [bytes.fromhex(n) for n in p["proof"]], checkpoint.root)

    # Against an earlier tree: the tree of the first 7 events holds g1's events, not g2's.
    earlier = parse_checkpoint(_ok(migrated_url, "checkpoint", "--tree-size", "7"))
    first = json.loads(_ok(migrated_url, "prove", ids[0], "--tree-size", "7", "--format", "json"))["proofs"][0]
    merkle.verify_inclusion(0, 7, merkle.leaf_hash(bytes.fromhex(first["chain_hash"])), [bytes.fromhex(n) for n in first["proof"]], earlier.root)
    later = invoke(migrated_url, "prove", ids[-1], "--tree-size", "7")
    assert later.exit_code == 2 and f"event {ids[-1]} is at position 14, after the tree of 7 events" in later.output
    assert "tree of 14 events, root" in _ok(migrated_url, "prove", ids[0])


def test_an_empty_ledger_has_the_empty_tree(migrated_url):
    note = _ok(migrated_url, "checkpoint", "--origin", "example.org/bench")
    assert note == f"example.org/bench\n0\n{base64.b64encode(merkle.EMPTY_ROOT).decode()}\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("prove", "not-an-event"), "no event 'not-an-event' in this ledger"),
        (("prove", "--tree-size", "8", "x"), "--tree-size 8: the ledger holds 7 event(s), so its trees have 0 to 7 leaves"),
        (("checkpoint", "--tree-size", "99"), "--tree-size 99: the ledger holds 7 event(s)"),
        (("prove-consistency", "8"), "OLD_SIZE 8: a consistency proof runs from a tree of 1 to 7 events"),
        (("prove-consistency", "3", "9"), "--tree-size 9: the ledger holds 7 event(s)"),
    ],
)
def test_a_proof_the_ledger_cannot_give_is_refused_with_the_reason(migrated_url, args, message):
    _ingest(migrated_url, "g1")
    result = invoke(migrated_url, *args)
    assert result.exit_code == 2 and message in result.output


def test_verify_consistency_names_the_file_it_cannot_read(migrated_url, tmp_path):
    _ingest(migrated_url, "g1")
    good = _keep(tmp_path, "good.checkpoint", _ok(migrated_url, "checkpoint"))
    proof = _keep(tmp_path, "proof.json", _ok(migrated_url, "prove-consistency", "7", "--format", "json"))
    other = _keep(tmp_path, "other.checkpoint", _ok(migrated_url, "checkpoint", "--origin", "elsewhere"))
    cases = [
        ((good, str(tmp_path / "missing"), proof), 2, "NEW.checkpoint"),
        ((good, _keep(tmp_path, "bad.checkpoint", "benchledger\nseven\nAAAA\n"), proof), 2, "bad.checkpoint: a checkpoint's second line is its tree size"),
        ((good, good, _keep(tmp_path, "bad.json", "{}")), 2, "bad.json: not a consistency proof"),
        ((good, other, proof), 1, "the checkpoints are of two logs: 'benchledger' and 'elsewhere'"),
    ]
    for args, code, message in cases:
        result = invoke(migrated_url, "verify-consistency", *args)
        assert result.exit_code == code and message in result.output, (args, result.output)


# -- signed checkpoints ---------------------------------------------------------------------------


def _keygen(tmp_path: Path, name: str) -> tuple[str, str]:
    prefix = str(tmp_path / name.replace("/", "_"))
    result = invoke("sqlite://", "keygen", "--name", name, "--output", prefix)
    assert result.exit_code == 0, result.output
    return f"{prefix}.key", f"{prefix}.pub"


def test_signed_checkpoints_are_kept_and_verified_with_the_public_key(migrated_url, tmp_path):
    key, public = _keygen(tmp_path, "example.org/bench")
    other_key, other_public = _keygen(tmp_path, "example.org/other")
    assert (Path(key).stat().st_mode & 0o777) == 0o600
    again = invoke(migrated_url, "keygen", "--name", "x", "--output", key.removesuffix(".key"))
    assert again.exit_code == 2 and "keygen never overwrites a key" in again.output

    _ingest(migrated_url, "g1")
    first = _keep(tmp_path, "1.checkpoint", _ok(migrated_url, "checkpoint", "--key", key))
    assert Path(first).read_text().startswith("example.org/bench\n7\n")
    _ingest(migrated_url, "g2")
    second = _keep(tmp_path, "2.checkpoint", _ok(migrated_url, "checkpoint", "--key", key))
    kept = json.loads(_ok(migrated_url, "checkpoints", "--format", "json"))
    assert [(c["number"], c["tree_size"]) for c in kept] == [(1, 7), (2, 14)]
    assert [c["note"] for c in kept] == [Path(first).read_text(), Path(second).read_text()]
    # The key never enters the ledger.
    assert not any(Path(key).read_text().strip() in c["note"] for c in kept)

    proof = _keep(tmp_path, "proof.json", _ok(migrated_url, "prove-consistency", "7", "--format", "json"))
    checked = invoke(migrated_url, "verify-consistency", first, second, proof, "--key", public)
    assert checked.exit_code == 0 and "signatures: checked, by example.org/bench+" in checked.output
    trusted = _keep(tmp_path, "trusted", f"# the team's keys\n{Path(other_public).read_text()}{Path(public).read_text()}")
    assert invoke(migrated_url, "verify-consistency", first, second, proof, "--trusted-keys", trusted).exit_code == 0
    wrong = invoke(migrated_url, "verify-consistency", first, second, proof, "--key", other_public)
    assert wrong.exit_code == 1 and "1.checkpoint: signed by none of the trusted keys" in wrong.output
    unsigned = _keep(tmp_path, "unsigned.checkpoint", _ok(migrated_url, "checkpoint", "--origin", "example.org/bench"))
    refused = invoke(migrated_url, "verify-consistency", unsigned, second, proof, "--key", public)
    assert refused.exit_code == 1 and "unsigned.checkpoint: not a signed note" in refused.output
    # A signature by another key on the same text is not the trusted one's.
    forged = _keep(tmp_path, "forged.checkpoint", _ok(migrated_url, "checkpoint", "--key", other_key, "--origin", "example.org/bench"))
    assert invoke(migrated_url, "verify-consistency", first, forged, proof, "--key", public).exit_code == 1

    ids = _event_ids(migrated_url, "g1")
    proved = json.loads(_ok(migrated_url, "prove", ids[0], "--checkpoint", "1", "--format", "json"))
    assert proved["tree_size"] == 7 and proved["checkpoint"] == Path(first).read_text()
    assert invoke(migrated_url, "prove", ids[0], "--checkpoint", "9").exit_code == 2


def test_a_rewritten_ledger_is_not_signed_again(migrated_url, tmp_path):
    key, _ = _keygen(tmp_path, "example.org/bench")
    _ingest(migrated_url, "g1")
    _ok(migrated_url, "checkpoint", "--key", key)
    ids = _event_ids(migrated_url, "g1")
    for statement in drop_immutability_ddl("postgresql" if migrated_url.startswith("postgresql") else "sqlite"):
        edit_in_sql(migrated_url, statement)
    edit_in_sql(migrated_url, f"UPDATE events SET chain_hash = '{'ab' * 32}' WHERE position = 3")
    _ok(migrated_url, "replay")  # (the log rebuilt from the rewritten events)
    _ingest(migrated_url, "g2")
    refused = invoke(migrated_url, "checkpoint", "--key", key)
    assert refused.exit_code == 1
    assert "refused to sign: the log's tree of 7 events no longer has the root checkpoint 1 signed" in refused.output
    assert len(json.loads(_ok(migrated_url, "checkpoints", "--format", "json"))) == 1
    stale = invoke(migrated_url, "prove", ids[0], "--checkpoint", "1")
    assert stale.exit_code == 1 and "checkpoint 1 signed a root the log's tree of 7 events no longer has" in stale.output


def test_a_signing_key_is_refused_wherever_it_would_be_stored(migrated_url, tmp_path):
    key, _ = _keygen(tmp_path, "example.org/bench")
    run = json.loads(Path(DEMO[3]).read_text())
    run["job_name"] = f"signed with {Path(key).read_text().strip()}"
    leaked = _keep(tmp_path, "run.json", json.dumps(run))
    result = invoke(migrated_url, "ingest", "--goal", "g1", leaked)
    assert result.exit_code == 1 and "signed-note signing key" in result.output
    assert invoke(migrated_url, "checkpoint", "--key", key, "--tree-size", "0").exit_code == 2  # (--key signs the current head)
