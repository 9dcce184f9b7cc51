"""The report's charts and review pages in Chromium with real data (issue 28 item 9), and ``serve``'s redirect and 404 (item 10).

Real label lengths: the public LoopX run ledger (tests/data/loopx-public) imported
as LoopX history and as runs (57 failure attribution labels up to 77
characters long, over 17 modes), and conformance inputs kept through the review commands. What the
issue saw was measured here on the drawn SVG: labels cut off at the chart's left
edge, a legend over the bars, axes from -1 to 6 around no data, a one-event
timeline ticked in fractions of a millisecond. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.test_report_browser import ARTIFACTS, browser_type_launch_args  # noqa: F401 (the fixture launches Debian's Chromium)
from tests.conformance.cases import CORPUS
from tests.helpers import invoke
from tests.report_helpers import PUBLIC_LEDGER, pages_of, public_runs

RUNNER_CASE = CORPUS / "cases" / "review-runner-invariants" / "runner-invariants-01"
LIFECYCLE_CASE = CORPUS / "cases" / "lifecycle-state" / "core-adapter-01"


def _keep_review(url: str, case: Path, goal: str) -> None:
    """The case's review command as a user types it, with ``--goal`` to keep the review."""
    spec = json.loads((case / "case.json").read_text())
    args = [str(case / arg) if (case / arg).is_file() else arg for arg in spec["args"]]
    result = invoke(url, "benchmark", spec["command"], *args, "--goal", goal)
    assert result.exit_code == spec["expected_exit"], result.output


