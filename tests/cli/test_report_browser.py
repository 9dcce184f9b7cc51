"""The report in a real browser: Debian's Chromium driven by Playwright, on the written site and on ``serve``.

The same checks run against ``benchledger report``'s folder (``file://``) and
``benchledger serve`` on a free loopback port: navigation index -> goal ->
review, the charts drawn, no console error, no request outside the site's
folder or origin, artifact markup shown as text, and screenshots of the index
and a goal page (in ``test-artifacts/``, which git ignores).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.report_helpers import HOSTILE_TEXTS, IMAGE, SCRIPT, ingest_demo, ingest_hostile, pages_of

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = os.environ.get("BENCHLEDGER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Playwright's own browser download is unreachable here: launch the system's Chromium (.ci/run installs it)."""
    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM}: apt-get install chromium (or set BENCHLEDGER_CHROMIUM)"
    return {**browser_type_launch_args, "executable_path": CHROMIUM}


@pytest.fixture(scope="module")
def ledger_with_goals(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report-browser")
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    ingest_demo(url, "demo-db-wal-recovery")
    ingest_hostile(url, "hostile", folder / "hostile")
    return url, folder


@pytest.fixture(scope="module", params=["report", "serve"])
def site(request, ledger_with_goals):
    """The base URL of the pages: a written report folder, or a running ``benchledger serve``."""
    url, folder = ledger_with_goals
    with pages_of(request.param, url, folder) as base:
        yield request.param, base


@pytest.fixture
def watched(page, site):
    """The page, with every console message, page error, dialog and request recorded."""
    kind, base = site
    seen = {"console": [], "errors": [], "dialogs": [], "requests": []}
    page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.on("response", lambda r: seen["console"].append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    page.set_viewport_size({"width": 1400, "height": 900})
    return page, kind, base, seen


def _no_trouble(seen, base):
    assert seen["errors"] == [] and seen["console"] == [], seen
    assert seen["dialogs"] == [], "an artifact string ran as script"
    outside = [u for u in seen["requests"] if not u.startswith(base)]
    assert outside == [], f"requests left the site: {outside}"


def test_index_goal_review_navigation_charts_and_no_network(watched):
    page, kind, base, seen = watched
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(base + "index.html")
    assert page.locator("table.goals a.goal-link", has_text="demo-db-wal-recovery").count() == 1
    page.wait_for_selector("#audit .yes", timeout=20_000) if kind == "report" else _wait_for_audit(page, base)
    # the report shows the history-only audit and says what it left; serve runs the full one
    audit = " ".join(page.locator("#audit").inner_text().split())
    assert ("projections were not refolded: run benchledger audit (or report --full-audit) for that" in audit) is (kind == "report")
    assert ("projections checked" in audit) is (kind != "report")
    page.screenshot(path=str(ARTIFACTS / f"{kind}-index.png"), full_page=True)

    page.click("a.goal-link >> text=demo-db-wal-recovery")
    page.wait_for_selector("body[data-charts-rendered='6']", timeout=30_000)
    assert page.locator("h1 .goal-id").inner_text() == "demo-db-wal-recovery"
    for chart in ("timeline-1", "score-delta", "claim-strengths", "attribution-labels", "learning-status"):
        assert page.locator(f"#chart-{chart} .main-svg").count() > 0, f"{chart} chart not drawn"
    # the timeline holds one marker per lifecycle change (6 in the demo) and names the phases it went through
    # one attempt: its timeline is the goal's, as before attempts
    assert page.locator("#chart-timeline-1 .scatterlayer .point").count() == 6
    assert "budget_counted" in page.locator("#chart-timeline-1").inner_text()
    assert page.locator("table.attempts tbody tr").count() == page.locator("table.batches tbody tr").count() == 1
    page.screenshot(path=str(ARTIFACTS / f"{kind}-goal.png"), full_page=True)

    page.click("a.review-link >> text=review-claim")
    assert page.locator("h1").inner_text() == "review-claim"
    assert "candidate_score_recovery_needs_attribution_review" in page.locator(".review").inner_text()
    page.click("text=JSON")
    assert '"projection": "review-claim"' in page.content()
    _no_trouble(seen, base)


def _wait_for_audit(page, base):
    """``serve`` audits in the background: reload until the index shows the result."""
    for _ in range(40):
        if page.locator("#audit .yes").count():
            return
        page.wait_for_timeout(250)
        page.goto(base + "index.html")
    raise AssertionError("serve's index never showed the audit result")


def test_artifact_markup_is_shown_as_text(watched):
    page, kind, base, seen = watched
    page.goto(base + "goals/hostile/index.html")
    page.wait_for_selector("body[data-charts-rendered='6']", timeout=30_000)
    # no element was made from the artifacts' markup ...
    assert page.locator("main script").count() == 1  # the page's own JSON data block
    assert page.locator("img").count() == 0
    # ... and their text reads exactly as the artifacts hold it, in the tables and in the charts
    attempts = page.locator("table.batches").inner_text()
    assert SCRIPT in attempts and f"{IMAGE}-baseline" in attempts
    assert f"{IMAGE}-treatment" in page.locator("dl.facts").inner_text()
    labels = page.locator("#chart-attribution-labels").inner_text()
    assert all(text in labels for text in HOSTILE_TEXTS)
    page.screenshot(path=str(ARTIFACTS / f"{kind}-hostile-goal.png"), full_page=True)
    _no_trouble(seen, base)
