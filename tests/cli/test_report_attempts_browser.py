"""A goal of several attempts in a real browser (Chromium via Playwright), written and served (issue 27 item 3).

The goal page lists its attempts keyed by attempt, the latest first, a page of
them at a time, each drawn as its own timeline; an attempt's row links its
comparison's claim review. Older attempts are one click away. The written
report links the reviews of the comparisons its first page shows; ``serve``
links every one. Screenshots go to ``test-artifacts/`` (which git ignores).
"""

from __future__ import annotations

import pytest

from benchledger.ledger.read.report_attempts import ATTEMPTS_PAGE_SIZE
from tests.cli import test_report_browser as browser
from tests.report_helpers import ingest_attempts, pages_of

browser_type_launch_args = browser.browser_type_launch_args
watched = browser.watched
ARTIFACTS = browser.ARTIFACTS
GOAL = "team-week"
ATTEMPTS = ATTEMPTS_PAGE_SIZE + 2  # one page and two attempts on the next
# Each attempt of the demo case changes phase six times: preflight, launch, post-launch, run, comparison, its batch's reviews.
CHANGES = 6
# The first page's charts besides the timelines: score delta, claim strengths, learning status, attribution labels, paired differences.
OTHER_CHARTS = 5


@pytest.fixture(scope="module", params=["report", "serve"])
def site(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("report-attempts-browser")
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    ingest_attempts(url, GOAL, folder / "files", ATTEMPTS)
    with pages_of(request.param, url, folder) as base:
        yield request.param, base


def test_attempts_their_timelines_and_reviews_latest_first(watched):
    page, kind, base, seen = watched
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(base + f"goals/{GOAL}/index.html")
    page.wait_for_selector(f"body[data-charts-rendered='{ATTEMPTS_PAGE_SIZE + OTHER_CHARTS}']", timeout=60_000)
    rows = page.locator("table.attempts tbody tr")
    shown = [str(n) for n in range(ATTEMPTS, ATTEMPTS - ATTEMPTS_PAGE_SIZE, -1)]
    assert [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())] == shown
    assert f"{ATTEMPTS} attempt(s)" in page.locator("#attempts").inner_text()
    for attempt in shown:
        chart = page.locator(f"#chart-timeline-{attempt}")
        assert chart.locator(".scatterlayer .point").count() == CHANGES, attempt
        assert "budget_counted" in chart.inner_text() and "preflight_ready" in chart.inner_text()
    first = rows.first
    assert "budget_counted" in first.inner_text() and "budget_count_allowed" in first.locator("td").nth(4).locator(".gate.yes").all_inner_texts()
    # the comparisons table names each comparison's attempt
    assert page.locator("table.batches tbody tr").first.locator("td").nth(1).inner_text() == str(ATTEMPTS)
    page.screenshot(path=str(ARTIFACTS / f"{kind}-attempts-goal.png"), full_page=True)
    page.locator("table.attempts").screenshot(path=str(ARTIFACTS / f"{kind}-attempts-table.png"))
    page.locator(f"#attempt-{ATTEMPTS}").screenshot(path=str(ARTIFACTS / f"{kind}-attempt-timeline.png"))

    # an attempt's row links its own comparison's claim review
    first.locator("a.attempt-review-link >> text=claim").click()
    assert page.locator("h1").inner_text() == "review-claim"
    assert f"pair-{ATTEMPTS}" in page.locator(".review").inner_text()
    page.go_back()

    # the older attempts, one click away: their own timelines only
    page.click("#attempts nav.pager a[rel=next]")
    page.wait_for_selector("body[data-charts-rendered='2']", timeout=60_000)
    assert page.url.endswith("attempts-2.html")
    rows = page.locator("table.attempts tbody tr")
    assert [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())] == ["2", "1"]
    assert page.locator("#chart-timeline-1 .scatterlayer .point").count() == CHANGES
    links = rows.first.locator("a.attempt-review-link")
    if kind == "serve":  # serve renders any comparison's reviews; the written report those of its first page
        assert links.count() == 3
        links.first.click()
        assert "pair-2" in page.locator(".review").inner_text()
    else:
        assert links.count() == 0 and "benchledger serve" in page.locator("#attempts").inner_text()
    page.screenshot(path=str(ARTIFACTS / f"{kind}-attempts-older.png"), full_page=True)
    browser._no_trouble(seen, base)
