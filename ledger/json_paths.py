"""JSON paths into decoded JSON values: where a refused string or number sits, for messages that name it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any


def nodes(value: Any, root: str = "$") -> Iterator[tuple[str, Any, bool]]:
    """Every value of ``value`` and every key (as ``str``, flagged ``True``), with its JSON path."""
    stack = [(value, root)]
    while stack:
        node, where = stack.pop()
        yield where, node, False
        if isinstance(node, dict):
            for key, item in node.items():
                yield where, str(key), True
                stack.append((item, f"{where}.{key}"))
        elif isinstance(node, list):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(node))


def non_finite_numbers(value: Any) -> list[str]:
    """JSON paths of NaN and infinite numbers (Python's json writes them, but they are not JSON)."""
    return sorted(where for where, node, _ in nodes(value) if isinstance(node, float) and not math.isfinite(node))
