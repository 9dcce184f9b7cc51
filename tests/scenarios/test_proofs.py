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
        (("prove", "not-an-event"), "cannot prove: 'not-an-event': not an event id, a prefix of one (at least 4 characters of 0-9, a-f and -) or @POSITION"),
        (("prove", "@8"), "cannot prove: @8: no event at position 8"),
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
    # A table's times are to the second, as in every table (the JSON keeps the recorded microseconds).
    table = _ok(migrated_url, "checkpoints", "--format", "table")
    assert all(f" {c['recorded_at'][:19]}Z" in table and c["recorded_at"] not in table for c in kept)

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


# -- claim bundles --------------------------------------------------------------------------------


def _bundles(url: str, tmp_path: Path) -> tuple[dict, dict, str, str, str]:
    """Two bundles of goal g1's comparison, proved in the trees of 14 and of 21 events; the signing key, its public key, another key."""
    key, public = _keygen(tmp_path, "example.org/bench")
    other_key, _ = _keygen(tmp_path, "example.org/other")
    _ingest(url, "g0")
    _ingest(url, "g1")
    _ok(url, "publish", "--goal", "g1", "--comparison", "fixture-pair", "--key", key, "--output", str(tmp_path / "early.json"))
    _ingest(url, "g2")
    out = _ok(url, "publish", "--goal", "g1", "--comparison", "fixture-pair", "--key", key, "--output", str(tmp_path / "claim.json"))
    assert out.startswith(f"wrote {tmp_path / 'claim.json'}: 3 review(s) of comparison 'fixture-pair', 7 event(s)")
    early, late = (json.loads((tmp_path / name).read_text()) for name in ("early.json", "claim.json"))
    return early, late, Path(key).read_text(), Path(public).read_text(), Path(other_key).read_text()


def test_a_published_claim_verifies_offline_and_says_what_it_checked(migrated_url, tmp_path):
    early, late, _, public, _ = _bundles(migrated_url, tmp_path)
    assert parse_checkpoint(late["checkpoint"].split("\n\n")[0] + "\n").size == 21 and [e["position"] for e in late["events"]] == list(range(8, 15))
    checked = invoke("sqlite://", "verify", str(tmp_path / "claim.json"), "--key", str(tmp_path / "example.org_bench.pub"))
    assert checked.exit_code == 0, checked.output
    assert "verified: comparison 'fixture-pair' of goal 'g1', claim strength candidate_score_recovery_needs_attribution_review" in checked.output
    assert "- not checked: that the runs were honest" in checked.output
    document = json.loads(invoke("sqlite://", "verify", str(tmp_path / "early.json"), "--key", str(tmp_path / "example.org_bench.pub"), "--format", "json").output)
    assert document["tree_size"] == 14 and document["reviews"] == [f"{name} [{early['batch_id']}]" for name in ("learning-ledger", "review-claim", "review-verifier-attribution")]
    assert [c["tree_size"] for c in json.loads(_ok(migrated_url, "checkpoints", "--format", "json"))] == [14, 21]
    assert invoke("sqlite://", "verify", str(tmp_path / "claim.json")).exit_code == 2  # (no key: usage)
    again = invoke(migrated_url, "publish", "--goal", "g1", "--comparison", "fixture-pair", "--key", str(tmp_path / "example.org_bench.key"), "--output", str(tmp_path / "claim.json"))
    assert again.exit_code == 2 and "publish never overwrites a file" in again.output
    unknown = invoke(migrated_url, "publish", "--goal", "g1", "--comparison", "nope", "--key", str(tmp_path / "example.org_bench.key"), "--output", str(tmp_path / "x.json"))
    assert unknown.exit_code == 2 and "goal 'g1' holds no comparison 'nope'" in unknown.output
    assert unknown.output.rstrip().endswith("its comparisons: fixture-pair") and not (tmp_path / "x.json").exists()


