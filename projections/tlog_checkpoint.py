"""C2SP ``tlog-checkpoint`` notes and C2SP ``signed-note`` text, as pure functions (no cryptography here).

A checkpoint is the note text ``<origin>\\n<tree size>\\n<base64 root hash>\\n``
(c2sp.org/tlog-checkpoint); a signed note is that text, a blank line, and one
line per signature, ``— <key name> <base64(4-byte key id || signature)>``
(c2sp.org/signed-note, the format of golang.org/x/mod/sumdb/note). A key id
is the first four bytes of ``SHA-256(key name || 0x0A || algorithm byte ||
public key)``; keys are written ``<name>+<key id hex>+<base64(algorithm byte
|| key)>``, a signing key with ``PRIVATE+KEY+`` before it. Ed25519 is
algorithm 1. The signing and checking themselves are
``benchledger.ledger.service.signing``'s (the ``[sign]`` extra).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from benchledger.errors import InvalidInput

ED25519 = 1
_SIGNATURE_PREFIX = "\u2014 "  # an em dash and a space
# A key name: non-empty, no space, no plus (signed-note).
_NAME = r"[^\s+]+"
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")


class MalformedNote(InvalidInput, ValueError):
    """Text that is not a checkpoint, a signed note or a note key."""


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: who (``origin``), how many leaves, their RFC 9162 root."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        """The note text (what is signed)."""
        return "".join(f"{line}\n" for line in (self.origin, str(self.size), base64.b64encode(self.root).decode(), *self.extensions))


@dataclass(frozen=True)
class NoteSignature:
    """One signature line of a signed note."""

    name: str
    key_id: bytes  # 4 bytes
    signature: bytes

    def line(self) -> str:
        return f"{_SIGNATURE_PREFIX}{self.name} {base64.b64encode(self.key_id + self.signature).decode()}\n"


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedNote(f"{what} is not base64: {text[:80]!r}") from None


def parse_checkpoint(text: str) -> Checkpoint:
    """The checkpoint of a note text (``text`` as signed: every line ends with a newline)."""
    if not text.endswith("\n"):
        raise MalformedNote("a checkpoint's text ends with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3 or any(not line for line in lines):
        raise MalformedNote("a checkpoint is at least three non-empty lines: origin, tree size, root hash")
    origin, size, root = lines[:3]
    if not _DECIMAL.fullmatch(size):
        raise MalformedNote(f"a checkpoint's second line is its tree size in decimal, not {size[:40]!r}")
    digest = _b64(root, "a checkpoint's root hash")
    if len(digest) != 32:
        raise MalformedNote(f"a checkpoint's root hash is 32 bytes, not {len(digest)}")
    return Checkpoint(origin, int(size), digest, tuple(lines[3:]))


def parse_signed_note(message: str) -> tuple[str, list[NoteSignature]]:
    """``(text, signatures)`` of a signed note (signed-note §"Signed note format")."""
    if any(ord(c) < 0x20 and c != "\n" for c in message):
        raise MalformedNote("a note holds no control character other than newline")
    split = message.rfind("\n\n")
    if split < 0:
        raise MalformedNote("a signed note is its text, a blank line, then its signature lines")
    text, lines = message[: split + 1], message[split + 2 :]
    if not lines.endswith("\n"):
        raise MalformedNote("a signed note ends with a newline")
    signatures = []
    for line in lines[:-1].split("\n"):
        match = re.fullmatch(f"{_SIGNATURE_PREFIX}({_NAME}) (\\S+)", line)
        if match is None:
            raise MalformedNote(f"not a signature line: {line[:80]!r}")
        raw = _b64(match.group(2), "a signature")
        if len(raw) < 5:
            raise MalformedNote("a signature is a 4-byte key id and the signature itself")
        signatures.append(NoteSignature(match.group(1), raw[:4], raw[4:]))
    if not signatures:
        raise MalformedNote("a signed note has at least one signature")
    return text, signatures


def signed_note(text: str, signatures: list[NoteSignature]) -> str:
    return text + "\n" + "".join(signature.line() for signature in signatures)


def key_id(name: str, algorithm: int, public_key: bytes) -> bytes:
    """The 4-byte id of a key: the first bytes of SHA-256(name, newline, algorithm byte, public key)."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([algorithm]) + public_key).digest()[:4]


@dataclass(frozen=True)
class NoteKey:
    """A key as a note key string holds it: its name, id, algorithm and key bytes (public, or an Ed25519 seed)."""

    name: str
    key_id: bytes
    algorithm: int
    key: bytes

    def text(self, *, private: bool = False) -> str:
        encoded = base64.b64encode(bytes([self.algorithm]) + self.key).decode()
        return ("PRIVATE+KEY+" if private else "") + f"{self.name}+{self.key_id.hex()}+{encoded}"


def parse_key(text: str, *, private: bool) -> NoteKey:
    """A verifier key ``<name>+<id>+<base64>`` (or with ``private``, a signer key ``PRIVATE+KEY+<name>+<id>+<base64>``)."""
    what = "signing key" if private else "public key"
    body = text.strip()
    if private:
        if not body.startswith("PRIVATE+KEY+"):
            raise MalformedNote(f"a {what} starts with PRIVATE+KEY+")
        body = body.removeprefix("PRIVATE+KEY+")
    match = re.fullmatch(f"({_NAME})\\+([0-9a-f]{{8}})\\+([A-Za-z0-9+/=]+)", body)
    if match is None:
        raise MalformedNote(f"not a {what}: expected <name>+<8 hex digits>+<base64> as `benchledger keygen` writes it")
    raw = _b64(match.group(3), f"a {what}")
    if len(raw) != 33 or raw[0] != ED25519:
        raise MalformedNote(f"the {what} is not an Ed25519 key (algorithm byte 1 and 32 bytes)")
    key = NoteKey(match.group(1), bytes.fromhex(match.group(2)), ED25519, raw[1:])
    if not private and key.key_id != key_id(key.name, ED25519, key.key):
        raise MalformedNote(f"the {what}'s id {key.key_id.hex()} is not the id of its name and key")
    return key
