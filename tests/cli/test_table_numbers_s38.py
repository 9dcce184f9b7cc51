"""Numbers are never cut in a fitted table: a cell that is wholly a number, a percentage, a p-value or an interval.

A user's terminal at 80 or 100 columns printed `compare`'s 95% interval
``[+100.0, +100.0]`` as ``[+1…0]``: the table printer kept whole only the
columns whose every cell was a plain number, so an interval (and a bare score
in a column of ``failed 0`` cells, a p-value ``1e-05``) was cut like text. The
rule is a cell's (docs/cli.md, "Tables fit the terminal"): text columns are
narrowed instead, and when that is not enough the table runs past the width.
"""

from __future__ import annotations

import pytest

from benchledger.cli.output import display_width, fit_columns, table_text
from benchledger.cli.runs import COMPARE_HEADERS, PAIR_HEADERS
from tests.cli.test_consistency import ingest_demo
from tests.helpers import invoke

ARMS = ["skillsbench-raw-codex-autonomous-max5-baseline", "skillsbench-raw-codex-autonomous-max5-loopx-treatment"]


def _rows(text: str, headers: list[str]) -> list[dict[str, str]]:
    """A printed table's rows as {header: cell}, the columns read off its rule line (the last one to the line's end).

    ``headers`` are the table's full headers, in order: a printed header may be cut (``95% interval (p…``) and a
    column no row fills is left out, so each printed one is the next full header it is the start of.
    """
    lines = text.splitlines()
    spans, start = [], 0
    for dashes in lines[1].split("  "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    spans[-1] = (spans[-1][0], None)
    names, rest = [], iter(headers)
    for a, b in spans:
        printed = lines[0][a:b].strip()
        names.append(next(h for h in rest if h == printed or (printed.endswith("…") and h.startswith(printed[:-1]))))
    return [{h: line[a:b].strip() for h, (a, b) in zip(names, spans)} for line in lines[2:]]


# -- the printer, on crafted rows at a given width --------------------------------------------------------------------


@pytest.mark.parametrize("value", [
    "[+100.0, +100.0]", "[-0.5, 0.25]", "(-12.5; 3.75)", "[0%, 100%]", "100%", "12.5 %", "+100.0", "-0.25", "−0.25",
    "0.0312", "1e-05", "2.5E+03", "<0.001", "3/4", "0.5 ± 0.125", "+inf", "nan",
])
def test_a_cell_that_is_wholly_a_number_is_never_cut(value):
    # A numeric column between two long text columns, at a width that holds it only when they go down to 3 ("a…z").
    headers = ["arm", "v", "note"]
    width = 3 + 2 + display_width(value) + 2 + 3
    text = table_text(headers, [[ARMS[0], value, "x" * 40], [ARMS[1], value, "y" * 40]], width=width)
    shown = _rows(text, headers)
    assert [row["v"] for row in shown] == [value, value], text
    assert max(display_width(line) for line in text.splitlines()) <= width, text  # the text columns were narrowed instead
    assert all("…" in row["arm"] and "…" in row["note"] for row in shown), text


def test_a_number_among_text_cells_is_whole_and_its_column_no_narrower():
    # A score column of text ("failed 0 …", "missing: …") with a bare score and an interval in it: only the text is cut.
    headers = ["arm", "score", "note"]
    rows = [
        [ARMS[0], "failed 0 (terminal-bench verifier reward)", "x" * 30],
        [ARMS[1], "0.833333", "y" * 30],
        [ARMS[1], "missing: the verifier did not run", "z" * 30],
        [ARMS[0], "[-0.5, 0.25]", "w" * 30],
    ]
    text = table_text(headers, rows, width=24)
    cells = [row["score"] for row in _rows(text, headers)]
    assert (cells[1], cells[3]) == ("0.833333", "[-0.5, 0.25]"), text
    assert "…" in cells[0] and "…" in cells[2], text  # a label with a number is text: it may be cut
    assert max(display_width(line) for line in text.splitlines()) <= 24, text
    score = fit_columns(headers, rows, 24)[1]
    assert not score.whole and score.width == len("[-0.5, 0.25]")


def test_numbers_that_leave_too_little_run_past_the_width_rather_than_be_cut():
    headers = ["benchmark", "95% interval (pts)", "difference (pts)", "p", "baseline"]
    rows = [[f"benchmark-{i}-" + "b" * 20, f"[{-i * 11.5:+.1f}, {i * 13.25:+.1f}]", f"{i * 33.3:+.1f}", "1e-05", "100%"] for i in range(1, 4)]
    text = table_text(headers, rows, width=30)
    shown = _rows(text, headers)
    assert [[r[h] for h in headers[1:]] for r in shown] == [row[1:] for row in rows], text
    assert max(display_width(line) for line in text.splitlines()) > 30  # past the width, every number whole
    # The text column went down to its narrowest (MIN_CUT_WIDTH), and no further.
    assert all(len(r["benchmark"]) == 6 and "…" in r["benchmark"] for r in shown), text


def test_text_that_holds_numbers_is_still_cut_and_the_table_fits():
    headers = ["summary", "n", "version"]
    rows = [["failed 0 terminal-bench@2.0 hardened-codex", "1", "2.0 beta 3"], ["passed 1 terminal-bench@2.0 codex-loopx", "2", "v1.2.3"]]
    text = table_text(headers, rows, width=30)
    assert max(display_width(line) for line in text.splitlines()) <= 30, text
    shown = _rows(text, headers)
    assert [r["n"] for r in shown] == ["1", "2"]
    assert all("…" in r["summary"] for r in shown), text


def test_a_later_number_wider_than_its_column_is_printed_whole():
    # Columns are measured on the first rows; a number after them runs past its column rather than be cut.
    columns = fit_columns(["note", "score"], [["text " * 8, "0.5"], ["more text " * 4, "missing"]], 30)
    assert columns[1].width < len("[-100.0, +100.0]")
    assert columns[1].shown("[-100.0, +100.0]") == "[-100.0, +100.0]"
    assert "…" in columns[1].shown("missing: the verifier did not run")


# -- as a user types it: compare and runs --paired at 80 and 100 columns ---------------------------------------------


NUMBERS = ["tasks", "baseline", "treatment", "difference (pts)", "95% interval (pts)", "p", "p (Holm)", "baseline only", "treatment only"]


@pytest.mark.parametrize("columns", ["80", "100"])
def test_compare_and_paired_runs_keep_their_numbers_whole_on_a_normal_terminal(migrated_url, columns):
    ingest_demo(migrated_url)
    terminal = {"COLUMNS": columns}
    result = invoke(migrated_url, "compare", env=terminal)
    assert result.exit_code == 0, result.output
    (row,) = _rows(result.stdout.split("\n\n", 1)[1], COMPARE_HEADERS)
    assert row["95% interval (pts)"] == "[+100.0, +100.0]", result.stdout
    assert [row[h] for h in NUMBERS] == ["1", "0%", "100%", "+100.0", "[+100.0, +100.0]", "1", "1", "0", "0"], result.stdout
    assert max(display_width(line) for line in result.stdout.splitlines()) <= int(columns), result.stdout  # text gave way
    assert "…" in row["benchmark"], result.stdout
    # --wide prints the same numbers: nothing was cut.
    (wide,) = _rows(invoke(migrated_url, "compare", "--wide", env=terminal).stdout.split("\n\n", 1)[1], COMPARE_HEADERS)
    assert [wide[h] for h in NUMBERS] == [row[h] for h in NUMBERS]

    result = invoke(migrated_url, "runs", "--paired", env=terminal)
    assert result.exit_code == 0, result.output
    (pair,) = _rows(result.stdout, PAIR_HEADERS)
    assert (pair["goal"], pair["pair"], pair["delta"]) == ("demo", "fixture-pair", "+1"), result.stdout
    assert max(display_width(line) for line in result.stdout.splitlines()) <= int(columns), result.stdout