def test_a_refused_publish_signs_nothing_and_the_comparison_event_id_names_the_comparison_too(migrated_url, tmp_path):
    """A user copies the comparison's id from `history --wide`: that names it too. A refusal (an unknown comparison, an
    output file in the way) keeps no new checkpoint and leaves no file."""
    key, public = _keygen(tmp_path, "example.org/bench")
    _ingest(migrated_url, "g1")
    history = json.loads(_ok(migrated_url, "history", "--goal", "g1", "--format", "json"))["entries"]
    (comparison,) = [e["event_id"] for e in history if e["kind"] == "comparison"]
    (tmp_path / "taken.json").write_text("mine")
    for wrong, output in (("nope", "nope.json"), ("fixture-pair", "taken.json")):
        refused = invoke(migrated_url, "publish", "--goal", "g1", "--comparison", wrong, "--key", key, "--output", str(tmp_path / output))
        assert refused.exit_code == 2 and len(refused.stderr.splitlines()) == 1
    assert json.loads(_ok(migrated_url, "checkpoints", "--format", "json")) == []
    assert not (tmp_path / "nope.json").exists() and (tmp_path / "taken.json").read_text() == "mine"
    by_event = _ok(migrated_url, "publish", "--goal", "g1", "--comparison", comparison, "--key", key, "--output", str(tmp_path / "claim.json"))
    assert "review(s) of comparison 'fixture-pair'" in by_event
    assert json.loads((tmp_path / "claim.json").read_text())["comparison_id"] == "fixture-pair"
    assert invoke("sqlite://", "verify", str(tmp_path / "claim.json"), "--key", public).exit_code == 0


def test_publishing_again_proves_against_the_kept_checkpoint_until_the_log_grows(migrated_url, tmp_path):
    """A reader who kept the checkpoint of an earlier bundle holds the next one's too, as long as nothing was appended."""
    key, public = _keygen(tmp_path, "example.org/bench")
    other_key, _ = _keygen(tmp_path, "example.org/other")
    _ingest(migrated_url, "g1")

    def publish(name: str, *extra: str) -> str:
        return _ok(migrated_url, "publish", "--goal", "g1", "--comparison", "fixture-pair", "--key", key, "--output", str(tmp_path / name), *extra)

    assert publish("first.json").endswith("proved in signed checkpoint 1 of 7 events (signed now and kept)\n")
    _ok(migrated_url, "checkpoint", "--key", other_key)  # (another key's checkpoint of the same tree, kept in between)
    again = publish("again.json")
    assert again.endswith("proved in signed checkpoint 1 of 7 events (kept already: the log has not grown since this key signed it)\n")
    assert (tmp_path / "again.json").read_text() == (tmp_path / "first.json").read_text()
    # Another origin is another checkpoint; so is a grown log.
    assert "checkpoint 3 of 7 events (signed now and kept)" in publish("elsewhere.json", "--origin", "example.org/elsewhere")
    _ingest(migrated_url, "g2")
    assert "checkpoint 4 of 14 events (signed now and kept)" in publish("grown.json")
    assert "checkpoint 4 of 14 events (kept already" in publish("grown-again.json")
    kept = json.loads(_ok(migrated_url, "checkpoints", "--format", "json"))
    assert [(c["number"], c["tree_size"], c["note"].split("\n")[0]) for c in kept] == [
        (1, 7, "example.org/bench"), (2, 7, "example.org/other"), (3, 7, "example.org/elsewhere"), (4, 14, "example.org/bench"),
    ]
    for name in ("again.json", "grown-again.json"):
        assert invoke("sqlite://", "verify", str(tmp_path / name), "--key", public).exit_code == 0


