"""How every command prints: the one ``--format`` option, the one table printer, the one time form.

* ``--format`` takes the same names everywhere: ``table`` (what a terminal
  shows by default), ``json``, ``markdown`` where a command has a document
  form, ``csv`` for listings. A command's own ``--format`` wins; without it the
  root ``benchledger --format`` applies, and a command that does not offer the
  root's format says so (usage error) instead of quietly printing another; so
  does a command with one output form and no ``--format`` at all (``export``,
  ``report``, ``serve``, ``db``).
* Tables fit the terminal: ``$COLUMNS``, else the terminal's width
  (``shutil.get_terminal_size``); output that goes to a pipe or file is not cut.
  Columns keep their natural width while they fit; else empty columns are left
  out, then the widest are narrowed, never an id, a time or a cell that is
  wholly a number (a count, ``100%``, ``+100.0``, a p-value, an interval
  ``[+100.0, +100.0]``) in whatever column (:func:`fit_columns`), and a cut
  cell keeps what tells it from its column's other cells (:func:`abbreviate`).
  ``--wide`` prints every cell whole. CSV, JSON and markdown are never cut.
* Times in tables, CSV and markdown are UTC, ``YYYY-MM-DDTHH:MM:SSZ`` whatever
  form the ledger or an artifact wrote them in (JSON keeps each value as recorded).
* Invisible format characters (Unicode category Cf: bidi overrides such as
  U+202E, zero-width spaces and joiners) are shown as their ``\\uXXXX`` escape in
  tables, markdown and the report's HTML (:func:`visible`), so ``job-<U+202E>gnp.exe``
  cannot pass for ``job-exe.png``; JSON and CSV keep the value as recorded.
* A CSV text cell a spreadsheet would run as a formula (starting with ``=``,
  ``+``, ``-``, ``@``, tab or carriage return, as OWASP lists them) is written
  with a leading ``'`` (:func:`spreadsheet_safe`). Numbers, and text that is
  a plain number such as a delta ``-0.25``, are written as they are.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
import shutil
import textwrap
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from benchledger.ledger.results import Listing

FORMATS = ("table", "json", "markdown", "csv")
COLUMN_GAP = 2
ELLIPSIS = "…"
# Rows a streamed table measures its columns on.
TABLE_MEASURED_ROWS = 1000


def _resolve_format(choices: tuple[str, ...], default: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    def resolve(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None or ctx.resilient_parsing:
            return value
        root = (ctx.find_root().obj or {}).get("format")
        if root is None:
            return default
        if root not in choices:
            raise click.UsageError(
                f"the root option --format {root} does not apply here: this command prints {', '.join(choices)}", ctx
            )
        return root

    return resolve


def offers_format(ctx: click.Context, command: click.Command) -> bool:
    """Whether ``command`` (or, for a group, any of its commands) has a ``--format``."""
    if isinstance(command, click.Group):
        return any(offers_format(ctx, sub) for name in command.list_commands(ctx) if (sub := command.get_command(ctx, name)))
    return any(param.name == "fmt" for param in command.params)


def refuse_unused_root_format(ctx: click.Context, root_format: str | None, command: click.Command | None) -> None:
    """A root ``--format`` before a command that has only one output form is a usage error, not quietly ignored."""
    if root_format is not None and command is not None and not offers_format(ctx, command):
        raise click.UsageError(
            f"the root option --format {root_format} does not apply to `{command.name}`: it has one output form and no --format", ctx
        )


def format_option(*choices: str, default: str | None = None) -> Callable:
    """``--format`` offering ``choices`` (names from :data:`FORMATS`), resolved against the root ``--format``."""
    unknown = set(choices) - set(FORMATS)
    if unknown:
        raise ValueError(f"not a benchledger format: {sorted(unknown)}")
    default = default or choices[0]
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=None,
        callback=_resolve_format(tuple(choices), default),
        help=f"Output format (default {default}, or the root --format).",
    )


wide_option = click.option("--wide", is_flag=True, help="Print every table cell whole, however wide the terminal.")


def encoded(text: str, encoding: str | None = None) -> bytes:
    """``text`` in ``encoding`` (UTF-8 when ``None``), each code point it cannot hold written as its backslash escape.

    A lone UTF-16 surrogate has no UTF-8 form; a ledger written before the
    storage guard may hold one (its JSON stores the ``\\ud800`` escape, which is
    what is printed). Every command's standard output and every report page
    is written this way, so such a value never fails a command.
    """
    return text.encode(encoding or "utf-8", "backslashreplace")


def visible(text: str) -> str:
    """``text`` with each invisible format character (category Cf) as its ``\\uXXXX`` (or ``\\UXXXXXXXX``) escape.

    Used by every human-facing renderer (tables, markdown, the report's HTML):
    a right-to-left override or a zero-width character in an artifact's
    string must not make it display as something else.
    """
    if text.isascii():  # no ASCII character is Cf: the common case costs one scan
        return text
    # only the runs of non-ASCII characters are looked at, in C up to them (a report page's table is 50 KB of mostly ASCII)
    return _NON_ASCII.sub(lambda run: "".join(_escape_format_character(c) if unicodedata.category(c) == "Cf" else c for c in run.group()), text)


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _escape_format_character(character: str) -> str:
    code = ord(character)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


# What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` for a CSV cell: a text that a spreadsheet would run as a formula gets a leading ``'``.

    Only text is changed, and not text that is a plain number (``-0.25``, ``+3``):
    a spreadsheet reads those as the number they are, and they run nothing.
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def printable(text: str, encoding: str | None = None) -> str:
    """``text`` as :func:`encoded` writes it, still as text."""
    return encoded(text, encoding).decode(encoding or "utf-8")


def json_document(value: Any, *, escape_surrogates: bool = True) -> str:
    """``value`` as every ``--format json`` prints it: indented, non-ASCII kept, lone surrogates escaped (unless not
    ``escape_surrogates``: a review's answer, printed only where LoopX's is, ``cli.reviews.print_review``)."""
    from benchledger.ledger.api import escape_lone_surrogates

    text = json.dumps(value, indent=2, ensure_ascii=False)
    return escape_lone_surrogates(text) if escape_surrogates else text


def echo_json(value: Any) -> None:
    click.echo(json_document(value))


def signed_number(value: float) -> str:
    """A delta as every listing and page shows it: its sign always written (``+1``, ``-0.25``, ``+0``)."""
    return f"{value:+g}"


def utc_text(value: Any) -> str:
    """An ISO-8601 time with an offset as UTC ``YYYY-MM-DDTHH:MM:SSZ``; anything else unchanged."""
    if not isinstance(value, str):
        return "" if value is None else str(value)
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is None:
        return value
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def terminal_width() -> int | None:
    """``$COLUMNS``, else the terminal's width; ``None`` (no limit) when output is not a terminal."""
    return shutil.get_terminal_size(fallback=(0, 0)).columns or None


def fit_widths(natural: Sequence[int], limit: int | None, floors: Sequence[int] | None = None) -> list[int]:
    """Column widths that fit ``limit``: the narrow columns whole, the widest cut to one common width, none below its floor.

    When even the floors do not fit (ids, times and numbers are never cut), the floors are the widths and the lines run past ``limit``.
    """
    widths = list(natural)
    if limit is None or not widths:
        return widths
    least = list(floors) if floors is not None else [min(1, w) for w in widths]
    budget = limit - COLUMN_GAP * (len(widths) - 1)
    if sum(widths) <= budget:
        return widths

    def capped(cap: int) -> list[int]:
        return [max(floor, min(w, cap)) for w, floor in zip(widths, least)]

    # The largest cap with sum(capped) <= budget (binary search), then the rest of the budget
    # goes one character each to the columns that were cut, left first.
    low, high = 0, max(widths)
    while low < high:
        middle = (low + high + 1) // 2
        if sum(capped(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    fitted = capped(low)
    spare = budget - sum(fitted)
    for i, width in enumerate(widths):
        if spare <= 0:
            break
        if width > fitted[i]:
            fitted[i] += 1
            spare -= 1
    return fitted


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide (East Asian, most emoji) characters two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _take(text: str, width: int, *, from_end: bool = False) -> str:
    """The longest start (``from_end``: end) of ``text`` that takes at most ``width`` columns."""
    kept, used = [], 0
    for character in reversed(text) if from_end else text:
        used += display_width(character)
        if used > width:
            break
        kept.append(character)
    return "".join(reversed(kept) if from_end else kept)


def _cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` columns, ending in ``…`` when cut (a header)."""
    if display_width(text) <= width:
        return text
    return _take(text, width - 1) + ELLIPSIS


def _cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` columns, its middle replaced by ``…`` when cut: its start and its end stay."""
    if display_width(text) <= width:
        return text
    head = _take(text, width // 2)
    return head + ELLIPSIS + _take(text, width - 1 - display_width(head), from_end=True)


def abbreviate(text: str, width: int, shared: int = 0) -> str:
    """A cell in at most ``width`` columns, keeping what tells it from the other cells of its column.

    ``shared``: how many leading characters every cell of the column has in
    common (``skillsbench-`` of ``skillsbench-codex-loopx`` and
    ``skillsbench-hardened-codex``); they go first, as ``…``, so two different
    values never print as the same ``skillsb…``. What is left is cut from the
    middle, its start and end kept.
    """
    if display_width(text) <= width:
        return text
    rest = text[shared:] if 0 < shared < len(text) else ""
    if not rest or width < 3:
        return _cut_middle(text, width)
    if display_width(rest) <= width - 1:
        return _take(text, width - 1 - display_width(rest)) + ELLIPSIS + rest
    return ELLIPSIS + _cut_middle(rest, width - 1)


# A number as a table cell shows one: signed or not (ASCII or U+2212 minus), decimal or in exponent form (a p-value
# of 1e-05), a percentage (100%, 12.5 %), infinite or not a number; a p-value may say only its bound (<0.001).
_NUMBER = r"(?:[<>≤≥]=? ?)?[+\-−]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+\-−]?[0-9]+)?|(?i:inf|nan))(?: ?%)?"
# A cell printed whole however narrow the terminal, in whichever column it is: a cut one would read as another value.
# Times, event and run ids (UUIDs), digests, a retraction's "by @POS", and a cell that is wholly a number: a position,
# count, score, delta, percentage or p-value (12, 0.75, +100.0, 100%, 1e-05), a fraction (3/4), a value with its
# margin (0.5 ± 0.1) or an interval ([+100.0, +100.0], (-0.5; 0.25)). A label and a number ("failed 0") is text.
_WHOLE_CELL = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}(?:\.[0-9]+)?Z"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{12,64}"
    rf"|{_NUMBER}(?:/[0-9]+| ?± ?{_NUMBER})?"
    rf"|[\[(] ?{_NUMBER} ?[,;] ?{_NUMBER} ?[\])]"
    r"|by @[0-9]+"
)
# Columns of identities (goals, runs, pairs, events), printed whole whatever their values look like.
IDENTITY_COLUMNS = frozenset({"goal", "run", "current run", "pair", "event id"})
# Columns that name what a row is about: cut, they stay at least as wide as keeps two different values apart.
NAME_COLUMNS = frozenset({"benchmark", "case", "arm", "baseline arm", "treatment arm"})
# The fewest columns a cut cell keeps ("ab…xyz"); a narrower one says nothing.
MIN_CUT_WIDTH = 6
# A common prefix shorter than this (a "+" of every gate change) says nothing worth dropping.
MIN_SHARED_PREFIX = 4


@dataclass(frozen=True)
class _Column:
    """A column of a fitted table: which value of each row it shows, its width, and how its cells are cut."""

    index: int
    width: int
    whole: bool  # never cut (ids, times, numbers)
    prefix: str  # what all its measured cells start with

    def shown(self, value: str) -> str:
        """``value`` as this column prints it: whole, or abbreviated to its width past the column's common prefix.

        A cell that is an id, a time or a number (:data:`_WHOLE_CELL`) is whole in any column: the column is at
        least as wide as its measured ones, and a later, wider one runs past it.
        """
        if self.whole or display_width(value) <= self.width or _WHOLE_CELL.fullmatch(value):
            return value
        return abbreviate(value, self.width, len(self.prefix) if value.startswith(self.prefix) else 0)


def _shared_prefix(values: Iterable[str]) -> str:
    """What the distinct non-empty ``values`` start with, when two or more share :data:`MIN_SHARED_PREFIX` characters or more ("" otherwise)."""
    distinct = {v for v in values if v}
    shared = os.path.commonprefix(sorted(distinct)) if len(distinct) > 1 else ""
    return shared if len(shared) >= MIN_SHARED_PREFIX else ""


def fit_columns(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None) -> list[_Column]:
    """The columns a table shows within ``width`` (``None``: all, whole), measured on ``rows``.

    In this order, until the table fits: columns no row fills are left out;
    the widest columns are narrowed to one common width, never an id, a time or
    a number (:data:`_WHOLE_CELL`, :data:`IDENTITY_COLUMNS`) and not below
    :data:`MIN_CUT_WIDTH` unless the columns left to cut cannot all have it
    (then 3, ``a…z``, then 1, ``…``); a column of :data:`NAME_COLUMNS` never
    below the width that prints its different values differently. The rule is a cell's, not a column's: a
    column of text is never narrower than its widest cell that is wholly a
    number, an interval, an id or a time (``0.8125`` among ``failed 0`` and
    ``missing``), and prints that cell whole. A table whose whole cells leave
    too little runs past ``width`` (its cut columns at :data:`MIN_CUT_WIDTH`):
    an id, a time or a number is never cut to make it fit.
    """
    natural = [max([display_width(h)] + [display_width(r[i]) for r in rows]) for i, h in enumerate(headers)]
    everything = [_Column(i, w, True, "") for i, w in enumerate(natural)]
    budget = None if width is None else width - COLUMN_GAP * (len(headers) - 1)
    if budget is None or sum(natural) <= budget:
        return everything
    shown = [i for i in range(len(headers)) if any(r[i] for r in rows)] or list(range(len(headers)))
    whole = [headers[i] in IDENTITY_COLUMNS or all(_WHOLE_CELL.fullmatch(r[i]) for r in rows if r[i]) for i in shown]
    content = [max([0] + [display_width(r[i]) for r in rows]) for i in shown]
    # What a cut column cannot go below: its widest cell never cut (a bare score among "failed 0" cells).
    uncut = [0 if keep else max([0] + [display_width(r[i]) for r in rows if r[i] and _WHOLE_CELL.fullmatch(r[i])])
             for i, keep in zip(shown, whole)]
    # The narrowest a cut column goes: MIN_CUT_WIDTH while every one can have it, else 3 ("a…z"), else 1 ("…", see
    # --wide); when even that does not fit (the whole cells take it all) the line runs past anyway, so readably.
    tiers = [
        [max(filled, min(display_width(headers[i]), 3)) if keep else max(kept, min(natural[i], least))
         for i, keep, filled, kept in zip(shown, whole, content, uncut)]
        for least in (MIN_CUT_WIDTH, 3, 1)
    ]
    # A name column goes no narrower than tells its values apart (three arms printed "code…ine" said nothing).
    apart = [_distinct_width([r[i] for r in rows], natural[i]) if headers[i] in NAME_COLUMNS and not keep else 0
             for i, keep in zip(shown, whole)]
    tiers = [[max(floor, least) for floor, least in zip(tier, apart)] for tier in tiers]
    room = budget + COLUMN_GAP * (len(headers) - len(shown))  # (the gaps of the columns left out)
    floors = next((tier for tier in tiers if sum(tier) <= room), tiers[0])
    widths = fit_widths([natural[i] for i in shown], width, floors)
    return [_Column(i, w, keep, "" if keep else _shared_prefix(r[i] for r in rows)) for i, w, keep in zip(shown, widths, whole)]


def _distinct_width(values: Sequence[str], most: int) -> int:
    """The narrowest width (at most ``most``, every value whole) at which :func:`abbreviate` prints the different
    ``values`` differently, past their common prefix as a column cuts them. A cut keeps more of a value the wider it
    is, so the widths that do are one run up to ``most``: found by halving."""
    distinct = {v for v in values if v}
    prefix = _shared_prefix(distinct)

    def apart(width: int) -> bool:
        return len({abbreviate(v, width, len(prefix) if v.startswith(prefix) else 0) for v in distinct}) == len(distinct)

    low, high = 1, max(most, 1)
    while low < high:
        middle = (low + high) // 2
        if apart(middle):
            high = middle
        else:
            low = middle + 1
    return low


def _pad(text: str, width: int) -> str:
    return text + " " * (width - display_width(text))


def _cells(rows: Sequence[Sequence[Any]]) -> list[list[str]]:
    # One line a cell: a newline inside an artifact's text would break the row.
    return [[visible("" if v is None else str(v)).replace("\r", " ").replace("\n", " ") for v in row] for row in rows]


def table_text(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, width: int | None) -> str:
    """Aligned columns under a header and a rule, every line at most ``width`` characters (``None``: whole)."""
    return "\n".join(_table_lines(headers, iter(rows), width=width))


def _table_lines(headers: Sequence[str], rows: Iterator[Sequence[Any]], *, width: int | None) -> Iterator[str]:
    """:func:`table_text` a line at a time: the columns are fitted (:func:`fit_columns`) on the first :data:`TABLE_MEASURED_ROWS` rows.

    A later cell wider than its column is abbreviated to it when the table
    must fit ``width`` (an id, a time or a number is printed whole, running
    past the column), else printed whole.
    """
    first = _cells(list(itertools.islice(rows, TABLE_MEASURED_ROWS)))
    columns = fit_columns(headers, first, width)

    def line(values: Sequence[str]) -> str:
        return (" " * COLUMN_GAP).join(_pad(c.shown(values[c.index]), c.width) for c in columns).rstrip()

    yield (" " * COLUMN_GAP).join(_pad(_cut(headers[c.index], c.width), c.width) for c in columns).rstrip()
    yield (" " * COLUMN_GAP).join("-" * c.width for c in columns)
    yield from map(line, first)
    for row in rows:
        yield from map(line, _cells([row]))


def _markdown_lines(headers: Sequence[str], rows: Iterator[Sequence[Any]]) -> Iterator[str]:
    escape = lambda v: v.replace("|", "\\|")  # noqa: E731
    yield "| " + " | ".join(headers) + " |"
    yield "|" + "---|" * len(headers)
    for row in rows:
        (cells,) = _cells([row])
        yield "| " + " | ".join(escape(v) for v in cells) + " |"


def _csv_lines(headers: Sequence[str], rows: Iterator[Sequence[Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in itertools.chain([headers], (["" if v is None else spreadsheet_safe(v) for v in row] for row in rows)):
        writer.writerow(row)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def echo_rows(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], fmt: str, *, wide: bool = False, title: str | None = None,
    empty: str | None = None,
) -> None:
    """Print a listing as ``table`` (fitted unless ``wide``), ``csv`` or ``markdown`` (under ``title``), a row at a time.

    ``rows`` may be a stream: nothing but the table's first rows (to measure its columns) is held. A table or
    markdown of no row is followed by ``empty`` on stderr (``benchledger: note: …``): bare headers do not say
    whether nothing matched or nothing was read (standard output stays the listing, which CSV and JSON keep as is).
    """
    rows = iter(rows)
    if empty is not None and fmt != "csv":
        first = next(rows, None)
        if first is None:
            echo_rows(headers, (), fmt, wide=wide, title=title)
            click.echo(f"benchledger: note: {empty}", err=True)
            return
        rows = itertools.chain([first], rows)
    if fmt == "csv":
        for text in _csv_lines(headers, rows):
            click.echo(text, nl=False)
        return
    if fmt == "markdown":
        lines = _markdown_lines(headers, rows)
        if title:
            lines = itertools.chain([f"{title}\n"], lines)
    else:
        lines = _table_lines(headers, rows, width=None if wide else terminal_width())
    for text in lines:
        click.echo(text)


def json_listing(head: Mapping[str, Any], name: str, items: Iterable[Any]) -> Iterator[str]:
    """``json_document({**head, name: list(items)})`` plus a newline, an item at a time (never all in memory)."""
    opening = json_document({**head, name: []})
    yield opening[: -len("[]\n}")]
    first = True
    for item in items:
        yield ("[\n" if first else ",\n") + textwrap.indent(json_document(item), "    ")
        first = False
    yield "[]\n}\n" if first else "\n  ]\n}\n"


def echo_pieces(pieces: Iterator[str]) -> None:
    """Print ``pieces`` as they come, a write per thousand of them (not one per listed item)."""
    while text := "".join(itertools.islice(pieces, 1000)):
        click.echo(text, nl=False)


def echo_json_listing(listing: Listing[Any]) -> None:
    """A streamed listing as :func:`echo_json` prints its ``as_dict()``, a row at a time (:func:`json_listing`)."""
    echo_pieces(json_listing(listing.head(), listing.rows_name, (row.as_dict() for row in listing)))
