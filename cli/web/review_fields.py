"""How a review page shows a stored review: its keys in the order the review prints them, its booleans coloured by meaning.

**Order.** A review's payload is stored as canonical JSON (keys sorted), so the page
puts the keys back in LoopX 0.4.8's order, read from ``review_key_order.json``
(recorded from the conformance corpus by ``python -m tests.conformance.record_key_order``).
Keys the recording never saw follow, sorted.

**Colour.** ``true`` is not always good news: a ``false`` in a ``read_boundary``
says nothing forbidden was read. Each boolean gets a tone from its own name and
the object holding it (the first rule that applies):

=====================================================  =====================  ==========================================
field                                                  green (good news)      why
=====================================================  =====================  ==========================================
name ending ``_read``, ``_invoked``, ``_recorded``;    ``false``              something the boundary forbids did not
``exception_present``,                                                        happen (read, invoked, recorded, raised,
``base_constructor_may_receive_generated_loopx_kwargs``                       leaked into the base constructor)
``ok``, ``clean``, ``compact_only``,                   ``true``               the review's verdict; the boundary held;
``raw_trace_excluded``, ``budget_count_allowed``,                             the attempt counts / the learning row is
``countable_attempt``, ``learning_row_present``,                              there and can be acted on
``learning_row_actionable``
inside ``gates``, ``transition_ready``,                ``true``               a gate is open, a step or condition met
``phase_ready``, ``lifecycle_gate``,
``learning_quota_gate``, ``baseline_failure_gate``
anything else (what a claim may say, routing,          neither (uncoloured)   a fact of the evidence, not a verdict
the command's own ``require_*`` options, context)
=====================================================  =====================  ==========================================

The opposite value of a coloured field is red.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

KEY_ORDER_NAME = "review_key_order.json"

GOOD_WHEN_FALSE_ENDINGS = ("_read", "_invoked", "_recorded")
GOOD_WHEN_FALSE = frozenset({"exception_present", "base_constructor_may_receive_generated_loopx_kwargs"})
GOOD_WHEN_TRUE = frozenset({
    "ok", "clean", "compact_only", "raw_trace_excluded", "budget_count_allowed", "countable_attempt",
    "learning_row_present", "learning_row_actionable",
})
GATES = frozenset({"gates", "transition_ready", "phase_ready", "lifecycle_gate", "learning_quota_gate", "baseline_failure_gate"})


@dataclass(frozen=True)
class Shown:
    """One value of a review as its page shows it: ``kind`` names how, ``items`` holds an object's or a list's parts in order."""

    kind: str  # "none", "boolean", "object", "list" or "scalar"
    value: Any = None
    tone: str = ""  # a boolean's: "yes" (good news), "no" (bad news) or "" (neither)
    items: tuple[tuple[str, Shown], ...] = ()


@functools.cache
def key_orders() -> dict[str, dict[str, list[list[str]]]]:
    return json.loads((resources.files("benchledger.cli.web") / KEY_ORDER_NAME).read_text(encoding="utf-8"))


def tone(path: tuple[str, ...], value: bool) -> str:
    """``"yes"`` when ``value`` is good news at ``path`` (the keys leading to it), ``"no"`` when bad news, ``""`` when neither."""
    # a key may itself be a dotted path ("read_boundary.compact_only", in a review's lists of fields): its parts count as keys
    names = [name for part in path if part != "[]" for name in part.split(".")]
    if not names:
        return ""
    name, holder = names[-1], names[-2] if len(names) > 1 else ""
    if name in GOOD_WHEN_FALSE or name.endswith(GOOD_WHEN_FALSE_ENDINGS):
        good = False
    elif name in GOOD_WHEN_TRUE or holder in GATES:
        good = True
    else:
        return ""
    return "yes" if value is good else "no"


def ordered_keys(review: str, path: str, keys: list[str]) -> list[str]:
    """``keys`` of the object at ``path`` in the order the review prints them (the recorded order that knows most of them)."""
    known = key_orders().get(review, {}).get(path, [])
    if not known:
        return sorted(keys)
    present = set(keys)
    best = max(known, key=lambda order: (len(present.intersection(order)), -len(order)))
    rank = {key: n for n, key in enumerate(best)}
    return sorted(keys, key=lambda key: (key not in rank, rank.get(key, 0), key))


def shown(review: str, value: Any, path: tuple[str, ...] = ()) -> Shown:
    """``value`` (a review's payload, or a part of it at ``path``) ready for the page."""
    if value is None:
        return Shown("none")
    if isinstance(value, bool):
        return Shown("boolean", value, tone(path, value))
    if isinstance(value, Mapping):
        keys = ordered_keys(review, "/".join(path), list(value))
        return Shown("object", items=tuple((key, shown(review, value[key], (*path, key))) for key in keys))
    if isinstance(value, list):
        return Shown("list", items=tuple(("", shown(review, item, (*path, "[]"))) for item in value))
    return Shown("scalar", value)
