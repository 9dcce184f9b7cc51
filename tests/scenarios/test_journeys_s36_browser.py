"""The second walk (session 36) in a real browser: Debian's Chromium driven by Playwright, on ``serve`` and ``report``.

The demo goal has one arm with a failure label and one learning status: the
charts "per arm" and "Learning status over time" drew their bars and area with
no legend (Plotly hides a lone trace's), so the page never said which arm had
the label, nor which status was counted. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import invoke
from tests.report_helpers import DEMO, pages_of

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = os.environ.get("BENCHLEDGER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
GOAL = "demo-db-wal-recovery"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM}: apt-get install chromium (or set BENCHLEDGER_CHROMIUM)"
    return {**browser_type_launch_args, "executable_path": CHROMIUM}


@pytest.fixture(scope="module", params=["report", "serve"])
def site(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("walk-browser")
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    runs = [str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
    assert invoke(url, "ingest", "--goal", GOAL, *runs).exit_code == 0
    with pages_of(request.param, url, folder) as base:
        yield request.param, base, url


def test_a_chart_per_arm_names_its_one_arm_and_its_one_status(page, site):
    kind, base, url = site
    compared = json.loads(invoke(url, "compare", "--format", "json").stdout)["comparisons"]
    failed = [c["baseline_arm"] for c in compared]  # (the demo's baseline failed, with the one failure label)
    assert failed == ["hardened-codex"]
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{base}goals/{GOAL}/index.html")
    page.wait_for_selector("body[data-charts-rendered]", timeout=30_000)
    page.wait_for_selector("#chart-attribution-labels .main-svg", timeout=30_000)
    legend = page.locator("#chart-attribution-labels .legend .legendtext")
    assert legend.all_text_contents() == failed
    statuses = page.locator("#chart-learning-status .legend .legendtext").all_text_contents()
    assert statuses == ["generic_loopx_repair_or_attribution_required"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#chart-attribution-labels").screenshot(path=str(ARTIFACTS / f"walk-{kind}-attribution-labels.png"))


def test_an_axis_of_counts_reads_whole_numbers(page, site):
    """One run, one comparison, one learning ledger: their axes read 0.2, 0.4 … 1 (a fifth of a run)."""
    kind, base, _ = site
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{base}goals/{GOAL}/index.html")
    for chart, axis in (("attribution-labels", "xtick"), ("claim-strengths", "xtick"), ("learning-status", "ytick")):
        page.wait_for_selector(f"#chart-{chart} .main-svg", timeout=30_000)
        ticks = page.locator(f"#chart-{chart} .{axis} text").all_text_contents()
        assert ticks == ["0", "1"], (chart, ticks)
    page.locator("#chart-learning-status").screenshot(path=str(ARTIFACTS / f"walk-{kind}-learning-status.png"))


def test_the_goals_index_fits_the_page_pass_rates_and_last_activity_in_view(page, site):
    """Unwrapped snake_case verdicts and headers pushed the pass rates, events and last activity past a 1280-pixel page."""
    kind, base, _ = site
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{base}index.html")
    table = page.locator("table.goals")
    frame = page.evaluate("() => innerWidth")
    right = table.evaluate("t => t.getBoundingClientRect().right")
    assert right <= frame, f"the goals table ends at {right}px on a {frame}px page"
    last = page.locator("table.goals tbody tr").first.locator("td").last
    assert last.evaluate("c => c.getBoundingClientRect().right") <= frame and last.inner_text().endswith("Z")
    page.screenshot(path=str(ARTIFACTS / f"walk-{kind}-index-1280.png"), full_page=True)
