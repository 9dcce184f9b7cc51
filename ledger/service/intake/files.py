"""What ``benchledger ingest`` reads: files, directories, NDJSON and standard input, gzipped or not, with guards.

The review commands read exactly what LoopX reads (``reading.py``); ingest is
the ledger's front door and is stricter, because whatever it accepts is kept
forever: documents larger than :data:`MAX_DOCUMENT_BYTES`, nested deeper than
:data:`MAX_NESTING_DEPTH`, or carrying ``NaN``/``Infinity`` are refused. A
gzip file is read decompressed, its limits counted on what it decompresses to.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import io
import itertools
import json
import math
import os
import stat
import sys
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from benchledger.ledger.storage.canonical import canonical_json, sha256_hex
from benchledger.ledger.storage.guard import (
    LONE_SURROGATE,
    MAX_NESTING_DEPTH,
    MAX_PAYLOAD_BYTES,
    NUL_CHARACTER,
    may_hold_unprintable,
    nesting_depth,
    unprintable_in,
)
from benchledger.projections.artifacts import IntakeError
from benchledger.projections.runs import LOOPX_RUN_LEDGER_SCHEMA

# A document as large and as deep as the store keeps a payload (ledger.storage.guard).
MAX_DOCUMENT_BYTES = MAX_PAYLOAD_BYTES
MAX_NDJSON_BYTES = 64 * 1024 * 1024
# One batch, whatever the way in (files read as one batch, an ingest-batches line): a batch's review rows list its
# members (a run's row in review-verifier-attribution is about 1.5 KB) and its fold holds them all, so what it
# may hold is bounded as a document is (docs/performance.md, "Memory").
MAX_BATCH_ARTIFACTS = 5000
MAX_BATCH_BYTES = MAX_NDJSON_BYTES
NDJSON_SUFFIXES = (".ndjson", ".jsonl")
GZIP_SUFFIX = ".gz"
# What a folder is read for: JSON and NDJSON files, and the same gzipped (``run.json.gz``).
INPUT_SUFFIXES = tuple(suffix + gz for suffix in (".json", *NDJSON_SUFFIXES) for gz in ("", GZIP_SUFFIX))
# How every gzip stream starts (RFC 1952): a file is gzip by its bytes, whatever its name.
GZIP_MAGIC = b"\x1f\x8b"
# How a refusal names the escape an unprintable character came from.
_ESCAPE_OF = {NUL_CHARACTER: "a \\u0000 escape", LONE_SURROGATE: "\\ud800-\\udfff escape"}


@dataclass(frozen=True)
class SourceDocument:
    """One JSON document to ingest and where it came from (``path`` or ``path:line``)."""

    source: str
    value: Any
    sha256: str
    size: int = 0  # the bytes it was read from (embedded: its canonical JSON's)


class InputFileError(IntakeError):
    """A named input could not be taken in; ``str()`` is ``<source>: <reason>``."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source, self.reason = source, reason


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (the ledger stores only finite numbers)")


def _finite_float(literal: str) -> float:
    """A float literal, refused when it overflows to infinity (``1e400`` would be stored as ``Infinity``)."""
    value = float(literal)
    if not math.isfinite(value):
        shown = literal if len(literal) <= 40 else literal[:37] + "..."
        raise ValueError(f"the number {shown} is out of range (the ledger stores only finite numbers)")
    return value


# Why a file of UTF-16 or UTF-32 text (:func:`_wide_text`) is refused, whichever reader meets it.
WIDE_TEXT = "is UTF-16 or UTF-32 text (Windows PowerShell's > writes UTF-16), not UTF-8: save it as plain UTF-8"


