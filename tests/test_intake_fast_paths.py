"""The fast paths of intake normalization agree with the definitions they shortcut.

* ``is_public_safe`` screens a text before running LOCAL_PATH_PATTERN and
  SECRET_PATTERN; it must answer exactly as the two patterns do.
* ``unsafe_strings`` tests all strings of a payload at once, joined by a double
  quote; the joined text must be public-safe exactly when every string is.
* ``parse_document`` walks a value for nesting depth, NUL characters and
  unpaired surrogates only when its text could hold them; it must refuse
  exactly what the unconditional walks refuse, with the same reason.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.ledger.intake import files
from benchledger.ledger.intake.artifacts import _STRING_SEPARATOR, _strings_and_keys, unsafe_strings
from benchledger.ledger.intake.files import MAX_NESTING_DEPTH, InputFileError, parse_document
from benchledger.projections.artifacts.safe import LOCAL_PATH_PATTERN, SECRET_PATTERN, is_public_safe


def matches_neither_pattern(text: str) -> bool:
    """The definition of public-safe text."""
    return not (LOCAL_PATH_PATTERN.search(text) or SECRET_PATTERN.search(text))


# Pieces of matches and near misses, plus the characters the screen and the
# separator argument depend on: case variants the regex engine folds (the long s,
# the Kelvin sign), word characters outside [a-z0-9_] (é, ß, İ), the separator
# itself, "<" and whitespace of several kinds.
FRAGMENTS = (
    "bearer", "Bearer", "BEARER", "beaRer", " ", "\t", "\n", "\u00a0", "\u2003",
    "0123456789abcdef", "x", "Z", "9", "_", "-", "=", ":", ".", "~", "+",
    "ak", "sk", "AK", "Sk", "\u017fk", "a\u212a", "s\u212a", "ak_", "sk-", "AK-", "sK_",
    "key", "KEY", "access", "secret", "token", "TOKEN",
    "/", "/tmp/", "/tmp", "/TMP/", "/Users/", "/Volumes/", "/var/folders/", "/private/tmp/", "tmp/", "Users",
    "<", ">", "'", "`", '"', "\\", "é", "ß", "\u0130", "task", "mask", "ask",
)
texts = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=12).map("".join)


# --- is_public_safe's screen ---------------------------------------------------------


@settings(max_examples=1500)
@given(texts)
def test_is_public_safe_answers_as_the_two_patterns(text):
    assert is_public_safe(text) == matches_neither_pattern(text)


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("verifier_timeout", True),
        ("task_id-0123456789abc", True),  # "sk" inside a word
        ("x ak_0123456789", False),
        ("\u017fk-0123456789", False),  # the long s folds to s
        ("a\u212a_0123456789", False),  # the Kelvin sign folds to k
        ("\u00e9ak-0123456789", False),  # é is a word character, but not in [a-z0-9_]
        ("\u00e9ak_0123456789", False),
        ("\u00dfsk_0123456789", False),
        ("\u00dfsk-0123456789", False),
        ("\u0130ak-0123456789", True),  # İ folds to i, which is in [a-z0-9_]
        ("\u0130ak_0123456789", True),
        ("BeArEr\u00a0abcdefghijklmnop", False),
        ("bearer abcdefghijklmno", True),
        ("see /private/tmp/x", False),
        ("</tmp/x", True),
        ("/TMP/x", True),
        ("token:abcdefghijkl", False),
    ],
)
def test_is_public_safe_on_folded_letters_and_near_misses(text, safe):
    assert matches_neither_pattern(text) == safe
    assert is_public_safe(text) == safe


def test_lowering_keeps_every_letter_the_screen_looks_for():
    """The screen finds "bearer" and "k" in the lowered text: every character the
    patterns' IGNORECASE matching takes for one of those letters lowers to it."""
    every_character = "".join(map(chr, range(sys.maxunicode + 1)))
    for letter in "bearerk":
        for character in re.findall(letter, every_character, re.IGNORECASE):
            assert character.lower() == letter, (letter, character)


# --- unsafe_strings: the joined test -------------------------------------------------


@settings(max_examples=1000)
@given(st.lists(texts, max_size=6))
def test_joined_strings_are_public_safe_exactly_when_each_is(strings):
    assert is_public_safe(_STRING_SEPARATOR.join(strings)) == all(map(matches_neither_pattern, strings))


@pytest.mark.parametrize(
    "strings",
    [
        ["bearer", " abcdefghijklmnopq"],  # a match cut by the separator
        ["ak", "-0123456789"],
        ["x/tmp", "/y"],
        ["<", "/tmp/x"],  # "<" only guards the path in its own string
        ["ta", "sk-0123456789"],  # "sk" starts the second string
        ["x", "ak-0123456789"],
        ["9", "bearer abcdefghijklmnopq"],
        ['a"b', "c"],  # a string holding the separator
    ],
)
def test_joined_strings_next_to_the_separator(strings):
    assert is_public_safe(_STRING_SEPARATOR.join(strings)) == all(map(matches_neither_pattern, strings))