def _tampered(early: dict, late: dict, other_key: str, rng) -> tuple[str, dict]:
    """One generated tampering of ``late`` (what was done, the bundle)."""
    from benchledger.ledger.service.signing import signer
    from benchledger.ledger.storage import canonical

    bundle = json.loads(json.dumps(late))
    events, proofs = bundle["events"], bundle["inclusion_proofs"]
    i = rng.randrange(len(events))
    kind = rng.choice(
        ["field", "payload", "rechained", "drop", "reorder", "add", "verdict", "review-row", "truncate", "other-checkpoint",
         "other-key", "older-tree", "size", "proof-bit", "ids"]
    )
    if kind == "field":
        name = rng.choice(["kind", "recorded_at", "source", "goal_id", "stream_version", "position", "event_id", "chain_hash", "prev_hash", "payload_sha256", "source_sha256", "schema_version"])
        value = events[i][name]
        events[i][name] = value + 1 if isinstance(value, int) else ("x" if value is None else value[:-1] + ("0" if value[-1] != "0" else "1"))
        kind = f"field {name}"
    elif kind in ("payload", "rechained"):
        payload = json.loads(events[i]["payload"])
        payload[f"forged_{rng.randrange(1000)}"] = rng.randrange(1000)
        events[i]["payload"] = canonical.canonical_json(payload)
        if kind == "rechained":  # a forger who recomputes the hashes, the id and the goal's chain from there on
            forged = events[i]
            forged["payload_sha256"] = canonical.sha256_hex(forged["payload"])
            forged["event_id"] = canonical.event_id_for(forged["goal_id"], forged["kind"], forged["payload_sha256"], forged["source_sha256"])
            previous = forged["prev_hash"]
            for event in events[i:]:
                event["prev_hash"] = previous
                event["chain_hash"] = canonical.chain_hash(event["prev_hash"], **{k: event[k] for k in ("goal_id", "stream_version", "kind", "schema_version", "payload_sha256", "event_id", "recorded_at", "source", "source_sha256")})
                previous = event["chain_hash"]
    elif kind == "drop":
        del events[i], proofs[i]
    elif kind == "reorder":
        j = (i + rng.randrange(1, len(events))) % len(events)
        events[i], events[j], proofs[i], proofs[j] = events[j], events[i], proofs[j], proofs[i]
    elif kind == "add":
        where = rng.randrange(len(events) + 1)
        events.insert(where, dict(events[i]))
        proofs.insert(where, list(proofs[i]))
    elif kind == "verdict":
        row = rng.choice([r for r in bundle["reviews"] if r["payload"]])
        row["payload"]["decision"] = {**row["payload"].get("decision", {}), "claim_strength": f"forged-{rng.randrange(10**6)}"}
    elif kind == "review-row":
        if rng.random() < 0.5:
            del bundle["reviews"][rng.randrange(len(bundle["reviews"]))]
        else:
            bundle["reviews"][rng.randrange(len(bundle["reviews"]))]["position"] += 1
    elif kind == "truncate":
        proofs[i] = proofs[i][: rng.randrange(len(proofs[i]))]
    elif kind == "other-checkpoint":  # the proofs of the tree of 14, the checkpoint of 21
        j = rng.randrange(len(events))
        proofs[j] = early["inclusion_proofs"][j]
        if proofs[j] == late["inclusion_proofs"][j]:
            bundle["inclusion_proofs"] = early["inclusion_proofs"]
    elif kind == "other-key":
        bundle["checkpoint"] = signer(other_key, "other").sign(late["checkpoint"].split("\n\n")[0] + "\n")
    elif kind == "older-tree":  # an older checkpoint, signed by the right key, with these proofs
        bundle["checkpoint"] = early["checkpoint"]
    elif kind == "size":  # the proofs' tree size, or the checkpoint's (its signature kept), changed
        change = rng.choice([-7, -1, 1, 2, 7])
        if rng.random() < 0.5:
            bundle["tree_size"] += change
        else:
            origin, size, rest = late["checkpoint"].split("\n", 2)
            bundle["checkpoint"] = f"{origin}\n{int(size) + change}\n{rest}"
    elif kind == "proof-bit":
        j = rng.randrange(len(proofs[i]))
        node = bytearray(bytes.fromhex(proofs[i][j]))
        node[rng.randrange(32)] ^= 1 << rng.randrange(8)
        proofs[i][j] = node.hex()
    else:
        bundle[rng.choice(["batch_id", "comparison_id", "goal_id"])] = "forged"
    assert bundle != late, kind
    return kind, bundle


# What refuses a tampering that only one check can catch.
REASONS = {
    "rechained": "does not lead to the root of the tree of 21 leaves",
    "other-key": "signed by none of the trusted keys",
    "older-tree": "its proofs are for a tree of 21 events, its checkpoint is of 14",
    "verdict": "the published reviews are not what the included events imply",
    "proof-bit": "does not lead to the root",
    "payload": "payload does not hash to payload_sha256",
}


def test_a_thousand_tampered_bundles_are_each_refused_with_a_reason(migrated_url, tmp_path):
    import random
    from collections import Counter

    from benchledger.errors import BenchledgerError
    from benchledger.ledger.api import verify_claim

    early, late, _, public, other_key = _bundles(migrated_url, tmp_path)
    keys = [(public, "team.pub")]
    for untouched in (early, late):
        assert verify_claim(json.dumps(untouched), keys).ok
    rng = random.Random(29)
    refused: Counter[str] = Counter()
    for _ in range(1000):
        kind, bundle = _tampered(early, late, other_key, rng)
        with pytest.raises(BenchledgerError) as caught:
            verify_claim(json.dumps(bundle), keys)
            pytest.fail(f"{kind}: accepted")
        assert str(caught.value).strip(), kind
        assert REASONS.get(kind, "") in str(caught.value), (kind, str(caught.value))
        refused[kind.split()[0]] += 1
    assert len(refused) == 15 and min(refused.values()) > 30, refused
    # the same through the command line, for one of each
    for kind in ("verdict", "older-tree", "drop"):
        while (made := _tampered(early, late, other_key, rng))[0] != kind:
            pass
        path = _keep(tmp_path, f"{kind}.json", json.dumps(made[1]))
        result = invoke("sqlite://", "verify", path, "--key", str(tmp_path / "example.org_bench.pub"))
        assert result.exit_code == 1 and "benchledger: claim bundle refused: " in result.output, (kind, result.output)
