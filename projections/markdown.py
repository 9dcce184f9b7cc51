"""The reference's markdown conventions, shared by every review's renderer.

A document is a ``# Title`` line, an empty line and ``- Label: value`` bullets;
values are Python ``str()`` renderings (``None``, ``True``, ``['a']``), either
wrapped in backticks (``code``) or bare (``text``). The document ends with a
newline; the printer adds one more.
"""

from __future__ import annotations

from typing import Any


def get(payload: Any, *path: str) -> Any:
    """Follow ``path`` through nested objects; anything missing reads as ``None``."""
    value = payload
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def code(label: str, value: Any) -> str:
    return f"- {label}: `{value}`"


def text(label: str, value: Any) -> str:
    return f"- {label}: {value}"


def document(title: str, lines: list[str]) -> str:
    return "\n".join([f"# {title}", "", *lines]) + "\n"
