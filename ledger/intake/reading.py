"""Reading JSON input files exactly as the reference reads them.

Error texts are the Python exception messages the reference prints (for
instance ``[Errno 2] No such file or directory: 'missing.json'`` or
``Expecting value: line 1 column 1 (char 0)``), because they are part of the
review payloads that must agree with LoopX 0.4.8.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import IntakeError


@dataclass(frozen=True)
class Document:
    """A parsed JSON document and the SHA-256 of the bytes it was parsed from."""

    value: Any
    sha256: str


def read_bytes(path: str, *, stdin_dash: bool = False) -> bytes:
    """Read ``path`` (``~`` expanded); ``-`` means standard input only when ``stdin_dash``."""
    try:
        if stdin_dash and path == "-":
            return sys.stdin.buffer.read()
        return Path(os.path.expanduser(path)).read_bytes()
    except OSError as exc:
        raise IntakeError(str(exc)) from exc


def parse_json_bytes(data: bytes) -> Any:
    """Decode UTF-8 strictly and parse with Python's JSON rules (NaN accepted, last duplicate key wins)."""
    try:
        text = data.decode("utf-8")
        return json.loads(text)
    except RecursionError as exc:
        raise IntakeError("maximum recursion depth exceeded while decoding a JSON array from a unicode string") from exc
    except ValueError as exc:  # decode errors, JSON syntax, over-long integer literals
        raise IntakeError(str(exc)) from exc


def read_json(path: str, *, stdin_dash: bool = False) -> Document:
    """Read and parse one JSON file the way the reference review commands do."""
    data = read_bytes(path, stdin_dash=stdin_dash)
    return Document(parse_json_bytes(data), hashlib.sha256(data).hexdigest())
