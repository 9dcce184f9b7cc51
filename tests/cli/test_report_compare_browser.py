"""The report's comparisons and attempt reviews in a real browser (Chromium via Playwright), written and served.

The index's comparison table and its chart of paired differences (one marker a
row, its interval as error bars), the goal page's own, and an attempt row's
link to that attempt's review; no console error, no request outside the site.
Screenshots go to ``test-artifacts/`` (which git ignores).
"""

from __future__ import annotations

import pytest

from tests.cli import test_report_browser as browser
from tests.cli.test_report_compare import build_compared_ledger
from tests.report_helpers import IMAGE, SCRIPT, ingest_hostile, pages_of

# The browser tests' fixtures: the system's Chromium, and a page whose console, errors and requests are recorded.
browser_type_launch_args = browser.browser_type_launch_args
watched = browser.watched
ARTIFACTS = browser.ARTIFACTS


@pytest.fixture(scope="module", params=["report", "serve"])
def site(request, tmp_path_factory):
    """A written report folder, or a running ``serve``, of the compared ledger plus a goal with markup in its arms and task."""
    folder = tmp_path_factory.mktemp("report-compare-browser")
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    build_compared_ledger(url, folder)
    ingest_hostile(url, "hostile", folder / "hostile")
    with pages_of(request.param, url, folder) as base:
        yield request.param, base


def test_comparisons_their_chart_and_an_attempts_own_review(watched):
    page, kind, base, seen = watched
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(base + "index.html")
    page.wait_for_selector("body[data-charts-rendered='1']", timeout=30_000)
    rows = page.locator("table.comparisons tbody tr")
    assert rows.count() == 3  # SkillsBench, Terminal-Bench, and the hostile goal's arms on Terminal-Bench
    table = page.locator("table.comparisons").inner_text()
    assert "treatment better" in table and "no detectable difference" in table
    chart = page.locator("#chart-paired-differences")
    assert chart.locator(".scatterlayer .point").count() == 3
    assert chart.locator(".errorbar").count() == 3
    assert all(line in chart.inner_text() for line in ("terminal-bench@2.0", "codex-loopx-treatment", "vs codex-goal-mode-baseline"))
    page.screenshot(path=str(ARTIFACTS / f"{kind}-compare-index.png"), full_page=True)

    page.click("a.goal-link >> text=tb")
    page.wait_for_selector("body[data-charts-rendered='6']", timeout=30_000)
    assert page.locator("#comparisons table.comparisons tbody tr").count() == 1
    assert page.locator("#chart-paired-differences .scatterlayer .point").count() == 1
    first = page.locator("table.batches tbody tr").first
    task = first.locator("td").nth(2).inner_text()
    page.screenshot(path=str(ARTIFACTS / f"{kind}-compare-goal.png"), full_page=True)
    first.locator("a.attempt-review-link >> text=claim").click()
    assert page.locator("h1").inner_text() == "review-claim"
    assert task in page.locator(".review").inner_text()
    page.screenshot(path=str(ARTIFACTS / f"{kind}-attempt-review.png"), full_page=True)
    browser._no_trouble(seen, base)


def test_markup_in_arms_and_tasks_is_text_in_the_comparison_table_and_chart(watched):
    page, kind, base, seen = watched
    page.goto(base + "goals/hostile/index.html")
    page.wait_for_selector("body[data-charts-rendered='6']", timeout=30_000)
    assert page.locator("img").count() == 0 and page.locator("main script").count() == 1
    assert "<img src=x onerror=alert(1)>-treatment" in page.locator("table.comparisons").inner_text()
    assert f"{IMAGE}-treatment" in page.locator("#chart-paired-differences").inner_text()
    assert SCRIPT in page.locator("table.batches").inner_text()
    browser._no_trouble(seen, base)
