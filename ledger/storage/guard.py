"""What a persistent ledger agrees to store: the one guard on every way in.

:meth:`Store.append_streams`, :meth:`ChunkedAppend.append` (every ingest,
``import-loopx``, a review with ``--goal``, ``retract``: ``service.ingest.Ingest``)
and :meth:`Store.insert_verbatim` (``import-ndjson``, ``merge``) call
:func:`refuse_unstorable` before they write, so a new way into the store
cannot skip it. It refuses the whole call — nothing is written — when any
event, or the metadata stored beside it, breaks a rule:

* **storable text**: no NUL character and no unpaired UTF-16 surrogate (which has
  no UTF-8 form: it could be hashed and stored as an escape, but no command could
  print it) in any string or key;
* **JSON**: every number finite; a payload at most :data:`MAX_PAYLOAD_BYTES` of
  canonical JSON (a batch manifest, benchledger's own list of a batch's members,
  :data:`MAX_MANIFEST_BYTES`), nested at most :data:`MAX_NESTING_DEPTH` levels; ``kind``,
  ``schema_version`` and ``source`` within their column widths;
* **privacy at rest** (docs/privacy.md has the table): no string or key of a
  payload, and no goal id, kind, schema version or source label, may break a
  rule of :mod:`ledger.storage.privacy` (local paths, credentials, tokens, as
  written or as a reader sees them), and no credential-named field
  (``password``, ``api_key``, ``token`` ...) may hold a value.

Compaction runs first and is LoopX's: a LoopX pattern in a compacted text field
is *dropped* there, exactly as LoopX drops it; whatever still matches a rule here
is *refused*. The guard never rewrites a payload, so what a stored review reduces
is what LoopX would reduce.

Messages name where the problem is (the input, the JSON path) and which rule
fired, never the offending text: a key that itself matches a rule is shown as
``<refused key>``.

The throwaway in-memory ledger of a stateless review is not guarded: it reads
what LoopX reads (NaN, surrogates, paths and all) and stores nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from benchledger.errors import InvalidEvent
from benchledger.ledger.storage.privacy import (
    CREDENTIAL_FIELD,
    is_credential_field,
    names_credential,
    privacy_rule,
    rule_description,
)
from benchledger.projections.batch_manifest import BATCH_KIND

MAX_PAYLOAD_BYTES = 4 * 1024 * 1024
# A batch manifest is benchledger's own list of its members (an id and a kind each):
# one ingest of a 64 MiB NDJSON of small documents lists ~10^5-10^6 of them. It is held
# to this limit instead, which an export line (exchange.MAX_EXPORT_LINE_BYTES) can carry.
MAX_MANIFEST_BYTES = 128 * 1024 * 1024
MAX_NESTING_DEPTH = 64
# Column widths of ``events`` (ledger.storage.schema); checked before writing so that
# SQLite, which ignores them, and PostgreSQL, which enforces them, agree.
COLUMN_LIMITS = {"kind": 64, "schema_version": 128, "source": 64}
# How many problems one refusal names before it counts the rest.
PROBLEMS_SHOWN = 5

# -- walking a payload -----------------------------------------------------------------

_KEY, _VALUE_TEXT = "key", "value"


def _texts(payload: Any) -> tuple[list[str], bool]:
    """Every string and key of a payload (the fast screen joins them), and whether it holds a credential field."""
    texts: list[str] = []
    credential = False
    stack = [payload]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            texts.append(node)
        elif isinstance(node, dict):
            for key, value in node.items():
                key = str(key)
                texts.append(key)
                if isinstance(value, str):
                    texts.append(value)
                    credential = credential or is_credential_field(key, value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(item for item in node if isinstance(item, (str, dict, list)))
    return texts, credential


def _located(payload: Any) -> Iterator[tuple[str, Any, str]]:
    """``(where, node, role)`` for every value (role value) and key of a payload, and each credential field (role ``credential-field``).

    A key that breaks a rule (or holds a NUL or surrogate) is not spelled in
    the paths below it: messages never repeat what they refuse.
    """
    stack: list[tuple[Any, str]] = [(payload, "$")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                key = str(key)
                yield where, key, _KEY
                child = f"{where}.{key if unprintable(key) is None and privacy_rule(key) is None else '<refused key>'}"
                if is_credential_field(key, value):
                    yield child, value, CREDENTIAL_FIELD
                stack.append((value, child))
        elif isinstance(node, list):
            stack.extend((item, f"{where}[{index}]") for index, item in enumerate(node))
        else:
            yield where, node, _VALUE_TEXT


# An integer as large as the largest float has 309 digits: a text without such a run of digits holds none beyond it.
_FLOAT_SIZED_DIGITS = re.compile("[0-9]{309}")
_FLOAT_RANGE = "the reviews read scores and counts as floats, so the ledger stores only numbers within a float's range, about ±1.8e308"


def _may_exceed_floats(text: str) -> bool:
    """Whether JSON ``text`` may hold an integer that no float can hold (``False``: it holds none)."""
    return len(text) >= 309 and _FLOAT_SIZED_DIGITS.search(text) is not None


def _beyond_floats(number: int) -> bool:
    """Whether ``number`` (an int) is beyond the range of a float: a review reading it as one would fail (OverflowError)."""
    try:
        float(number)
    except OverflowError:
        return True
    return False


NUL_CHARACTER = "a NUL character"
LONE_SURROGATE = "an unpaired UTF-16 surrogate"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# The JSON escape of a UTF-16 surrogate, \\ud800 to \\udfff, in any case: the only way JSON text
# can carry one (UTF-8 cannot), and how canonical JSON writes a lone one (ledger.storage.canonical).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def may_hold_unprintable(json_text: str) -> bool:
    """Whether JSON text may decode to an :func:`unprintable` string: only a ``\\u0000`` or a surrogate escape makes one.

    A cheap screen before :func:`unprintable_in` decides (the escape may follow an escaped
    backslash, and a surrogate in a valid pair is no problem).
    """
    return "\\" in json_text and ("\\u0000" in json_text or _SURROGATE_ESCAPE.search(json_text) is not None)


def unprintable(text: str) -> str | None:
    """What keeps ``text`` from being stored and printed as text (:data:`NUL_CHARACTER`, :data:`LONE_SURROGATE`), or ``None``."""
    if "\x00" in text:
        return NUL_CHARACTER
    if _LONE_SURROGATE.search(text):
        return LONE_SURROGATE
    return None


def unprintable_in(value: Any) -> str | None:
    """:func:`unprintable` over every string and key of a decoded JSON value (a NUL anywhere is named first)."""
    texts, _ = _texts(value)
    return unprintable(_SEPARATOR.join(texts))


# Separates the texts of a payload for one screen of them all. A double quote ends
# every path or secret value the rules match, is no word character, and no rule's
# screen fragment holds it: a match inside one text is a match in the joined text.
_SEPARATOR = '"'


def nesting_depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value, without recursion (stops counting past the limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def payload_problems(payload: Any, body: str, *, limit: int = MAX_PAYLOAD_BYTES) -> list[tuple[str, str]]:
    """Why ``payload`` (whose canonical JSON is ``body``) may not be stored, as ``(place, problem)``; empty when it may.

    Each test is screened on ``body`` first (:func:`_may_break_a_rule`), so a
    storable payload costs a few substring searches and one privacy screen of
    the texts not seen before; the walk below decides wherever a screen fires.
    """
    problems: list[tuple[str, str]] = []
    if len(body) > limit // 4 and len(body.encode("utf-8", "surrogatepass")) > limit:
        problems.append(("the payload", f"is larger than the {limit}-byte limit as canonical JSON"))
    if body.count("{") + body.count("[") > MAX_NESTING_DEPTH and nesting_depth(payload) > MAX_NESTING_DEPTH:
        problems.append(("the payload", f"is nested deeper than the {MAX_NESTING_DEPTH}-level limit"))
    numbers_to_check = "NaN" in body or "Infinity" in body or _may_exceed_floats(body)
    if not (numbers_to_check or may_hold_unprintable(body) or _may_break_a_rule(payload, body)):
        return problems
    found: set[tuple[str, str]] = set()
    for where, node, role in _located(payload):
        if role == CREDENTIAL_FIELD:
            found.add((where, f"is a credential-named field with a value [{CREDENTIAL_FIELD}]"))
        elif isinstance(node, float):
            if not math.isfinite(node):
                found.add((where, "is NaN or infinite; the ledger stores only finite numbers"))
        elif isinstance(node, int) and _beyond_floats(node):
            found.add((where, f"is an integer of {len(str(abs(node)))} digits, beyond the range of a float: {_FLOAT_RANGE}"))
        elif isinstance(node, str):
            place = f"a key of {where}" if role == _KEY else where
            reason = unprintable(node)
            if reason:
                found.add((place, f"contains {reason}"))
            rule = privacy_rule(node)
            if rule is not None:
                found.add((place, f"holds {rule_description(rule)} [{rule}]"))
    return problems + sorted(found)


# Texts that broke no rule and named no credential when last screened: most keys and
# many values recur in every payload of a kind, and are not screened again. Emptied
# when full, so that texts seen once (ids, hashes) cannot grow it without bound.
_SCREENED_CLEAN: set[str] = set()
_SCREENED_CLEAN_LIMIT = 1 << 16


def _may_break_a_rule(payload: Any, body: str) -> bool:
    """Whether a string or key of ``payload`` may break a privacy rule, or a field may be a credential (``False``: none does).

    Without a backslash in ``body`` no string of it is escaped, so splitting it
    at its double quotes gives every key and string value exactly (in the odd
    places; a key that is not a string is written as JSON writes it, and no
    rule matches ``true``, ``null``, ``NaN`` or a number). Otherwise the
    payload is walked for its texts. Texts not screened before are screened
    together, joined by :data:`_SEPARATOR`; one that names a credential (as a
    key it would make a credential field) is left to the walk.
    """
    if "\\" in body:
        texts, credential = _texts(payload)
        return credential or privacy_rule(_SEPARATOR.join(texts)) is not None
    unseen = set(body.split('"')[1::2])
    unseen.difference_update(_SCREENED_CLEAN)
    if not unseen:
        return False
    if any(names_credential(text) for text in unseen) or privacy_rule(_SEPARATOR.join(unseen)) is not None:
        return True
    if len(_SCREENED_CLEAN) + len(unseen) > _SCREENED_CLEAN_LIMIT:
        _SCREENED_CLEAN.clear()
    _SCREENED_CLEAN.update(unseen)
    return False


def metadata_problems(name: str, value: str | None, *, text_judged_in_payload: bool = False) -> list[str]:
    """Why a stored column of an event (``goal_id``, ``kind``, ``schema_version``, ``source``) may not be stored.

    ``text_judged_in_payload``: the column copies a field of the payload, whose text the payload's check judges and
    names by its JSON path; only the column's width is checked here, so a problem is said once.
    """
    if value is None:
        return []
    limit = COLUMN_LIMITS.get(name)
    if limit is not None and len(value) > limit:
        return [f"{name} is {len(value)} characters, longer than the {limit} the ledger stores"]
    if text_judged_in_payload:
        return []
    reason = unprintable(value)
    if reason:
        return [f"{name} contains {reason}"]
    rule = privacy_rule(value)
    return [f"{name} holds {rule_description(rule)} [{rule}]"] if rule else []


@dataclass(frozen=True)
class Storable:
    """One event as the guard sees it: its stored columns, its payload and where it came from (for messages)."""

    goal_id: str
    kind: str
    schema_version: str | None
    source: str
    payload: Any
    body: str
    origin: str | None = None


def storage_problems(items: Iterable[Storable]) -> list[tuple[str, str]]:
    """Every problem of ``items`` (module docstring) as ``(where, problem)``: the input, then what is wrong in it."""
    problems: list[tuple[str, str]] = []
    checked: set[tuple[str, str]] = set()  # goal ids and sources, each tested once
    column_problems: dict[tuple[str, str | None, bool], list[str]] = {}  # kinds and schema versions, each tested once
    for item in items:
        where = item.origin or f"this {item.kind}"
        for name, value in (("goal_id", item.goal_id), ("source", item.source)):
            if (name, value) not in checked:
                checked.add((name, value))
                problems += [("the write", p) for p in metadata_problems(name, value)]
        schema_in_payload = isinstance(item.payload, dict) and item.payload.get("schema_version") == item.schema_version
        for column in (("kind", item.kind, False), ("schema_version", item.schema_version, schema_in_payload)):
            if column not in column_problems:
                column_problems[column] = metadata_problems(column[0], column[1], text_judged_in_payload=column[2])
            problems += [(where, p) for p in column_problems[column]]
        problems += [(where, f"{place} of this {item.kind} {p}") for place, p in payload_problems(item.payload, item.body, limit=_payload_limit(item.kind))]
    return problems


def _payload_limit(kind: str) -> int:
    return MAX_MANIFEST_BYTES if kind == BATCH_KIND else MAX_PAYLOAD_BYTES


def refuse_unstorable(items: Iterable[Storable]) -> None:
    """Raise :class:`UnstorableContent` when any of ``items`` may not be stored; the store calls it on every write."""
    problems = storage_problems(items)
    if problems:
        raise UnstorableContent(problems)


class UnstorableContent(InvalidEvent):
    """The ledger refused to store what a write held (exit 1, as for any input the ledger refuses); nothing was written.

    ``problems`` lists every one as ``(where, problem)``; ``str()`` names the first few on one line.
    """

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        shown = "; ".join(f"{where}: {problem}" for where, problem in problems[:PROBLEMS_SHOWN])
        more = f"; and {len(problems) - PROBLEMS_SHOWN} more" if len(problems) > PROBLEMS_SHOWN else ""
        super().__init__(f"{shown}{more}; nothing was written (what the ledger refuses: docs/privacy.md)")
        self.problems = list(problems)
