"""Record the order in which LoopX 0.4.8 prints each review's keys, for the report's review pages.

benchledger stores a review's payload as canonical JSON (sorted keys), so the
order LoopX prints is gone once stored; the report shows a review in that order
again from ``cli/web/review_key_order.json``, which this script derives from the
corpus's expected outputs (what LoopX printed, in its order):

    python -m tests.conformance.record_key_order

For each review and each object in its payload (a path of keys, ``[]`` for the
items of a list) the file lists the orders its keys came in: one order when every
case agrees, more when the review prints differently shaped objects at one place
(a refused input's payload puts ``ok`` and ``error`` first). A test keeps the file
equal to what this derives, and checks that it puts every case back in LoopX's order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
KEY_ORDER_FILE = HERE.parent.parent / "cli" / "web" / "review_key_order.json"


def expected_payloads(corpus: Path = CORPUS) -> Iterator[tuple[str, Any]]:
    """Every case's review name and the payload LoopX printed for it, keys in LoopX's order."""
    for expected in sorted(corpus.glob("*/*/*/expected.json")):
        yield expected.parent.parent.name, json.loads(expected.read_text())


def key_sequences(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, list[str]]]:
    """Each object in ``value``, as its path (keys joined with ``/``, ``[]`` for a list's items) and its keys in order."""
    if isinstance(value, dict):
        yield "/".join(path), list(value)
        for key, item in value.items():
            yield from key_sequences(item, (*path, key))
    elif isinstance(value, list):
        for item in value:
            yield from key_sequences(item, (*path, "[]"))


def _merged(order: list[str], keys: list[str]) -> list[str] | None:
    """``order`` with ``keys`` taken in (each new key right after the one before it), or ``None`` if they disagree on an order."""
    merged = list(order)
    for index, key in enumerate(keys):
        if key not in merged:
            merged.insert(merged.index(keys[index - 1]) + 1 if index else 0, key)
    rank = {key: n for n, key in enumerate(merged)}
    return merged if sorted(keys, key=rank.__getitem__) == keys else None


def key_orders(corpus: Path = CORPUS) -> dict[str, dict[str, list[list[str]]]]:
    orders: dict[str, dict[str, list[list[str]]]] = {}
    for review, payload in expected_payloads(corpus):
        for path, keys in key_sequences(payload):
            known = orders.setdefault(review, {}).setdefault(path, [])
            for n, order in enumerate(known):
                merged = _merged(order, keys)
                if merged is not None:
                    known[n] = merged
                    break
            else:
                known.append(list(keys))
    return {review: dict(sorted(paths.items())) for review, paths in sorted(orders.items())}


def main() -> None:
    KEY_ORDER_FILE.write_text(json.dumps(key_orders(), indent=1) + "\n")
    print(f"wrote {KEY_ORDER_FILE}")


if __name__ == "__main__":
    main()
