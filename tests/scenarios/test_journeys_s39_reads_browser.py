"""The read side walked in Chromium (session 39): the report's pages as a user opens them.

`benchledger report --output site/`, then site/index.html in a browser: Plotly said, six times a page,
``WARN: Invalid color specifier: Array(3). Defaulting to "#000"`` (a ``console.trace``, which the browser tests'
watch of errors and warnings did not see), and drew every interval of the paired-differences chart in black: its error
bars took the markers' colours, one a verdict, and an error bar has one colour only.
"""

from __future__ import annotations

import pytest

from tests.cli import test_report_browser as browser
from tests.helpers import invoke
from tests.report_helpers import PUBLIC_LEDGER, ingest_demo

browser_type_launch_args = browser.browser_type_launch_args


@pytest.fixture(scope="module")
def report_of_two_comparisons(tmp_path_factory):
    """A written report of the quickstart's goal and the public LoopX ledger: three rows of the chart, two intervals wide."""
    folder = tmp_path_factory.mktemp("s39-reads-browser")
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    ingest_demo(url, "demo-db-wal-recovery")
    assert invoke(url, "import-loopx", str(PUBLIC_LEDGER), "--goal", "loopx-public").exit_code == 0
    assert invoke(url, "report", "--output", str(folder / "site")).exit_code == 0
    return (folder / "site").as_uri() + "/"


def test_the_paired_differences_chart_draws_its_intervals_without_a_colour_warning(page, report_of_two_comparisons):
    said = []
    page.on("console", lambda message: said.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: said.append(f"pageerror: {error}"))
    for goal_page in ("index.html", "goals/loopx-public/index.html"):
        page.goto(report_of_two_comparisons + goal_page)
        page.wait_for_selector("#chart-paired-differences .errorbar path", timeout=30_000)
        strokes = page.eval_on_selector_all(
            "#chart-paired-differences .errorbar path", "paths => paths.map(p => getComputedStyle(p).stroke)"
        )
        assert strokes and set(strokes) == {"rgb(68, 68, 68)"}, strokes
    assert not [line for line in said if "color" in line.lower()], said
