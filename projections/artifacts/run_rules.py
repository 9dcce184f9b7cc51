"""Value rules of ``benchmark_run_v0`` compaction: small combinators mapping a raw JSON value to
its compact value (or ``None`` when the field is omitted), and field tables built from them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from benchledger.projections.artifacts.safe import is_int, is_number, numeric_map, safe_list, safe_text

# ---------------------------------------------------------------------------
# Value rules: each maps a raw JSON value to its compact value, or to ``None``
# when the field is omitted (empty lists, maps and objects are omitted too).
# ---------------------------------------------------------------------------

Rule = Callable[[Any], Any]


def text(limit: int) -> Rule:
    """Public-safe text of at most ``limit`` characters."""
    return lambda value: safe_text(value, limit)


def text_list(max_items: int) -> Rule:
    """Public-safe list of at most ``max_items`` strings."""
    return lambda value: safe_list(value, max_items) or None


def text_items(max_items: int, limit: int) -> Rule:
    """Public-safe ``limit``-character texts of a JSON array, at most ``max_items``."""

    def rule(value: Any) -> list[str] | None:
        if not isinstance(value, list):
            return None
        kept = [item for item in (safe_text(raw, limit) for raw in value) if item is not None]
        return kept[:max_items] or None

    return rule


def boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def integer(value: Any) -> int | None:
    return value if is_int(value) else None


def positive_integer(value: Any) -> int | None:
    return value if is_int(value) and value > 0 else None


def number(value: Any) -> int | float | None:
    return value if is_number(value) else None


def boolean_or_number(value: Any) -> Any:
    return value if isinstance(value, bool) or is_number(value) else None


def number_or_text(limit: int) -> Rule:
    """Numbers verbatim, anything else as public-safe text."""
    return lambda value: value if is_number(value) else safe_text(value, limit)


def numbers(keys: tuple[str, ...] | None = None) -> Rule:
    """Numeric map of an object over ``keys`` (every key when ``None``)."""
    return lambda value: numeric_map(value, keys) or None


Fields = tuple[tuple[str, Rule], ...]


def fields(rule: Rule, *names: str) -> Fields:
    """Table rows giving every name in ``names`` the same rule."""
    return tuple((name, rule) for name in names)


def compact_fields(source: Mapping[str, Any], table: Fields) -> dict[str, Any]:
    """Apply a field table: the present keys, in table order, that their rule keeps."""
    compact: dict[str, Any] = {}
    for name, rule in table:
        if name in source:
            value = rule(source[name])
            if value is not None:
                compact[name] = value
    return compact


def subset(table: Fields) -> Rule:
    """An object compacted with ``table``; omitted when not an object or when nothing survives."""
    return lambda value: (compact_fields(value, table) or None) if isinstance(value, Mapping) else None
