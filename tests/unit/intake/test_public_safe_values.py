"""Public-safe text and value rules (common-inputs.md §2, common-inputs-part1.md §4).

Expected values were confirmed against LoopX 0.4.8 (the black-box reference)
by echoing them through ``review-claim``.
"""

from __future__ import annotations

import math

import pytest

from benchledger.projections.artifacts import NotCompactable
from benchledger.projections.artifacts.safe import (
    LOCAL_PATH_PATTERN,
    SECRET_PATTERN,
    bool_or_none,
    claim_number,
    compact_artifact,
    compact_text,
    count,
    delta_value,
    envelope_source,
    fields,
    is_int,
    is_public_safe,
    label,
    numeric_map,
    safe_list,
    safe_text,
    score_number,
    section_rule,
    text_rule,
)

# --- compact_text ----------------------------------------------------------------


def test_compact_text_folds_all_unicode_whitespace():
    assert compact_text("  a \n\t b\u00a0\u2003c  ", 50) == "a b c"


def test_compact_text_keeps_text_of_exactly_the_limit():
    assert compact_text("x" * 10, 10) == "x" * 10


def test_compact_text_cuts_to_limit_minus_one_plus_ellipsis():
    assert compact_text("x" * 11, 10) == "x" * 9 + "…"


def test_compact_text_strips_whitespace_before_the_ellipsis():
    # The cut falls right after a space, which is dropped before the ellipsis.
    assert compact_text("x" * 8 + " yy", 10) == "x" * 8 + "…"


def test_compact_text_measures_after_folding():
    assert compact_text("a    b", 3) == "a b"


# --- safe_text -------------------------------------------------------------------


@pytest.mark.parametrize("falsy", [None, False, 0, 0.0, "", [], {}, "   \n"])
def test_safe_text_falsy_or_blank_is_absent(falsy):
    assert safe_text(falsy) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "True"),
        (5, "5"),
        (1.5, "1.5"),
        (1e16, "1e+16"),
        (1e-5, "1e-05"),
        (float("nan"), "nan"),
        ({"a": 1}, "{'a': 1}"),
        (["x"], "['x']"),
        ([1, "a", None], "[1, 'a', None]"),
        ("naïve ☃ …", "naïve ☃ …"),
    ],
)
def test_safe_text_renders_non_strings_with_python_str(value, text):
    assert safe_text(value) == text


def test_safe_text_default_limit_is_220():
    assert safe_text("x" * 220) == "x" * 220
    assert safe_text("x" * 221) == "x" * 219 + "…"


def test_safe_text_tests_patterns_after_truncation():
    # The path starts beyond the cut point: only "…" remains of it.
    assert safe_text("y" * 178 + " /tmp/abc", 180) == "y" * 178 + "…"
    assert safe_text("y" * 170 + " /tmp/abc", 180) is None


def test_safe_text_ellipsis_completes_a_cut_path():
    # "/tmp/" + "…": the ellipsis is a path character, so the cut text still matches.
    assert safe_text("a" * 113 + " /tmp/xyz", 120) is None
    assert safe_text("a" * 114 + " /tmp/xyz", 120) == "a" * 114 + " /tmp…"


@pytest.mark.parametrize(
    "text",
    ["/tmp/x", "see /Users/bob/file", "abc/Users/bob", "/Volumes/data/x", "/var/folders/ab/x", "/private/tmp/x"],
)
def test_local_path_pattern_matches(text):
    assert LOCAL_PATH_PATTERN.search(text)
    assert safe_text(text) is None


@pytest.mark.parametrize(
    "text", ["/tmp/", "/tmp", "</tmp/x", "/TMP/x", "/tmpfoo/x", "/home/u/x", r"C:\Users\bob", "/tmp/'x'"]
)
def test_local_path_pattern_non_matches(text):
    assert not LOCAL_PATH_PATTERN.search(text)
    assert safe_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "Bearer abcdefghijklmnop",
        "secret_key=x",
        "ACCESS-KEY : v",
        "accesskey=v",
        "sk = 1",
        "ak:1",
        "sk-1234567890",
        "AK_ABCDEFGHIJ",
        "pre-sk_assessment_v1",
        "ak_setup_timeout",
        "x-sk-0123456789",
        "token=abcdefghijkl",
        "Token : abcdefghijklmnop",
    ],
)
def test_secret_pattern_matches(text):
    assert SECRET_PATTERN.search(text)
    assert not is_public_safe(text)
    assert safe_text(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "bearer abcdefghijklmno",  # 15 token characters
        "ask = 1",  # no word boundary before sk
        "xsk-1234567890",
        "_sk-1234567890",
        "sk-123456789",  # 9 characters
        "token=abcdefghijk",  # 11 characters
        "max_token=abcdefghijklmnop",
        "token='abcdefghijklmnop'",
        "accesskey : 'x'",
    ],
)
def test_secret_pattern_non_matches(text):
    assert not SECRET_PATTERN.search(text)
    assert safe_text(text) == text


# --- safe_list -------------------------------------------------------------------


def test_safe_list_wraps_a_truthy_scalar():
    assert safe_list("x", 5) == ["x"]
    assert safe_list(7, 5) == ["7"]
    assert safe_list({"a": 1}, 5) == ["{'a': 1}"]


