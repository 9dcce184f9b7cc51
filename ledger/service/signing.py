"""Ed25519 note signatures (c2sp.org/signed-note) over checkpoints, with the ``cryptography`` package (the ``[sign]`` extra).

The formats are ``projections/tlog_checkpoint.py``'s; this module makes and
checks the signatures themselves, and is imported only by the commands that
sign or check (``keygen``, ``checkpoint --key``, ``verify-consistency --key``,
``publish``, ``verify``): an ``ingest`` never loads it. Keys never enter the
ledger: a signing key is read from its file, used, and dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchledger.errors import InvalidInput
from benchledger.projections.merkle import ProofError
from benchledger.projections.tlog_checkpoint import (
    ED25519,
    MalformedNote,
    NoteKey,
    NoteSignature,
    key_id,
    parse_key,
    parse_signed_note,
    signed_note,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


class SigningUnavailable(InvalidInput):
    """The ``cryptography`` package is not installed."""


def _ed25519() -> type[Ed25519PrivateKey]:
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        raise SigningUnavailable(
            "signing and checking signatures needs the 'sign' extra (the cryptography package): pip install 'benchledger[sign]'"
        ) from None
    return Ed25519PrivateKey


def generate_key(name: str) -> tuple[str, str]:
    """A new Ed25519 key named ``name``: ``(signing key text, public key text)`` in the note key format."""
    if not name or any(c.isspace() or c == "+" for c in name):
        raise InvalidInput(f"a key name is non-empty, without spaces or '+': {name!r}")
    private = _ed25519().generate()
    public = private.public_key().public_bytes_raw()
    ident = key_id(name, ED25519, public)
    return NoteKey(name, ident, ED25519, private.private_bytes_raw()).text(private=True), NoteKey(name, ident, ED25519, public).text()


@dataclass(frozen=True)
class Signer:
    """A signing key, read from its text: its name, its id, and the private key."""

    name: str
    key_id: bytes
    private: Ed25519PrivateKey

    def sign(self, text: str) -> str:
        """``text`` as a signed note carrying this key's signature."""
        return signed_note(text, [NoteSignature(self.name, self.key_id, self.private.sign(text.encode()))])

    def public_text(self) -> str:
        return NoteKey(self.name, self.key_id, ED25519, self.private.public_key().public_bytes_raw()).text()


def signer(text: str, where: str) -> Signer:
    """The signing key of a key file's text (``PRIVATE+KEY+…`` as ``keygen`` writes it); its id must be its public key's."""
    try:
        key = parse_key(text, private=True)
    except MalformedNote as exc:
        raise MalformedNote(f"{where}: {exc}") from None
    private = _ed25519().from_private_bytes(key.key)
    if key_id(key.name, ED25519, private.public_key().public_bytes_raw()) != key.key_id:
        raise MalformedNote(f"{where}: the signing key's id {key.key_id.hex()} is not the id of its name and public key")
    return Signer(key.name, key.key_id, private)


def verifier_keys(texts: Sequence[tuple[str, str]]) -> list[NoteKey]:
    """The public keys of ``(text, where)`` pairs: a key file, or a trusted-keys file of one key a line (``#`` comments)."""
    keys = []
    for text, where in texts:
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip() and not line.lstrip().startswith("#"):
                try:
                    keys.append(parse_key(line, private=False))
                except MalformedNote as exc:
                    raise MalformedNote(f"{where} line {number}: {exc}") from None
    if not keys:
        raise InvalidInput("no public key given: " + ", ".join(where for _, where in texts))
    return keys


def verified_text(message: str, keys: Sequence[NoteKey], where: str) -> tuple[str, list[str]]:
    """The note text of a signed note, and the names of the ``keys`` whose signature on it verifies.

    As signed-note says, a signature by a key not among ``keys`` is ignored; one
    by a key among them must verify; at least one must be there. Otherwise
    :class:`~benchledger.projections.merkle.ProofError` (a check that says no).
    """
    _ed25519()
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        text, signatures = parse_signed_note(message)
    except MalformedNote as exc:
        raise ProofError(f"{where}: not a signed note ({exc})") from None
    known = {(key.name, key.key_id): key for key in keys}
    verified = []
    for signature in signatures:
        key = known.get((signature.name, signature.key_id))
        if key is None:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(key.key).verify(signature.signature, text.encode())
        except InvalidSignature:
            raise ProofError(f"{where}: its signature by {key.name}+{key.key_id.hex()} does not verify") from None
        verified.append(f"{key.name}+{key.key_id.hex()}")
    if not verified:
        names = ", ".join(sorted({f"{s.name}+{s.key_id.hex()}" for s in signatures}))
        raise ProofError(f"{where}: signed by none of the trusted keys (signed by {names})")
    return text, verified