def unsafe_paths_by_definition(node, where="$"):
    """The JSON path of every string and key that is not public-safe, node by node."""
    if isinstance(node, str):
        return [] if matches_neither_pattern(node) else [where]
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if not matches_neither_pattern(str(key)):
                found.append(f"{where} (a key)")
            found += unsafe_paths_by_definition(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += unsafe_paths_by_definition(value, f"{where}[{index}]")
    return found


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500)
@given(json_values)
def test_unsafe_strings_finds_what_a_walk_over_every_string_finds(payload):
    assert unsafe_strings(payload) == sorted(unsafe_paths_by_definition(payload))


def strings_and_keys_by_definition(node):
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [*map(str, node), *(s for value in node.values() for s in strings_and_keys_by_definition(value))]
    if isinstance(node, list):
        return [s for value in node for s in strings_and_keys_by_definition(value)]
    return []


@given(json_values)
def test_strings_and_keys_are_every_string_and_key(payload):
    assert sorted(_strings_and_keys(payload)) == sorted(strings_and_keys_by_definition(payload))


# --- parse_document: walks only when the text calls for them ---------------------------

TOO_DEEP = f"nested deeper than the {MAX_NESTING_DEPTH}-level limit"
NUL = "contains a NUL character (a \\u0000 escape)"
SURROGATE = "contains an unpaired UTF-16 surrogate (\\ud800-\\udfff escape)"


def refusal_by_walks(data: bytes) -> str | None:
    """What the unconditional walks over the parsed value refuse (``data`` is valid JSON)."""
    value = json.loads(data)
    if files._depth(value) > MAX_NESTING_DEPTH:
        return TOO_DEEP
    if files._has_nul(value):
        return NUL
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE
    return None


def refusal(data: bytes) -> str | None:
    try:
        parse_document(data, "doc")
    except InputFileError as exc:
        return exc.reason
    return None


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (rb'{"a": "\u0000"}', NUL),
        (rb'{"\u0000": 1}', NUL),
        (rb'{"a": "\\u0000"}', None),  # an escaped backslash, then "u0000"
        (rb'{"a": "\\\u0000"}', NUL),  # an escaped backslash, then the escape
        (rb'{"a": "\ud800"}', SURROGATE),
        (rb'{"a": "\uDFFF"}', SURROGATE),
        (rb'{"a": "\uDbFf"}', SURROGATE),
        (rb'{"\udc00": 1}', SURROGATE),
        (rb'{"a": "\udc00\ud800"}', SURROGATE),  # a pair in the wrong order
        (rb'{"a": "\ud83d\ude00"}', None),  # a valid pair
        (rb'{"a": "\\ud800"}', None),
        (rb'{"a": "\\\ud800"}', SURROGATE),
        (rb'{"a": "\u0000\ud800"}', NUL),  # the NUL check comes first
    ],
)
def test_escapes_after_backslashes(data, expected):
    assert refusal_by_walks(data) == expected
    assert refusal(data) == expected


def nested_arrays(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (nested_arrays(MAX_NESTING_DEPTH), None),
        (nested_arrays(MAX_NESTING_DEPTH + 1), TOO_DEEP),
        (b'{"a":' * MAX_NESTING_DEPTH + b"1" + b"}" * MAX_NESTING_DEPTH, None),
        (b'{"a":' * (MAX_NESTING_DEPTH + 1) + b"1" + b"}" * (MAX_NESTING_DEPTH + 1), TOO_DEEP),
        # More brackets than the limit, but most of them inside a string: the walk decides.
        (b'["' + b"[{" * MAX_NESTING_DEPTH + b'", ' + nested_arrays(MAX_NESTING_DEPTH - 1) + b"]", None),
        (b'["' + b"[" * MAX_NESTING_DEPTH + b'", ' + nested_arrays(MAX_NESTING_DEPTH) + b"]", TOO_DEEP),
        # Many shallow containers side by side.
        (b"[" + b",".join([b"[{}]"] * 100) + b"]", None),
        (nested_arrays(MAX_NESTING_DEPTH + 1).replace(b"[]", b'["\\u0000"]'), TOO_DEEP),
    ],
)
def test_nesting_just_under_and_over_the_limit(data, expected):
    assert refusal_by_walks(data) == expected
    assert refusal(data) == expected


def nest(value, depth):
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


# Strings that may hold a NUL, a lone or paired surrogate, or backslashes.
tricky_strings = st.lists(
    st.sampled_from(["\x00", "\ud800", "\udfff", "\U0001f600", "\\", "\\u0000", "u0000", "[", "{", "a", "é"]), max_size=5
).map("".join)
tricky_values = st.recursive(
    st.none() | st.integers() | tricky_strings,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(tricky_strings, children, max_size=3),
    max_leaves=12,
)


@settings(max_examples=600)
@given(tricky_values, st.integers(min_value=0, max_value=MAX_NESTING_DEPTH + 3), st.booleans())
def test_parse_document_refuses_what_the_walks_refuse(value, extra_depth, ascii_only):
    text = json.dumps(nest(value, extra_depth), ensure_ascii=ascii_only)
    data = text.encode("utf-8", "surrogatepass")
    if not ascii_only and re.search("[\ud800-\udfff]", text):
        # A raw surrogate is not UTF-8: refused before any walk.
        assert refusal(data).startswith("not valid UTF-8")
        return
    assert refusal(data) == refusal_by_walks(data)
