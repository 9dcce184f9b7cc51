"""Fields of stored JSON text read inside the database, the same way on SQLite and PostgreSQL.

The report pages aggregate a few scalars out of thousands of stored payloads;
extracting them in SQL keeps those reads small (the database parses the JSON,
Python decodes one short array per row instead of every payload).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, Text, cast, func
from sqlalchemy.sql.elements import ColumnElement

Path = tuple[str, ...]


def json_values(column: ColumnElement, paths: Sequence[Path], dialect: str) -> ColumnElement:
    """One SQL expression: a JSON array holding the value at each path of ``column``'s JSON (``null`` where absent).

    Decode it with :func:`decode_values`. Path keys are plain identifiers.
    """
    if dialect == "sqlite":
        selectors = ["$." + ".".join(f'"{key}"' for key in path) for path in paths]
        if len(selectors) > 1:  # several paths: one parse, and SQLite returns the JSON array itself
            return func.json_extract(column, *selectors)
        return func.json_array(func.json_extract(column, *selectors))
    if dialect == "postgresql":
        document = cast(column, JSON)
        return cast(func.json_build_array(*(func.json_extract_path(document, *path) for path in paths)), Text)
    raise ValueError(f"unsupported database dialect: {dialect}")


def decode_values(text: str | None, count: int) -> list[Any]:
    """The values of a :func:`json_values` array (``count`` ``None`` for a row without JSON)."""
    return [None] * count if text is None else json.loads(text)


def json_scalar(column: ColumnElement, path: Path, dialect: str) -> ColumnElement:
    """The text of a scalar at ``path`` (for GROUP BY): strings as themselves, ``NULL`` where absent."""
    if dialect == "sqlite":
        return func.json_extract(column, "$." + ".".join(f'"{key}"' for key in path))
    if dialect == "postgresql":
        return func.json_extract_path_text(cast(column, JSON), *path)
    raise ValueError(f"unsupported database dialect: {dialect}")
