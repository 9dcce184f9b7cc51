"""Canonical JSON, content hashes, event ids and the per-goal hash chain.

The byte layouts here are the ledger's public contract (docs/hash-chain.md):
an outside auditor recomputes them with a few lines of any language.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import uuid
from typing import Any

import orjson

GENESIS_HASH = "0" * 64
# Namespace of benchledger's name-based (UUIDv5) event ids; never change it.
EVENT_ID_NAMESPACE = uuid.UUID("6f2c1d52-4a8e-5b0f-9d4e-2b7f1c3a9e10")
CHAIN_DOMAIN = "benchledger-chain-v1"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_lone_surrogates(text: str) -> str:
    """Write each lone UTF-16 surrogate (parsed from a ``\\ud800``-style escape) back as that escape.

    Such a character has no UTF-8 form, so it could be neither hashed, stored
    nor printed; inside JSON text the escape means exactly the same string.
    """
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, non-ASCII kept literally (hashed as UTF-8).

    ``NaN``/``Infinity`` are written as Python's JSON module writes them: the
    review commands accept them because LoopX does, while ``ingest`` refuses them
    before they get here. A lone surrogate (which ``ingest`` also refuses, but
    a review command reads as LoopX does) stays a ``\\uXXXX`` escape.

    The definition is ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` (:func:`_json_module_canonical`). orjson writes the same
    bytes several times faster for what it can write the same, so it goes first and
    its text is kept only when it provably is that text (:func:`_orjson_canonical`).
    """
    text = _orjson_canonical(value)
    return _json_module_canonical(value) if text is None else text


def _json_module_canonical(value: Any) -> str:
    try:
        text = _CANONICAL_ENCODER.encode(value)
    except RecursionError:
        # A value nested as deep as json.loads reads (a review reads what LoopX reads, near the interpreter's limit) is
        # written from a deeper stack than it was read at: it is written with room for its depth, not refused.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + _ROOM_TO_WRITE)
        try:
            text = _CANONICAL_ENCODER.encode(value)
        finally:
            sys.setrecursionlimit(limit)
    return escape_lone_surrogates(text) if not text.isascii() and _LONE_SURROGATE.search(text) else text


# More frames than a decoded value can nest (json.loads stops at the interpreter's limit, 1,000 by default).
_ROOM_TO_WRITE = 2000
# Built once: json.dumps builds an encoder on every call given any option (an append encodes every payload).
_CANONICAL_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# Subclasses of str, int, dict and list, dataclasses and datetimes go to _refuse (the json module writes
# some, refuses others): those values take the json module's way.
_ORJSON_OPTIONS = (
    orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)
_DIGITS = frozenset(b"0123456789")


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _orjson_canonical(value: Any) -> str | None:
    """``value``'s canonical JSON as orjson writes it, or None where that could differ from the definition.

    orjson writes what the json module writes with the canonical options
    (keys sorted by code point, ``,`` and ``:``, non-ASCII literal, control
    characters escaped alike, integers and most floats alike) except for
    NaN and infinities (it writes ``null``), floats the json module writes
    with an exponent (``1e-05``: orjson ``0.00001``; ``1.5e-07``: ``1.5e-7``;
    ``1e+16`` alike), and what it refuses (lone surrogates, integers beyond
    64 bits, keys that are not strings, nesting deeper than 255: the json
    module writes them). So its text is kept unless it holds ``null`` and
    does not read back as ``value`` (NaN equals nothing), ``+``, ``.0000``, or
    ``e-`` after a digit; all but the first are searches of the text, far
    cheaper than encoding. (UUIDs and enums, which the json module refuses,
    orjson writes: no payload holds one.) tests/perf_equivalence/test_canonical_orjson.py
    holds the two ways equal on generated JSON, floats of every exponent included.
    """
    try:
        data = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:  # (orjson.JSONEncodeError is one)
        return None
    if b"+" in data or b".0000" in data or (b"null" in data and orjson.loads(data) != value):
        return None
    at = data.find(b"e-")
    while at > 0:
        if data[at - 1] in _DIGITS:
            return None
        at = data.find(b"e-", at + 2)
    return data.decode()


