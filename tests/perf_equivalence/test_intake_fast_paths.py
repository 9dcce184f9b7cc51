"""The fast paths of intake normalization agree with the definitions they shortcut.

* ``is_public_safe`` screens a text before running LOCAL_PATH_PATTERN and
  SECRET_PATTERN; it must answer exactly as the two patterns do.
* the store's guard (``ledger.storage.guard``, its rules in ``ledger.storage.privacy``) screens each rule with substrings
  every match holds, and all texts of a payload at once, joined by a double
  quote; neither screen may miss a text that breaks a rule, and the walk after
  it must find exactly the strings, keys and ``key=value`` fields that do. A text
  breaks a rule as written or as a reader sees it (percent-decoded, NFKC-folded,
  invisible characters removed), and the guard unveils only texts holding ``%``
  or a character outside ASCII: no other text can change.
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

from benchledger.ledger.service.intake.files import MAX_NESTING_DEPTH, InputFileError, parse_document
from benchledger.ledger.storage import guard, privacy
from benchledger.ledger.storage.canonical import canonical_json
from benchledger.projections.artifacts.safe import LOCAL_PATH_PATTERN, SECRET_PATTERN, is_public_safe
from tests import helpers
from tests.helpers import as_a_reader_sees_it, invisible


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


# --- the store's guard: the joined screen and the walk ----------------------------------


def breaks_a_rule_as_written(text: str) -> bool:
    return not matches_neither_pattern(text) or any(rule.pattern.search(text) for rule in privacy.PRIVACY_RULES)


def breaks_a_rule(text: str) -> bool:
    """The definition of text the store refuses: LoopX's two patterns or one of the stricter rules, unscreened, on the
    text as written or as a reader sees it."""
    return breaks_a_rule_as_written(text) or breaks_a_rule_as_written(as_a_reader_sees_it(text))


def test_the_invisible_characters_are_the_format_and_default_ignorable_ones():
    every_character = "".join(map(chr, range(sys.maxunicode + 1)))
    removed = set(every_character) - set(privacy._INVISIBLE.sub("", every_character))
    assert removed == {c for c in every_character if invisible(c)}


GUARD_FRAGMENTS = FRAGMENTS + (
    "/home/", "/root", "/mnt/", "/media/", "/workspace", "/HOME/", "~/", "~alice/", "C:\\", "d:/", "\\\\srv\\",
    "https://", "u:pw@", "password", "PassWord", "passwd", "api_key", "apikey", "secret", "authorization",
    "ghp_", "github_pat_", "AKIA", "ABCDEFGHIJKLMNOP", "xoxb-", "eyJ", "abcdefgh.", "-----BEGIN ", "PRIVATE KEY-----",
    "AIza", "glpat-", "***", "@", ",", ";", "db_", "max_", "tokens", "true", "12", "_key", "sk", "Token",
    # the wider and hidden forms and their near misses
    "file://", "FILE://", "localhost", "/var/home/", "/export/home", "/var/", "//srv/", "//", "(", "=", "$HOME/", "${HOME}",
    "%USERPROFILE%\\", "%2F", "%2f", "%3A", "%40", "%25", "%", "%E2%80%8B", "%EF%BC%9A", "\uff1a", "\uff0f", "\uff20",
    "\u200b", "\u00ad", "\ufeff", "\u2060", "\u00a0", "\u017f", "\uff53\uff4b", "pwd", "Pwd=", "PWD", "pass", "pass=",
    "pass: ", "yes", "PASSED", "creds", "AccountKey", "SharedAccessKey", "hf_", "api_org_", "npm_", "pypi-AgEIcHlwaS5vcmc",
    "glptt-", "GR1348941", "xapp-1-", "hooks.slack.com/services/", "ABIA", "A3TX", "8Q~", "dapi", "do_v1_", "dop_v1_",
    "shpat_", "SG.", "rk_live_", "hvs.", "sntrys_", "glc_", "glsa_", "eyJrIjoi", "AGE-SECRET-KEY-1",
    "abcdefghijklmnopqrstuvwxyz0123456789", "0123456789abcdef0123456789abcdef", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
)
guard_texts = st.lists(st.sampled_from(GUARD_FRAGMENTS) | st.text(max_size=3), max_size=12).map("".join)


@settings(max_examples=1500)
@given(guard_texts)
def test_each_rule_screen_misses_no_match(text):
    lowered = text.lower()
    for rule in privacy.PRIVACY_RULES:
        assert rule.matches(text, lowered) == (rule.pattern.search(text) is not None), rule.name
    assert (privacy.privacy_rule(text) is not None) == breaks_a_rule(text)


def test_the_joint_screen_finds_every_fragment_of_every_rule():
    """The guard looks for all rules' fragments in one pass first; a text holding none of them breaks no rule."""
    fragments = {fragment for rule in privacy.PRIVACY_RULES for fragment in rule.screen}
    for fragment in fragments:
        assert privacy._ANY_SCREEN_FRAGMENT.search(f"x{fragment}x") is not None, fragment
        shorter = fragment[:-1]  # (what the pattern matches is exactly the fragments)
        assert (privacy._ANY_SCREEN_FRAGMENT.fullmatch(shorter) is not None) == (shorter in fragments), fragment
    assert privacy._ANY_SCREEN_FRAGMENT.search("codex-goal-mode terminal-bench@2.0 run 2026-06-20 failed") is None


