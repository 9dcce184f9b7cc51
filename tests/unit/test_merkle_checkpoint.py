"""The checkpoint and signed-note formats (projections/tlog_checkpoint.py) against their specifications' published examples.

* C2SP tlog-checkpoint (github.com/C2SP/C2SP, tlog-checkpoint.md at commit
  5ba5ee830903e91240fc6f9f3a7a9293d49e69c9): its example checkpoint.
* golang.org/x/mod/sumdb/note (github.com/golang/mod, sumdb/note/note_test.go
  at commit fe2ec04f7c3c3aa6fad97631aafcff6e49e2d1db): the PeterNeumann keys,
  the note it signs and the exact signed message ``TestSign`` expects, and
  ``TestNewVerifier``'s rule that every mangling of a key is refused.
"""

from __future__ import annotations

import base64

import pytest

from benchledger.projections.tlog_checkpoint import (
    Checkpoint,
    MalformedNote,
    key_id,
    parse_checkpoint,
    parse_key,
    parse_signed_note,
    signed_note,
)

C2SP_EXAMPLE = (
    "example.com/behind-the-sofa\n"
    "20852163\n"
    "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    "\n"
    "\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
)
GO_VERIFIER = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_SIGNER = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
GO_SIGNED = GO_TEXT + "\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"


def test_the_c2sp_example_checkpoint_reads_and_writes_back_byte_for_byte():
    text, signatures = parse_signed_note(C2SP_EXAMPLE)
    checkpoint = parse_checkpoint(text)
    assert (checkpoint.origin, checkpoint.size) == ("example.com/behind-the-sofa", 20852163)
    assert checkpoint.root == base64.b64decode("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
    assert checkpoint.text() == text
    assert [s.name for s in signatures] == ["example.com/behind-the-sofa"]
    assert signed_note(text, signatures) == C2SP_EXAMPLE


def test_the_go_note_signed_message_reads_and_writes_back():
    text, signatures = parse_signed_note(GO_SIGNED)
    assert text == GO_TEXT
    assert [(s.name, s.key_id.hex(), len(s.signature)) for s in signatures] == [("PeterNeumann", "c74f20a3", 64)]
    assert signed_note(text, signatures) == GO_SIGNED


def test_the_go_note_keys_read_and_their_id_is_recomputed():
    public, private = parse_key(GO_VERIFIER, private=False), parse_key(GO_SIGNER, private=True)
    assert (public.name, public.key_id.hex(), len(public.key)) == ("PeterNeumann", "c74f20a3", 32)
    assert key_id(public.name, public.algorithm, public.key) == bytes.fromhex("c74f20a3")
    assert public.text() == GO_VERIFIER and private.text(private=True) == GO_SIGNER


def test_every_mangling_of_a_verifier_key_is_refused():
    """As TestNewVerifier: every proper substring, and every character changed by one."""
    for start in range(len(GO_VERIFIER)):
        for end in range(start + 1, len(GO_VERIFIER) + 1):
            if (start, end) != (0, len(GO_VERIFIER)):
                with pytest.raises(MalformedNote):
                    parse_key(GO_VERIFIER[start:end], private=False)
    for i in range(len(GO_VERIFIER)):
        mangled = GO_VERIFIER[:i] + chr(ord(GO_VERIFIER[i]) + 1) + GO_VERIFIER[i + 1 :]
        with pytest.raises(MalformedNote):
            parse_key(mangled, private=False)
    with pytest.raises(MalformedNote, match="not an Ed25519 key"):  # (TestNewVerifier: unknown algorithm, id adjusted)
        parse_key("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", private=False)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("origin\n7\n", "at least three non-empty lines"),
        ("origin\n07\n" + base64.b64encode(bytes(32)).decode() + "\n", "tree size in decimal"),
        ("origin\n-1\n" + base64.b64encode(bytes(32)).decode() + "\n", "tree size in decimal"),
        ("origin\n7\n" + base64.b64encode(bytes(31)).decode() + "\n", "32 bytes, not 31"),
        ("origin\n7\nnot base64!\n", "not base64"),
        ("origin\n7\n" + base64.b64encode(bytes(32)).decode(), "ends with a newline"),
        ("origin\n\n7\n" + base64.b64encode(bytes(32)).decode() + "\n", "non-empty lines"),
    ],
)
def test_a_malformed_checkpoint_is_refused_with_the_reason(text, problem):
    with pytest.raises(MalformedNote, match=problem):
        parse_checkpoint(text)


