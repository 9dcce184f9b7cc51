"""Session 38: the report's index compares the goals it shows, so an archived goal's runs leave its comparison table.

`benchledger goals archive demo-db-wal-recovery; benchledger report -o site` listed no goal ("0 goal(s).") above a
"Treatment against baseline" table that still compared the archived goal's hardened-codex and codex-loopx runs. The
table is `compare` over the goals shown (docs/cli.md). `compare` and `runs` themselves read every goal, archived or
not (archiving hides a goal from `goals` and the index only: docs/cli.md, "Archiving goals").
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from tests.helpers import invoke
from tests.report_helpers import PUBLIC_LEDGER as PUBLIC
from tests.report_helpers import ingest_demo

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
GOAL = "demo-db-wal-recovery"
DEMO_ROW = ("terminal-bench@2.0", "hardened-codex", "codex-loopx", "1")


def _quickstart(url: str) -> None:
    """examples/quickstart.sh's ingests, as it types them."""
    ingest_demo(url, GOAL)


def _index(url: str, folder: Path, *args: str) -> str:
    result = invoke(url, "report", "--output", str(folder), *args)
    assert result.exit_code == 0, result.output
    return (folder / "index.html").read_text()


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _compared(index: str) -> list[tuple[str, ...]]:
    """The index's comparison table: (benchmark, baseline arm, treatment arm, tasks) per row."""
    table = re.search(r'<table class="comparisons">.*?<tbody>(.*?)</tbody>', index, re.S)
    if table is None:
        return []
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)
    return [tuple(_text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[:4]) for row in rows]


def _said(index: str) -> str:
    return _text(re.search(r'<section id="comparisons">.*?<p class="muted">(.*?)</p>', index, re.S).group(1))


def _compare_rows(url: str, *args: str) -> list[tuple[str, ...]]:
    found = json.loads(invoke(url, "compare", *args, "--format", "json").stdout)["comparisons"]
    return [(c["benchmark_id"], c["baseline_arm"], c["treatment_arm"], str(c["tasks"])) for c in found]


def test_an_archived_goals_comparison_leaves_the_index_with_the_goal(migrated_url, tmp_path):
    _quickstart(migrated_url)
    assert _compared(_index(migrated_url, tmp_path / "before")) == [DEMO_ROW]
    assert invoke(migrated_url, "goals", "archive", GOAL).exit_code == 0
    index = _index(migrated_url, tmp_path / "site")
    assert "No goal to list: the ledger's 1 goal is archived; benchledger report --include-archived lists it." in _text(index)
    assert _compared(index) == [] and "No arm pair to compare" in index
    assert _said(index).startswith("What benchledger compare prints over the 0 goal(s) this index lists (1 archived goal left out, "
                                   "as the listing leaves it out: report --include-archived shows it):"), _said(index)
    # shown, it is compared: with --include-archived, or named
    assert _compared(_index(migrated_url, tmp_path / "all", "--include-archived")) == [DEMO_ROW]
    named = _index(migrated_url, tmp_path / "named", "--goal", GOAL)
    assert _compared(named) == [DEMO_ROW] and _said(named).startswith(f"What benchledger compare --goal {GOAL} prints:")
    # compare, like runs, reads every goal unless goals are named
    assert _compare_rows(migrated_url) == [DEMO_ROW]
    assert invoke(migrated_url, "goals", "unarchive", GOAL).exit_code == 0
    assert _compared(_index(migrated_url, tmp_path / "again")) == [DEMO_ROW]


def test_the_index_compares_the_goals_it_lists_as_compare_goal_does(migrated_url, tmp_path):
    _quickstart(migrated_url)
    assert invoke(migrated_url, "import-loopx", str(PUBLIC), "--goal", "loopx-public").exit_code == 0
    everything = _compare_rows(migrated_url)
    assert DEMO_ROW in everything
    # two goals holding most of the ledger are read in one scan of it: the same comparisons as the ledger's, number for number
    both = json.loads(invoke(migrated_url, "compare", "--goal", "loopx-public", "--goal", GOAL, "--format", "json").stdout)
    assert both["comparisons"] == json.loads(invoke(migrated_url, "compare", "--format", "json").stdout)["comparisons"]
    assert invoke(migrated_url, "goals", "archive", GOAL).exit_code == 0
    index = _index(migrated_url, tmp_path / "site")
    shown = _compare_rows(migrated_url, "--goal", "loopx-public")
    assert _compared(index) == shown and DEMO_ROW not in shown and len(shown) == len(everything) - 1
    assert _said(index).startswith("What benchledger compare prints over the 1 goal(s) this index lists (1 archived goal left out, ")
    # the pass rates beside the goal are its own, from the same reading
    summary = json.loads(invoke(migrated_url, "runs", "--summary", "--goal", "loopx-public", "--format", "json").stdout)["pass_rates"]
    cells = [_text(cell) for cell in re.findall(r'<div class="rate">(.*?)</div>', index, re.S)]
    counted = [r for r in summary if r["runs"]]
    assert [re.match(r"\S+ · \S+", c).group(0) for c in cells] == [f"{r['benchmark_id']} · {r['arm']}" for r in counted]


def test_serve_drops_a_goal_archived_while_it_runs_from_the_index_comparisons(migrated_url):
    """`serve` keeps the index's comparisons while nothing is recorded: archiving is recorded, so the next visit reads again."""
    import urllib.request

    from tests.report_helpers import running_serve

    _quickstart(migrated_url)
    with running_serve(migrated_url) as (base, _):
        def index() -> str:
            with urllib.request.urlopen(base, timeout=60) as response:
                return response.read().decode()

        assert _compared(index()) == [DEMO_ROW]
        assert invoke(migrated_url, "goals", "archive", GOAL).exit_code == 0
        archived = index()
        assert _compared(archived) == [] and "1 archived goal left out" in _said(archived)
        assert invoke(migrated_url, "goals", "unarchive", GOAL).exit_code == 0
        assert _compared(index()) == [DEMO_ROW]
