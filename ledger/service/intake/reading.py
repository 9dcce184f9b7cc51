"""Reading JSON input files exactly as the reference reads them.

Error texts are the Python exception messages the reference prints (for
instance ``[Errno 2] No such file or directory: 'missing.json'`` or
``Expecting value: line 1 column 1 (char 0)``), because they are part of the
review payloads that must agree with LoopX 0.4.8.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchledger.projections.artifacts import IntakeError


@dataclass(frozen=True)
class Document:
    """A parsed JSON document and the SHA-256 of the bytes it was parsed from."""

    value: Any
    sha256: str


def read_bytes(path: str, *, stdin_dash: bool = False) -> bytes:
    """Read ``path`` (``~`` expanded as pathlib does); ``-`` means standard input only when ``stdin_dash``."""
    try:
        if stdin_dash and path == "-":
            return sys.stdin.buffer.read()
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise IntakeError(str(exc)) from exc
    except RuntimeError as exc:  # ~user of no such user: pathlib's "Could not determine home directory.", as LoopX says
        raise IntakeError(str(exc)) from exc


def parse_json_bytes(data: bytes, *, universal_newlines: bool = False, encoding: str = "utf-8", errors: str = "strict") -> Any:
    """Decode (UTF-8 strictly, unless told otherwise) and parse with Python's JSON rules (NaN accepted, last duplicate key wins).

    With ``universal_newlines`` ``\\r\\n`` and ``\\r`` read as ``\\n``, as in a file the
    reference opens in text mode (it shows in the positions of its parse errors).
    """
    try:
        text = data.decode(encoding, errors)
        if universal_newlines and "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return json.loads(text)
    except RecursionError as exc:
        # (the decoder's own words name the container it was in, object or array, as LoopX's refusal does)
        said = str(exc)
        decoding = said if said.startswith("maximum recursion depth exceeded while decoding a JSON") else None
        raise IntakeError(decoding or "maximum recursion depth exceeded while decoding a JSON array from a unicode string") from exc
    except ValueError as exc:  # decode errors, JSON syntax, over-long integer literals
        raise IntakeError(str(exc)) from exc


def read_json(path: str, *, stdin_dash: bool = False) -> Document:
    """Read and parse one JSON file the way the reference review commands do."""
    data = read_bytes(path, stdin_dash=stdin_dash)
    if stdin_dash and path == "-":
        # The reference reads standard input as it comes (no newline translated), with its encoding and error handler:
        # under a C or C.UTF-8 locale surrogateescape, which reads a byte no UTF-8 holds as a lone surrogate (U+DC80-U+DCFF).
        value = parse_json_bytes(data, encoding=sys.stdin.encoding or "utf-8", errors=sys.stdin.errors or "strict")
    else:
        value = parse_json_bytes(data, universal_newlines=True)
    return Document(value, hashlib.sha256(data).hexdigest())