@pytest.mark.parametrize(
    "message",
    [GO_TEXT, GO_TEXT + "\n", GO_SIGNED[:-1], "\x01" + GO_SIGNED, GO_SIGNED + "Unexpected line.\n", GO_TEXT + "\n\u2014 Bad Name AAAAAAAA\n"],
)
def test_a_malformed_signed_note_is_refused(message):
    """TestOpen's malformed messages (those a parser refuses without a key)."""
    with pytest.raises(MalformedNote):
        parse_signed_note(message)


def test_a_checkpoint_with_extension_lines_keeps_them():
    checkpoint = Checkpoint("o", 3, bytes(32), ("ext one",))
    assert parse_checkpoint(checkpoint.text()) == checkpoint


# -- signatures (ledger/service/signing.py, the [sign] extra) ------------------------------------

GO_ENOCH_VERIFIER = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
GO_ENOCH_SIGNATURE = "\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"


def test_signing_the_go_note_gives_the_signed_message_go_expects():
    """TestSign: Ed25519 signatures are deterministic, so the signed note is byte for byte Go's."""
    from benchledger.ledger.service.signing import signer

    key = signer(GO_SIGNER, "key")
    assert key.sign(GO_TEXT) == GO_SIGNED
    assert key.public_text() == GO_VERIFIER


def test_the_go_signatures_verify_and_an_unknown_key_is_ignored():
    """TestOpen: Peter's and Enoch's signatures on the same text; a verifier that knows one ignores the other."""
    from benchledger.ledger.service.signing import verified_text

    both = GO_SIGNED + GO_ENOCH_SIGNATURE
    peter, enoch = parse_key(GO_VERIFIER, private=False), parse_key(GO_ENOCH_VERIFIER, private=False)
    assert verified_text(both, [peter], "note") == (GO_TEXT, ["PeterNeumann+c74f20a3"])
    assert verified_text(both, [peter, enoch], "note") == (GO_TEXT, ["PeterNeumann+c74f20a3", "EnochRoot+af0cfe78"])


def test_a_signature_that_does_not_verify_or_no_trusted_signature_is_refused():
    from benchledger.ledger.service.signing import verified_text
    from benchledger.projections.merkle import ProofError

    peter, enoch = parse_key(GO_VERIFIER, private=False), parse_key(GO_ENOCH_VERIFIER, private=False)
    line = GO_SIGNED.splitlines(keepends=True)[-1]
    corrupted = GO_TEXT + "\n" + line[:60] + "ABCD" + line[60:]
    with pytest.raises(ProofError, match="signature by PeterNeumann\\+c74f20a3 does not verify"):
        verified_text(corrupted, [peter], "note")
    with pytest.raises(ProofError, match="signed by none of the trusted keys"):
        verified_text(GO_SIGNED, [enoch], "note")
    with pytest.raises(ProofError, match="does not verify"):  # the text changed under the signature
        verified_text(GO_SIGNED.replace("problem,", "problem!"), [peter], "note")


def test_a_generated_key_signs_what_its_public_key_verifies():
    from benchledger.ledger.service.signing import generate_key, signer, verified_text

    private, public = generate_key("example.org/bench")
    assert private.startswith("PRIVATE+KEY+example.org/bench+") and public.startswith("example.org/bench+")
    key = signer(private, "key")
    note = key.sign(Checkpoint("example.org/bench", 3, bytes(32)).text())
    assert verified_text(note, [parse_key(public, private=False)], "note")[1] == [public.split("+")[0] + "+" + public.split("+")[1]]
    with pytest.raises(MalformedNote, match="not the id of its name and public key"):
        signer(private.replace("example.org/bench", "example.org/other"), "key")
