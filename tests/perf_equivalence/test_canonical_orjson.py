"""``canonical_json`` writes with orjson where that gives the json module's bytes: it must give them everywhere.

The definition (docs/hash-chain.md) is ``json.dumps(value, sort_keys=True,
separators=(",", ":"), ensure_ascii=False)`` with lone surrogates escaped. orjson
writes some values differently (NaN, floats the json module writes with an
exponent) or refuses them (lone surrogates, integers beyond 64 bits): the text
of either way must be the definition's, and the fast way must be the one taken
for the payloads a ledger stores.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.ledger.storage import canonical


def definition(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)


# Floats as bit patterns (every exponent, subnormals, NaN, infinities) and as decimal exponents around the json module's switch to exponents (1e-4, 1e16).
any_float = st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0])
near_switch = st.builds(lambda m, e: float(f"{m}e{e}"), st.integers(1, 10**17), st.integers(-30, 30))
floats = st.floats() | any_float | near_switch
texts = st.lists(
    st.text(max_size=4) | st.sampled_from(["\ud800", "\x00", "\x1f", "\x7f", "\u2028", "é", "\U0001f600", "1e-5", "e+", ".0000", "null"]),
    max_size=3,
).map("".join)
leaves = st.none() | st.booleans() | st.integers() | st.integers(-(2**70), 2**70) | floats | texts
values = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=4) | st.tuples(children, children) | st.dictionaries(texts, children, max_size=5),
    max_leaves=25,
)


@settings(max_examples=3000)
@given(values)
def test_canonical_json_is_the_definition(value):
    assert canonical.canonical_json(value) == definition(value)


@settings(max_examples=3000)
@given(floats)
def test_every_float_is_written_as_the_json_module_writes_it(number):
    for value in (number, [number], {"a": number, "b": -number}):
        assert canonical.canonical_json(value) == definition(value)


def test_stored_payloads_take_the_fast_way():
    """The corpus documents (what ingest stores) are written by orjson, and as the json module writes them."""
    documents = []
    for path in sorted(Path(__file__).parents[1].glob("conformance/corpus/**/*.json")):
        try:
            documents.append(json.loads(path.read_bytes()))
        except ValueError:
            continue  # (the corpus holds files that are not JSON too: ingest stores nothing of them)
    assert len(documents) > 100
    fast = [document for document in documents if canonical._orjson_canonical(document) is not None]
    assert len(fast) >= 0.9 * len(documents)
    assert all(canonical.canonical_json(document) == definition(document) for document in documents)


def test_nan_and_infinities_keep_the_json_modules_words():
    assert canonical.canonical_json({"delta": math.nan, "x": [math.inf, -math.inf, None]}) == '{"delta":NaN,"x":[Infinity,-Infinity,null]}'


def same_json_values(a, b):
    """Equal, and of the same types all the way down (1 and 1.0 are equal, a big integer read as a float is not it); NaN is NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_json_values(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same_json_values, a, b))
    return a == b


number_texts = st.one_of(
    st.integers(-(2**80), 2**80).map(str),
    st.sampled_from(["1e400", "-1e400", "1E-400", "-0", "-0.0", "1.7976931348623157e308", "4.9e-324", "18446744073709551616", "-9223372036854775809"]),
    st.builds(lambda m, f, e: f"{m}.{f}e{e}", st.integers(-(10**20), 10**20), st.integers(0, 10**20), st.integers(-350, 350)),
)


@settings(max_examples=3000)
@given(values, st.lists(number_texts, max_size=3), st.booleans())
def test_parse_json_reads_what_the_json_module_reads(value, numbers, duplicate_key):
    """Generated JSON (floats of every bit pattern, NaN, big integers, lone surrogate escapes, numbers beyond the float range,
    duplicate keys) reads as the json module reads it, types included; what the json module refuses, it refuses alike."""
    text = json.dumps(value, sort_keys=not duplicate_key, separators=(",", ":"), ensure_ascii=False)
    text = f"[{text},{','.join(numbers)}]" if numbers else text
    if duplicate_key:
        text = '{"k":1,"j":' + text + ',"k":' + (numbers[0] if numbers else "2") + "}"
    if not _refused_alike(text):
        assert same_json_values(canonical.parse_json(text), json.loads(text))


def _refused_alike(text: str) -> bool:
    """Whether the json module refuses ``text``; if it does, parse_json must refuse it with the same message."""
    try:
        json.loads(text)
    except ValueError as refused:
        try:
            canonical.parse_json(text)
        except ValueError as exc:
            assert str(exc) == str(refused)
            return True
        raise AssertionError(f"parse_json read what the json module refuses: {text!r}") from None
    return False


def test_parse_json_refuses_as_the_json_module_does():
    for text in ("", "[1,]", "01", '{"a":1', "\ufeff1", '"\\x"'):
        assert _refused_alike(text), text