@pytest.mark.parametrize("falsy", [None, "", 0, False, {}, []])
def test_safe_list_of_falsy_is_empty(falsy):
    assert safe_list(falsy, 5) == []


def test_safe_list_drops_absent_items_and_counts_only_kept_ones():
    items = [None, "", 0, False, "/tmp/x", "a", 2, "a", "b", "c", "d"]
    assert safe_list(items, 5) == ["a", "2", "a", "b", "c"]


def test_safe_list_items_are_limited_to_160():
    assert safe_list(["x" * 161], 5) == ["x" * 159 + "…"]


# --- label -----------------------------------------------------------------------


def test_label_is_a_plain_cut_without_ellipsis():
    assert label("  a \n b  ") == "a b"
    assert label("x" * 130) == "x" * 120
    assert label("x" * 30, 10) == "x" * 10


@pytest.mark.parametrize("value", [5, True, None, ["a"], "", "   ", "a/b", "a\\b"])
def test_label_rejects_non_strings_blanks_and_separators(value):
    assert label(value) is None


def test_label_does_not_scrub_secrets():
    assert label("sk-1234567890") == "sk-1234567890"


# --- numbers ---------------------------------------------------------------------


def test_numeric_map_converts_numeric_strings_by_their_dot():
    source = {"a": 1, "b": 2.5, "c": "3", "d": "3.0", "e": " 4 ", "f": "1e3", "g": "abc", "h": True, "i": None,
              "j": "  ", "k": [1], "l": "1_000"}
    assert numeric_map(source) == {"a": 1, "b": 2.5, "c": 3, "d": 3.0, "e": 4, "l": 1000}
    assert type(numeric_map(source)["d"]) is float


def test_numeric_map_with_keys_keeps_key_order_and_skips_missing():
    assert numeric_map({"b": 1, "a": 2, "z": 3}, ["a", "b", "c"]) == {"a": 2, "b": 1}
    assert list(numeric_map({"b": 1, "a": 2}, ["a", "b"])) == ["a", "b"]


@pytest.mark.parametrize("value", [5, [], "1", None])
def test_numeric_map_of_a_non_object_is_empty(value):
    assert numeric_map(value) == {}


@pytest.mark.parametrize(("value", "expected"), [(3, 3), (-2, 0), (0, 0), (2.0, 0), ("3", 0), (True, 0), (None, 0)])
def test_count(value, expected):
    assert count(value) == expected


def test_is_int_excludes_booleans_and_floats():
    assert is_int(0) and is_int(-5)
    assert not is_int(True) and not is_int(1.0) and not is_int("1")


def test_bool_or_none_keeps_only_json_booleans():
    assert bool_or_none(False) is False
    assert bool_or_none(True) is True
    assert bool_or_none(1) is None and bool_or_none("true") is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, 1.0), (0.5, 0.5), ("0.5", 0.5), (" 1 ", 1.0), ("1_0", 10.0), ("1e3", 1000.0), ("-Infinity", -math.inf),
     ("n/a", None), ("0x10", None), (True, None), (None, None), ([1], None)],
)
def test_score_number(value, expected):
    assert score_number(value) == expected
    assert claim_number(value) == expected


def test_score_number_returns_floats_and_nan():
    assert type(score_number(1)) is float
    assert math.isnan(score_number("nan"))


def test_score_number_overflow_propagates_like_the_reference():
    # The reference reports "int too large to convert to float" as the review's error.
    with pytest.raises(OverflowError, match="int too large to convert to float"):
        score_number(10**400)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), (True, None), (False, None), (0, 0), (1.5, 1.5), ("0.5", "0.5"), ("n/a", "n/a"), ([1], "[1]"),
     ("", None), ("/tmp/x", None), ("x" * 130, "x" * 119 + "…")],
)
def test_delta_rule(value, expected):
    assert delta_value(value) == expected


def test_delta_rule_keeps_number_types():
    assert type(delta_value(0)) is int
    assert type(delta_value(0.0)) is float


# --- envelopes and field tables ----------------------------------------------------


def test_envelope_wins_over_a_matching_top_level():
    inner = {"schema_version": "s", "x": 1}
    assert envelope_source({"schema_version": "s", "env": inner}, "env", "s") is inner


def test_envelope_of_another_schema_falls_back_to_the_top_level():
    outer = {"schema_version": "s", "env": {"schema_version": "t"}}
    assert envelope_source(outer, "env", "s") is outer
    assert envelope_source({"env": {"schema_version": "t"}}, "env", "s") is None
    assert envelope_source({"env": "s"}, "env", "s") is None


TABLE = (*fields(text_rule(10), "a", "b"), ("sub", section_rule(fields(bool_or_none, "flag"))))


def test_compact_artifact_keeps_table_order_and_drops_empty_sections():
    value = {"b": "B", "a": "A", "sub": {"flag": "yes"}, "other": 1, "schema_version": "s"}
    assert list(compact_artifact(value, "env", "s", TABLE).items()) == [("schema_version", "s"), ("a", "A"), ("b", "B")]


def test_compact_artifact_refuses_a_schema_only_artifact():
    with pytest.raises(NotCompactable):
        compact_artifact({"schema_version": "s", "sub": {"flag": 1}}, "env", "s", TABLE)
    with pytest.raises(NotCompactable):
        compact_artifact({"schema_version": "other", "a": "A"}, "env", "s", TABLE)