@pytest.fixture(scope="module")
def real_ledger(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report-real-data")
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    assert invoke(url, "import-loopx", str(PUBLIC_LEDGER), "--goal", "loopx-history").exit_code == 0
    runs = public_runs(folder / "runs")
    assert invoke(url, "ingest", "--goal", "public-runs", *map(str, runs)).exit_code == 0
    _keep_review(url, RUNNER_CASE, "conformance")
    _keep_review(url, LIFECYCLE_CASE, "conformance")
    return url, folder


@pytest.fixture(scope="module", params=["report", "serve"])
def site(request, real_ledger):
    url, folder = real_ledger
    with pages_of(request.param, url, folder) as base:
        yield request.param, base


@pytest.fixture
def errors() -> list[str]:
    """The page's script errors and console errors (a test that asks for a 404 removes the one it caused)."""
    return []


@pytest.fixture
def page(page, errors):
    page.set_viewport_size({"width": 1400, "height": 900})
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    assert errors == []


def _public_labels_and_modes() -> tuple[set[str], set[str]]:
    """The failure labels of the public runs, and the modes of the runs that name one (as ``public_runs`` writes them)."""
    ledger = json.loads(PUBLIC_LEDGER.read_text())
    rows = [r for b in ledger["benchmarks"].values() for c in b["cases"].values() for r in c["runs"] if r.get("failure_labels")]
    return {label for r in rows for label in r["failure_labels"]}, {r.get("mode") or r.get("arm_id") for r in rows}


def _box(locator):
    box = locator.bounding_box()
    assert box is not None
    return box


def test_long_labels_fit_and_the_legend_is_under_the_bars(page, site):
    kind, base = site
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(base + "goals/public-runs/index.html")
    page.wait_for_selector("body[data-charts-rendered]", timeout=30_000)
    chart = page.locator("#chart-attribution-labels")
    left = _box(chart)["x"]
    labels = chart.locator(".ytick text")
    known_labels, modes = _public_labels_and_modes()
    assert labels.count() == len(known_labels) > 50
    for n in range(labels.count()):
        assert _box(labels.nth(n))["x"] >= left, f"label {labels.nth(n).inner_text()!r} is cut off at the chart's edge"
    plot = _box(chart.locator(".nsewdrag").first)
    legend = _box(chart.locator(".legend"))
    assert legend["y"] >= plot["y"] + plot["height"], "the legend covers the bars"
    assert legend["y"] + legend["height"] <= _box(chart)["y"] + _box(chart)["height"] + 1, "the legend runs out of the chart"
    assert chart.locator(".legend .traces").count() == len(modes) > 10
    # one colour per mode (Plotly's default ten repeated from the eleventh)
    fills = {chart.locator(".legend .traces").nth(n).locator(".legendpoints path").first.get_attribute("style") for n in range(len(modes))}
    assert len(fills) == len(modes)
    # the runs have no comparison: those charts say so instead of drawing axes from -1 to 6
    for empty in ("score-delta", "claim-strengths", "learning-status"):
        assert "no data" in page.locator(f"#chart-{empty}").inner_text()
        assert page.locator(f"#chart-{empty} .xtick").count() == 0
    chart.screenshot(path=str(ARTIFACTS / f"{kind}-real-attribution.png"))
    page.locator("#charts").screenshot(path=str(ARTIFACTS / f"{kind}-real-charts.png"))
    # on a narrow page the legend's long mode names take a row each rather than overlap
    page.set_viewport_size({"width": 760, "height": 900})
    page.reload()
    page.wait_for_selector("body[data-charts-rendered]", timeout=30_000)
    entries = [_box(chart.locator(".legend .traces").nth(n)) for n in range(len(modes))]
    overlapping = [(a, b) for i, a in enumerate(entries) for b in entries[i + 1:]
                   if a["x"] < b["x"] + b["width"] - 1 and b["x"] < a["x"] + a["width"] - 1
                   and a["y"] < b["y"] + b["height"] - 1 and b["y"] < a["y"] + a["height"] - 1]
    assert overlapping == []
    chart.screenshot(path=str(ARTIFACTS / f"{kind}-real-attribution-narrow.png"))


def test_a_one_change_timeline_is_ticked_in_readable_times(page, site):
    kind, base = site
    page.goto(base + "goals/loopx-history/index.html")
    page.wait_for_selector("body[data-charts-rendered]", timeout=30_000)
    assert page.locator("#chart-timeline-1 .scatterlayer .point").count() == 1
    ticks = page.locator("#chart-timeline-1 .xtick text").all_text_contents()
    assert len(ticks) >= 3
    assert not [t for t in ticks if re.search(r"\d:\d\d\.\d", t)], f"ticks in fractions of a second: {ticks}"
    page.locator("#attempt-1").screenshot(path=str(ARTIFACTS / f"{kind}-real-one-change-timeline.png"))


def test_review_pages_keep_loopx_order_and_colour_booleans_by_meaning(page, site):
    kind, base = site
    page.goto(base + "goals/conformance/reviews/review-runner-invariants.html")
    printed = json.loads((RUNNER_CASE / "expected.json").read_text())
    assert page.locator(".review > dl.tree > dt").all_inner_texts() == list(printed)
    boundary = page.locator(".review > dl.tree > dt:text-is('read_boundary') + dd")
    assert boundary.locator("dt:text-is('raw_artifacts_read') + dd .boolean").get_attribute("class") == "boolean yes"
    assert boundary.locator("dt:text-is('compact_only') + dd .boolean").get_attribute("class") == "boolean yes"
    page.screenshot(path=str(ARTIFACTS / f"{kind}-real-runner-invariants.png"), full_page=True)
    page.goto(base + "goals/conformance/reviews/lifecycle-state.html")
    gates = page.locator(".review > dl.tree > dt:text-is('gates') + dd")
    claimed = gates.locator(".boolean").all()
    assert claimed and all(b.get_attribute("class") in ("boolean yes", "boolean no") for b in claimed)
    page.screenshot(path=str(ARTIFACTS / f"{kind}-real-lifecycle-state.png"), full_page=True)


def test_serve_follows_a_goal_without_its_slash_and_its_404_leads_home(page, site, errors):
    kind, base = site
    if kind != "serve":
        pytest.skip("a folder on disk has neither redirects nor a 404 page: only serve answers these")
    page.goto(base + "goals/public-runs")
    assert page.url == base + "goals/public-runs/"
    page.wait_for_selector("body[data-charts-rendered]", timeout=30_000)
    response = page.goto(base + "goals/no-such-goal/")
    assert response is not None and response.status == 404
    assert errors == ["Failed to load resource: the server responded with a status of 404 (Not Found)"]
    errors.clear()
    assert page.locator("h1").inner_text() == "Not found"
    page.screenshot(path=str(ARTIFACTS / "serve-404.png"), full_page=True)
    page.click("a.home-link")
    assert page.url == base + "index.html" and page.locator("table.goals a.goal-link").count() == 3