def _wide_text(data: bytes) -> bool:
    """Whether ``data`` are UTF-16 or UTF-32 text: a byte-order mark of one, or a document's ``{`` or ``[`` with a NUL
    byte beside it (``7b 00`` in UTF-16LE, ``00 7b`` in UTF-16BE), as no UTF-8 document starts."""
    return data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")) or data[:2] in (b"{\x00", b"[\x00", b"\x00{", b"\x00[")


def parse_document(data: bytes, source: str, *, limit: int = MAX_DOCUMENT_BYTES) -> SourceDocument:
    """Parse one document strictly; any refusal names ``source`` and the reason.

    ``limit`` is larger only for a line that holds many documents (an
    ``ingest-batches`` batch), each of which is held to :data:`MAX_DOCUMENT_BYTES`.
    """
    if len(data) > limit:
        raise InputFileError(source, f"document is {len(data)} bytes, larger than the {limit}-byte limit")
    if _wide_text(data):
        raise InputFileError(source, WIDE_TEXT)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(source, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    if text.startswith("\ufeff"):
        raise InputFileError(source, "starts with a UTF-8 byte-order mark; save it as plain UTF-8")
    if "\x00" in text:
        raise InputFileError(source, "contains a NUL character")
    if not text.strip():  # (JSON's "Expecting value: line 1 column 1 (char 0)" says it less plainly)
        raise InputFileError(source, "invalid JSON: the file is empty or blank, no document in it (cut short, or written by a command that failed?)")
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InputFileError(source, f"invalid JSON: {exc}") from exc
    except ValueError as exc:  # NaN/Infinity, integer literals over Python's 4300-digit limit
        if "integer string conversion" in str(exc):
            raise InputFileError(source, "a number has more than 4300 digits (the ledger stores only exact, finite numbers)") from exc
        raise InputFileError(source, str(exc)) from exc
    except RecursionError as exc:
        raise InputFileError(source, f"nested deeper than the {MAX_NESTING_DEPTH}-level limit") from exc
    # Each check below walks the value only when the text could hold what it looks for.
    # Every container of the value opens with a bracket of the text, so a text with
    # no more brackets than the limit (those inside strings included) cannot nest deeper.
    if text.count("{") + text.count("[") > MAX_NESTING_DEPTH and nesting_depth(value) > MAX_NESTING_DEPTH:
        raise InputFileError(source, f"nested deeper than the {MAX_NESTING_DEPTH}-level limit")
    # A NUL reaches a string only through a \u0000 escape (a raw one is refused above)
    # and a surrogate only through a \ud800-\udfff one (UTF-8 text cannot hold it).
    if may_hold_unprintable(text):
        reason = unprintable_in(value)
        if reason:
            raise InputFileError(source, f"contains {reason} ({_ESCAPE_OF[reason]})")
    return SourceDocument(source, value, hashlib.sha256(data).hexdigest(), len(data))


def embedded_document(source: str, value: Any, canonical: str | None = None) -> SourceDocument:
    """A document that came inside another one (a run record's artifact, a batch line's), not from a file of its own.

    It has no bytes of its own, so its source hash is that of its canonical
    JSON (``canonical``, when the caller has it already): the same object,
    wherever it is embedded and however it is spaced, is the same observation
    (and re-reading the same input finds it again).
    """
    body = canonical_json(value) if canonical is None else canonical
    return SourceDocument(source, value, sha256_hex(body), len(body.encode()))


@contextmanager
def open_regular_file(path: str | os.PathLike[str], source: str) -> Iterator[BinaryIO]:
    """A binary handle on ``path`` if it is a regular file (symlinks followed).

    Opened without blocking, then checked on the open descriptor: a FIFO would
    block the open or the read for ever, ``/dev/zero`` would never end, and a
    check by name could be raced by a rename. Every reader of the ledger's
    inputs (ingest, import-ndjson, import-loopx) opens its files here.
    """
    try:
        fd = os.open(os.path.expanduser(os.fspath(path)), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputFileError(source, exc.strerror or str(exc)) from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # (checked before the descriptor becomes a file object: that refuses a folder's, exit 70)
        os.close(fd)
        raise InputFileError(source, "is a folder, not a file" if stat.S_ISDIR(mode) else "not a regular file (devices, FIFOs and sockets are not read)")
    with open(fd, "rb") as handle:
        yield handle


class _Gunzipped(gzip.GzipFile):
    """A gzip file's decompressed bytes, read as they are needed; a corrupt or truncated stream is one refusal naming the file.

    It has no descriptor to ``stat``: its limits are counted on the decompressed
    bytes as they are read, so a small file that decompresses to gigabytes (a
    zip bomb) is refused once it passes the limit, never held.
    """

    def __init__(self, handle: BinaryIO, source: str) -> None:
        super().__init__(fileobj=handle, mode="rb")
        self.source = source

    def fileno(self) -> int:
        raise io.UnsupportedOperation("a decompressed stream has no descriptor of its own")

    def read(self, size: int | None = -1) -> bytes:
        try:
            return super().read(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise self._corrupt(exc) from exc

    def readline(self, size: int | None = -1) -> bytes:
        try:
            return super().readline(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise self._corrupt(exc) from exc

    def _corrupt(self, exc: Exception) -> InputFileError:
        return InputFileError(self.source, f"not a readable gzip file ({exc or type(exc).__name__})")


def _is_gzip(handle: BinaryIO) -> bool:
    peek = getattr(handle, "peek", None)
    return bool(peek) and peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)] == GZIP_MAGIC


def not_json_lines(path: str, *, what: str, shape: str, empty: str | None = None, limit: int = MAX_NDJSON_BYTES) -> str | None:
    """Why the regular file at ``path`` is plainly not ``what``, a file of JSON lines (``shape`` says whose), before its
    lines are judged one by one: UTF-16 or UTF-32 text (split at its newlines, a problem a line), one JSON document over
    many lines (a LoopX run ledger: likewise), or, when ``empty`` says why that is wrong, an empty file. None when its lines are to be judged (a folder, an unreadable or
    gzip file included: the reading says what is wrong with them). ``import-ndjson``, ``merge`` and ``ingest-batches``
    ask it first."""
    try:
        with open_regular_file(path, path) as handle:  # (a FIFO, a device: not opened to wait on; the reading names it)
            if _wide_text(handle.read(4)):
                return WIDE_TEXT
            handle.seek(0)
            first = handle.readline(1024).strip()
            if not first and not handle.read(1):
                return empty
            if first not in (b"{", b"["):
                return None
            handle.seek(0)
            whole = json.loads(handle.read(limit))
    except (OSError, ValueError, RecursionError, InputFileError):
        return None
    if isinstance(whole, dict) and whole.get("schema_version") == LOOPX_RUN_LEDGER_SCHEMA:
        return f"this is a LoopX run ledger ({LOOPX_RUN_LEDGER_SCHEMA}), not {what}: bring it in with `benchledger import-loopx FILE --goal GOAL`"
    return f"this is one JSON document over many lines, not {what} ({shape})"


@contextmanager
def open_input(path: str | os.PathLike[str], source: str) -> Iterator[tuple[BinaryIO, str]]:
    """:func:`open_regular_file`, decompressed as it is read when it is gzip; with what its limits are counted on
    (``"file"``, or ``"decompressed file"``: the words a refusal over a limit uses)."""
    with open_regular_file(path, source) as handle:
        if _is_gzip(handle):
            with _Gunzipped(handle, source) as decompressed:
                yield decompressed, "decompressed file"
        else:
            yield handle, "file"


def _over_limit(source: str, size: int | None, limit: int, what: str = "file") -> InputFileError:
    shown = f"is {size} bytes, " if size is not None else "is "
    return InputFileError(source, f"{what} {shown}larger than the {limit}-byte limit")


def _stat_size(handle: BinaryIO) -> int | None:
    """The size ``stat`` gives a regular file's handle (``None`` for a pipe or an in-memory stream): a quick first refusal."""
    try:
        info = os.fstat(handle.fileno())
    except (OSError, io.UnsupportedOperation):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def read_limited(handle: BinaryIO, source: str, limit: int, *, what: str = "file") -> bytes:
    """All of ``handle``, refused once it exceeds ``limit`` bytes (counted while reading, whatever ``stat`` said)."""
    size = _stat_size(handle)
    if size is not None and size > limit:
        raise _over_limit(source, size, limit)
    try:
        data = handle.read(limit + 1)
    except OSError as exc:
        raise InputFileError(source, exc.strerror or str(exc)) from exc
    if len(data) > limit:
        raise _over_limit(source, None, limit, what)
    return data


def read_lines(handle: BinaryIO, source: str, *, limit: int | None, line_limit: int, what: str = "file") -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of ``handle`` as ``(line number, bytes without the line end)``, one at a time.

    Memory stays within one line: a line longer than ``line_limit`` bytes, or
    a file longer than ``limit`` (``None``: no limit), is refused as soon as the
    reading gets there (``what``: what the refusal calls the file).
    """
    size = _stat_size(handle)
    if limit is not None and size is not None and size > limit:
        raise _over_limit(source, size, limit)
    total = 0
    for number in itertools.count(1):
        try:
            line = handle.readline(line_limit + 2)  # (room for the line end)
        except OSError as exc:
            raise InputFileError(source, exc.strerror or str(exc)) from exc
        if not line:
            return
        total += len(line)
        if limit is not None and total > limit:
            raise _over_limit(source, None, limit, what)
        line = line.rstrip(b"\n").rstrip(b"\r")
        if len(line) > line_limit:
            raise InputFileError(f"{source}:{number}", f"line is larger than the {line_limit}-byte limit of one line")
        if line.strip():
            yield number, line


def _ndjson(handle: BinaryIO, source: str, limit: int, what: str = "file") -> Iterator[SourceDocument | InputFileError]:
    """Each line's document, or why that line was refused (the reading goes on: every line's problem is named)."""
    for number, line in read_lines(handle, source, limit=limit, line_limit=MAX_DOCUMENT_BYTES, what=what):
        try:
            yield parse_document(line, f"{source}:{number}")
        except InputFileError as refused:
            yield refused


def _included(relative: PurePosixPath, include: Sequence[str]) -> bool:
    """Whether a file (its path below the folder read) is one to read: by default a JSON or NDJSON file
    (:data:`INPUT_SUFFIXES`); with ``include`` (``--include GLOB``), one a GLOB matches: its name when the GLOB
    has no ``/``, else its path below the folder (``*`` crossing ``/`` as in :mod:`fnmatch`)."""
    if not include:
        return relative.name.endswith(INPUT_SUFFIXES)
    return any(fnmatch.fnmatchcase(relative.as_posix() if "/" in glob else relative.name, glob) for glob in include)


def directory_files(directory: Path, include: Sequence[str] = ()) -> list[Path]:
    """Every file below ``directory`` to read (:func:`_included`), sorted; symlinked folders are not followed (no loops).

    Hidden files and folders (a leading dot) are passed over, as a shell glob does: a folder copied from a
    Mac holds an AppleDouble ``._run.json`` beside every ``run.json``, which is not JSON and would refuse
    the whole ingest; ``.git`` and editors' swap and backup files are never artifacts either.
    """
    found = []
    for root, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        below = PurePosixPath(Path(root).relative_to(directory).as_posix())
        found.extend(Path(root) / name for name in files if not name.startswith(".") and _included(below / name, include))
    return sorted(found)


def expand_paths(paths: list[str], include: Sequence[str] = ()) -> list[str]:
    """The files that ``paths`` name, in argument order (directories expanded, sorted; ``include``: :func:`_included`)."""
    if paths.count("-") > 1:  # (the second would read an exhausted stream: "<stdin>: the file is empty" is no help)
        raise InputFileError("<stdin>", f"`-` (standard input) is given {paths.count('-')} times; it can be read once")
    files: list[str] = []
    for raw in paths:
        path = Path(os.path.expanduser(raw))
        if raw != "-" and path.is_dir():
            files.extend(str(p) for p in directory_files(path, include))
        else:
            files.append(raw)
    return files


def read_documents(file: str) -> Iterator[SourceDocument]:
    """The documents of one file from :func:`expand_paths` (``-`` is standard input), read as they are needed; the first
    refusal raises (:func:`read_each_document` goes on past a line that is refused)."""
    for document in read_each_document(file):
        if isinstance(document, InputFileError):
            raise document
        yield document


def _one_document(data: bytes) -> bool:
    """Whether standard input's ``data`` parse as one JSON document: one printed with nested objects at the start of
    its lines (``json.dumps(run, indent=0)``: an array of objects) is one document, not NDJSON. (Larger than a
    document may be, it is not one: it is never parsed whole here.)"""
    if len(data) > MAX_DOCUMENT_BYTES:
        return False
    try:
        json.loads(data)
    except RecursionError:
        return True  # (nested deeper than Python parses: one document, which parse_document refuses as such)
    except ValueError:
        return False
    return True


def read_each_document(file: str) -> Iterator[SourceDocument | InputFileError]:
    """The documents of one file from :func:`expand_paths` (``-`` is standard input), read as they are needed, each
    one or why it was refused.

    An NDJSON file is read a line at a time (at most :data:`MAX_NDJSON_BYTES`
    in all): a line that does not parse is yielded as its :class:`InputFileError`
    and the reading goes on, so that every line's problem can be named at once.
    Any other file is one document of at most :data:`MAX_DOCUMENT_BYTES`.
    What stops the reading of the file (it cannot be opened or read, it passes a
    limit, a line longer than a document may be) raises :class:`InputFileError`.
    A gzip file (by its first bytes) is read decompressed, as the file its name
    names without ``.gz``; the limits count the decompressed bytes.
    """
    if file == "-":
        data = read_limited(sys.stdin.buffer, "<stdin>", MAX_NDJSON_BYTES, what="standard input")
        if data.startswith(GZIP_MAGIC):
            data = read_limited(_Gunzipped(io.BytesIO(data), "<stdin>"), "<stdin>", MAX_NDJSON_BYTES, what="decompressed standard input")
        text_start = data.lstrip()[:1]
        # Standard input holds one document, or NDJSON when it has several lines of objects and is not one document.
        if text_start == b"{" and b"\n{" in data.strip() and not _one_document(data):
            yield from _ndjson(io.BytesIO(data), "<stdin>", MAX_NDJSON_BYTES)
        else:
            yield parse_document(data, "<stdin>")
        return
    with open_input(file, file) as (handle, what):
        if Path(file.removesuffix(GZIP_SUFFIX)).suffix in NDJSON_SUFFIXES:
            yield from _ndjson(handle, file, MAX_NDJSON_BYTES, what)
        else:
            yield parse_document(read_limited(handle, file, MAX_DOCUMENT_BYTES, what=what), file)
