"""Fields of stored JSON text read inside the database, the same way on SQLite and PostgreSQL.

The report pages aggregate a few scalars out of thousands of stored payloads;
extracting them in SQL keeps those reads small (the database parses the JSON,
Python decodes one short array per row instead of every payload).

Some stored text is JSON Python reads but the database refuses: a review may
compute ``Infinity`` (a delta against a zero score) and a ledger written
before the store refused them may hold ``NaN``; PostgreSQL also refuses
``\\u0000`` and lone surrogate escapes, and SQLite extracts a lone surrogate
as bytes that are not UTF-8 (no row holding one could be fetched).
:func:`readable` tells them apart in SQL, :func:`json_values` hands such a
row's text to Python instead of parsing it, and aggregates (:func:`readable` in their ``WHERE``) leave those rows to
the caller's Python path, so one odd payload never fails a whole page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import JSON, Text, and_, case, cast, func, literal, or_
from sqlalchemy.sql.elements import ColumnElement

Path = tuple[str, ...]

# Marks a json_values result that is the stored text itself (the database could not read it), not the array.
UNREAD_MARK = "!"
# What PostgreSQL's JSON type refuses although Python writes it (NaN, Infinity, -Infinity) or its text
# functions refuse (\u0000, surrogates). Conservative: a string that merely holds the word is decoded in Python.
POSTGRES_UNREADABLE = r"NaN|Infinity|\\u0000|\\u[dD][89a-fA-F]"
# A lone surrogate's escape (canonical JSON escapes nothing else that way); SQLite's GLOB has no escape character.
SQLITE_SURROGATE_ESCAPE = "*\\u[dD][89abcdefABCDEF]*"


def readable(column: ColumnElement, dialect: str) -> ColumnElement:
    """Whether the database can read ``column``'s JSON (``NULL``, no JSON, is readable: every path is absent).

    Rows it is false for are left to Python (:func:`decode_values`, or the caller's own path for an aggregate).
    """
    if dialect == "sqlite":
        valid = and_(func.json_valid(column) == 1, column.op("NOT GLOB")(SQLITE_SURROGATE_ESCAPE))
    elif dialect == "postgresql":
        valid = column.op("!~")(POSTGRES_UNREADABLE)
    else:
        raise ValueError(f"unsupported database dialect: {dialect}")
    return or_(column.is_(None), valid)


def _selector(path: Path) -> str:
    return "$." + ".".join(f'"{key}"' for key in path)


def json_values(column: ColumnElement, paths: Sequence[Path], dialect: str) -> ColumnElement:
    """One SQL expression: a JSON array holding the value at each path of ``column``'s JSON (``null`` where absent).

    Decode it with :func:`decode_values` (the same ``paths``). Path keys are plain identifiers.
    """
    if dialect == "sqlite":
        selectors = [_selector(path) for path in paths]
        # several paths: one parse, and SQLite returns the JSON array itself
        extracted = func.json_extract(column, *selectors) if len(selectors) > 1 else func.json_array(func.json_extract(column, *selectors))
    elif dialect == "postgresql":
        document = cast(column, JSON)
        extracted = cast(func.json_build_array(*(func.json_extract_path(document, *path) for path in paths)), Text)
    else:
        raise ValueError(f"unsupported database dialect: {dialect}")
    return case((readable(column, dialect), extracted), else_=literal(UNREAD_MARK, Text) + column)


def value_at(document: Any, path: Path) -> Any:
    """The value at ``path`` in a decoded document (``None`` where absent), as the database's extraction finds it."""
    for key in path:
        if not isinstance(document, Mapping):
            return None
        document = document.get(key)
    return document


def decode_values(text: str | None, paths: Sequence[Path]) -> list[Any]:
    """The values of a :func:`json_values` result (``None`` for each path of a row without JSON)."""
    if text is None:
        return [None] * len(paths)
    if text.startswith(UNREAD_MARK):
        return values_in(text[len(UNREAD_MARK) :], paths)
    return json.loads(text)


def values_in(document_text: str, paths: Sequence[Path]) -> list[Any]:
    """The values at ``paths`` of stored JSON text, decoded in Python (what a row :func:`readable` refuses gets)."""
    document = json.loads(document_text)
    return [value_at(document, path) for path in paths]


def json_scalar(column: ColumnElement, path: Path, dialect: str) -> ColumnElement:
    """The text of a scalar at ``path`` (for GROUP BY): strings as themselves, ``NULL`` where absent.

    Only for rows :func:`readable` holds.
    """
    if dialect == "sqlite":
        return func.json_extract(column, _selector(path))
    if dialect == "postgresql":
        return func.json_extract_path_text(cast(column, JSON), *path)
    raise ValueError(f"unsupported database dialect: {dialect}")


# The JSON types a value can have, as each database's json_type/json_typeof names them.
_TYPE_NAMES = {
    "sqlite": {"string": ("text",), "number": ("integer", "real"), "true": ("true",), "false": ("false",)},
    "postgresql": {"string": ("string",), "number": ("number",), "true": ("boolean",), "false": ("boolean",)},
}

def json_is(column: ColumnElement, path: Path, json_type: str, dialect: str) -> ColumnElement:
    """Whether the value at ``path`` is a JSON ``string``, ``number``, ``true`` or ``false`` (only for readable rows)."""
    if dialect == "sqlite":
        return func.json_type(column, _selector(path)).in_(_TYPE_NAMES["sqlite"][json_type])
    if dialect == "postgresql":
        found = func.json_typeof(func.json_extract_path(cast(column, JSON), *path)).in_(_TYPE_NAMES["postgresql"][json_type])
        if json_type in ("true", "false"):
            return and_(found, json_scalar(column, path, dialect) == json_type)
        return found
    raise ValueError(f"unsupported database dialect: {dialect}")


def json_array_length(column: ColumnElement, path: Path, dialect: str) -> ColumnElement:
    """The length of the array at ``path`` (only for readable rows)."""
    if dialect == "sqlite":
        return func.json_array_length(column, _selector(path))
    if dialect == "postgresql":
        return func.json_array_length(func.json_extract_path(cast(column, JSON), *path))
    raise ValueError(f"unsupported database dialect: {dialect}")