@settings(max_examples=1000)
@given(st.lists(guard_texts, max_size=6))
def test_a_text_that_breaks_a_rule_breaks_it_joined_with_others(strings):
    """The joined screen may see a match across the separator (then the walk decides), never miss one."""
    if any(map(breaks_a_rule, strings)):
        assert privacy.privacy_rule(guard._SEPARATOR.join(strings)) is not None


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
        ["x", "/home/a"], ["a", "ghp_abcdefghijklmnop1234"], ["password", "=x"], ["C", ":\\x"],
    ],
)
def test_joined_strings_next_to_the_separator(strings):
    joined_refused = privacy.privacy_rule(guard._SEPARATOR.join(strings)) is not None
    assert joined_refused or not any(map(breaks_a_rule, strings))


CREDENTIAL_NAMES = {
    "password", "passwd", "passphrase", "secret", "secrets", "token", "apikey", "api_key", "accesskey", "access_key",
    "secretkey", "secret_key", "privatekey", "private_key", "accountkey", "account_key", "sharedaccesskey",
    "shared_access_key", "client_secret", "credential", "credentials", "creds", "authorization", "ak", "sk",
}


def names_a_credential(key: str, value) -> bool:
    """A credential-named field with a value: its last ``_``/``.``/``-`` segment(s) name a credential, as written or as a
    reader sees it."""
    if not isinstance(value, str) or value.strip().lower() in ("", "true", "false", "none", "null"):
        return False
    if set(value.strip()) == {"*"} or re.fullmatch(r"\s*[-+]?[0-9]+(\.[0-9]+)?\s*", value):
        return False
    name = as_a_reader_sees_it(key).lower().replace("-", "_")
    if not re.fullmatch(r"[a-z0-9_.]+", name) or name.startswith(("_", ".")) or "__" in name or ".." in name:
        return False
    parts = re.split(r"[_.]", name)
    if "" in parts:  # a name that ends with a separator names nothing
        return False
    return any("_".join(parts[i:]) in CREDENTIAL_NAMES or "".join(parts[i:]) in CREDENTIAL_NAMES for i in range(len(parts)))


def refused_places_by_definition(node, where="$"):
    """Where the guard must find a privacy problem: every string and key that breaks a rule, every credential field."""
    if isinstance(node, str):
        return {where} if breaks_a_rule(node) else set()
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            key = str(key)
            if breaks_a_rule(key):
                found.add(f"a key of {where}")
            key_refused = breaks_a_rule(key) or "\x00" in key  # (a NUL is not spelled either)
            child = f"{where}.{'<refused key>' if key_refused else key}"
            if names_a_credential(key, value):
                found.add(f"{child} (credential)")
            found |= refused_places_by_definition(value, child)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found |= refused_places_by_definition(value, f"{where}[{index}]")
    return found


guard_values = helpers.json_values(guard_texts, max_leaves=20)


@settings(max_examples=500)
@given(guard_values)
def test_the_guard_finds_what_a_walk_over_every_text_finds(payload):
    body = canonical_json(payload)
    problems = guard.payload_problems(payload, body)
    places = {place for place, problem in problems if problem.startswith("holds ")}
    places |= {f"{place} (credential)" for place, problem in problems if problem.endswith("[credential-field]")}
    assert places == refused_places_by_definition(payload)
    # and its paths never spell a key it refuses
    refused_keys = {key for key in keys_of(payload) if breaks_a_rule(key)}
    for place, _ in guard.payload_problems(payload, body):
        assert not any(f".{key}." in f"{place}." or f".{key}[" in place for key in refused_keys), place


def texts_of(node):
    """Every string and key of a decoded JSON value."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [str(k) for k in node] + [t for v in node.values() for t in texts_of(v)]
    if isinstance(node, list):
        return [t for v in node for t in texts_of(v)]
    return []


def keys_of(node):
    if isinstance(node, dict):
        return {str(k) for k in node} | {k for v in node.values() for k in keys_of(v)}
    if isinstance(node, list):
        return {k for v in node for k in keys_of(v)}
    return set()


# --- parse_document: walks only when the text calls for them ---------------------------

TOO_DEEP = f"nested deeper than the {MAX_NESTING_DEPTH}-level limit"
NUL = "contains a NUL character (a \\u0000 escape)"
SURROGATE = "contains an unpaired UTF-16 surrogate (\\ud800-\\udfff escape)"


def refusal_by_walks(data: bytes) -> str | None:
    """What the unconditional walks over the parsed value refuse (``data`` is valid JSON)."""
    value = json.loads(data)
    if guard.nesting_depth(value) > MAX_NESTING_DEPTH:
        return TOO_DEEP
    if any("\x00" in text for text in texts_of(value)):
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
