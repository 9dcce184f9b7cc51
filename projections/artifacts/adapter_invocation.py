"""The ``adapter-invocation`` artifact: which generated ``loopx_*`` kwargs an adapter was handed.

An invocation is given as an argv list (``--command-json``) or as
``--agent-kwarg KEY=VALUE`` flags (turned into the same argv form). Only the
``loopx_*`` key names are kept (KEYLIST of adapter-kwargs-review.md §4):
kwarg values are full of local paths and credentials, and the review never
reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from benchledger.projections.artifacts import IntakeError

KEYS_FIELD = "loopx_kwarg_keys"
AGENT_KWARG_FLAG = "--agent-kwarg"
LOOPX_KEY_PREFIX = "loopx_"
MAX_KEYS = 80
MALFORMED_FLAG_ERROR = "--agent-kwarg values must use KEY=VALUE form"


def _is_scalar_text_source(item: Any) -> bool:
    return isinstance(item, (str, int, float)) and not isinstance(item, bool)


def loopx_keys(items: Iterable[Any]) -> list[str]:
    """KEYLIST: the distinct ``loopx_*`` key names among ``items``, sorted, at most 80.

    A ``KEY=VALUE`` item counts as ``KEY``; surrounding whitespace is ignored;
    booleans and non-scalar items are not key names. The prefix is case-sensitive.
    """
    keys = set()
    for item in items:
        if not _is_scalar_text_source(item):
            continue
        key = str(item).strip().partition("=")[0].strip()
        if key.startswith(LOOPX_KEY_PREFIX):
            keys.add(key)
    return sorted(keys)[:MAX_KEYS]


def split_pair(pair: str) -> str | None:
    """The stripped key of a ``KEY=VALUE`` pair, or ``None`` when it is malformed."""
    key, separator, _value = pair.partition("=")
    key = key.strip()
    return key if separator and key else None




def argv_text(item: Any) -> str | None:
    """An argv item as the command line would see it; ``None`` for items that are not scalars.

    Booleans keep their place as ``True``/``False``; null, objects and lists
    drop out before positions are counted.
    """
    if isinstance(item, (str, int, float)):
        return str(item)
    return None


def argv_kwarg_keys(argv: Sequence[Any]) -> list[str]:
    """Key names of the ``--agent-kwarg KEY=VALUE`` pairs of an argv list, in order.

    Malformed pairs are skipped silently (unlike malformed flags). Only the
    two-token form counts, and the token after the flag is always read as its
    value, even when it is itself the flag.
    """
    tokens = [token for token in map(argv_text, argv) if token is not None]
    keys = []
    for flag, pair in zip(tokens, tokens[1:]):
        key = split_pair(pair) if flag == AGENT_KWARG_FLAG else None
        if key is not None:
            keys.append(key)
    return keys


def invocation_payload(argv: Sequence[Any]) -> dict[str, list[str]]:
    """The normalized ``adapter-invocation`` payload of an argv list (key names only)."""
    return {KEYS_FIELD: loopx_keys(argv_kwarg_keys(argv))}


def flag_argv(pairs: Sequence[str]) -> list[str]:
    """``--agent-kwarg`` flag values as an argv list; a malformed pair is an error here."""
    for pair in pairs:
        if split_pair(pair) is None:
            raise IntakeError(MALFORMED_FLAG_ERROR)
    return [token for pair in pairs for token in (AGENT_KWARG_FLAG, pair)]