def parse_json(text: str) -> Any:
    """``json.loads(text)``, decoded by orjson where its value is provably the json module's (a fold decodes every event).

    orjson parses the same JSON to the same values (floats correctly rounded, the last of
    duplicate keys, in first-seen order) but refuses ``NaN``/``Infinity``, numbers beyond the
    float range and lone surrogate escapes (the json module reads them), and reads an integer
    beyond 64 bits as a float. So a refusal goes to the json module (whose error, if any, is
    the one raised), and so does a text holding a run of 19 or more digits (any integer
    beyond 64 bits has one): a search of the bytes, as the digits become ``0``.
    tests/perf_equivalence/test_canonical_orjson.py holds the two equal on generated JSON.
    """
    try:
        data = text.encode()
        if _NINETEEN_DIGITS not in data.translate(_DIGITS_AS_ZERO):
            return orjson.loads(data)
    except (UnicodeEncodeError, orjson.JSONDecodeError):
        pass
    return json.loads(text)


_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_NINETEEN_DIGITS = b"0" * 19


def sha256_hex(data: str | bytes) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def event_id_for(goal_id: str, kind: str, payload_sha256: str, source_sha256: str | None = None) -> str:
    """Deterministic event id: the same observation in the same goal is the same event (idempotent appends).

    An artifact normalized from a document is one observation per source
    document: its id covers the SHA-256 of the source bytes as well, because
    compaction may drop what tells two documents apart (two preflights that
    differ only in ``generated_at``). Events stored as given (run-ledger rows,
    batch manifests, retractions) pass no ``source_sha256``: their content is
    the observation. Ids written before source hashes were part of identity
    have the content-only form; :func:`event_id_forms` accepts both.
    """
    name = f"{goal_id}\n{kind}\n{payload_sha256}" + (f"\n{source_sha256}" if source_sha256 else "")
    # uuid.uuid5 spelled out (its UUID object costs more than the hash): SHA-1 of namespace and name, 16 bytes, version 5, RFC 4122 variant.
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name.encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_NAMESPACE_BYTES = EVENT_ID_NAMESPACE.bytes


def attempt_source_sha256(source_sha256: str, attempt: str) -> str:
    """The source hash of a document observed again in a later attempt of its goal: its bytes' hash and the attempt.

    The same bytes in another attempt are another observation (docs/linking.md, "Attempts inside a goal"):
    stored with this as its ``source_sha256``, the event has an id of its own that :func:`event_id_forms` recomputes.
    """
    return sha256_hex(f"{source_sha256}\nattempt\n{attempt}")


def event_id_forms(goal_id: str, kind: str, payload_sha256: str, source_sha256: str | None) -> tuple[str, ...]:
    """The ids a stored event may carry: content-only, or (with a source hash) keyed on its source bytes too."""
    content_only = event_id_for(goal_id, kind, payload_sha256)
    return (content_only, event_id_for(goal_id, kind, payload_sha256, source_sha256)) if source_sha256 else (content_only,)


def chain_hash(
    prev_hash: str,
    *,
    goal_id: str,
    stream_version: int,
    kind: str,
    schema_version: str | None,
    payload_sha256: str,
    event_id: str,
    recorded_at: str,
    source: str,
    source_sha256: str | None,
) -> str:
    """SHA-256 over the previous chain hash and every stored field of the event but its position.

    Fields are joined with ``\\n`` in this order; a null field is the empty string.
    Position is left out so a goal exported alone re-imports with the same chain;
    the global order is covered by the ledger digest instead.
    """
    fields = [
        CHAIN_DOMAIN,
        prev_hash,
        goal_id,
        str(stream_version),
        kind,
        schema_version or "",
        payload_sha256,
        event_id,
        recorded_at,
        source,
        source_sha256 or "",
    ]
    return sha256_hex("\n".join(fields))


def digest_step(previous: str, chain: str) -> str:
    """One step of the ledger digest: a running SHA-256 over chain hashes in position order."""
    return sha256_hex(f"{previous}\n{chain}")
