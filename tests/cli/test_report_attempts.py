"""The goal page's attempts (issue 27 item 3) and what ``report --goal`` writes and audits (issue 31 item 1), on both backends.

A goal of several attempts lists them keyed by attempt, the latest first, each
with its phase, first blocker and gates (its ``attempt-lifecycle-state`` row),
its own timeline and its latest comparison's reviews; older attempts are on
``attempts-N.html``. The written report holds every page it links to, the
reviews of the comparisons a goal's first page shows only, and audits the
goals it was asked for only, saying so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from benchledger.cli.output import utc_text
from benchledger.cli.web import pages
from benchledger.ledger import api
from benchledger.ledger.read import report_attempts
from tests.helpers import invoke
from tests.report_helpers import ingest_attempts, ingest_demo

GOAL = "multi"


def _figures(html: str) -> dict:
    return json.loads(html.split('<script type="application/json" id="figures">')[1].split("</script>")[0])


def _rows(html: str, table: str) -> list[str]:
    """The first cell of each row of ``table`` (its class), as text."""
    body = html.split(f'<table class="{table}">', 1)[1].split("</table>", 1)[0]
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<tr[^>]*>\s*<td>(.*?)</td>", body, re.S)]


def test_each_attempt_has_its_row_its_timeline_and_its_reviews(migrated_url, tmp_path, monkeypatch):
    ingest_attempts(migrated_url, GOAL, tmp_path / "files", 3)
    monkeypatch.setattr(report_attempts, "ATTEMPTS_PAGE_SIZE", 2)
    with api.open(migrated_url) as ledger:
        site = pages.Site(ledger, None, lambda: None)
        first = site.render(f"goals/{GOAL}/index.html").body.decode()
        older = site.render(f"goals/{GOAL}/attempts-2.html").body.decode()
        assert site.render(f"goals/{GOAL}/attempts-3.html") is None
        views = ledger.report_views()
        batches = {b["attempt"]: b for b in views.batches(GOAL, limit=10)["rows"]}
        review = site.render(f"goals/{GOAL}/attempts/{batches['2']['key']}/review-claim.html").body.decode()
    assert 'in attempt <strong class="attempt">2</strong>' in review
    # keyed by attempt, the latest first, paged; each row from its own lifecycle row
    assert _rows(first, "attempts") == ["3", "2"] and _rows(older, "attempts") == ["1"]
    assert "budget_counted" in first and 'href="attempts-2.html"' in first and 'href="index.html"' in older
    # one timeline per attempt on its page: the attempt's six changes, from its own preflight on
    figures = _figures(first)
    assert {name for name in figures if name.startswith("timeline")} == {"timeline-3", "timeline-2"}
    for attempt in ("3", "2"):
        assert figures[f"timeline-{attempt}"]["data"][0]["y"] == [
            "preflight_ready", "launched_process", "compact_result_ready", "result_ingested", "paired_compared", "budget_counted",
        ]
    assert set(_figures(older)) == {"timeline-1"}  # a later page: its attempts' timelines only
    # the comparisons table names each comparison's attempt; an attempt links its own comparison's reviews
    assert sorted(batches) == ["1", "2", "3"]
    for attempt, batch in batches.items():
        page = first if attempt != "1" else older
        row = page.split(f'id="attempt-row-{attempt}"', 1)[1].split("</tr>", 1)[0]
        assert f'href="attempts/{batch["key"]}/review-claim.html"' in row
        assert batch["comparison_id"] == f"pair-{attempt}"
    assert _rows(first, "batches") == [utc_text(b["recorded_at"]) for b in sorted(batches.values(), key=lambda b: b["position"], reverse=True)]


def test_a_single_attempt_goal_reads_as_before(migrated_url):
    ingest_demo(migrated_url, "demo")
    with api.open(migrated_url) as ledger:
        page = pages.Site(ledger, None, lambda: None).render("goals/demo/index.html").body.decode()
        (attempt,) = ledger.report_views().attempts("demo", limit=10)["rows"]
        (goal_wide,) = [ledger.report_views().lifecycle_timeline("demo")]
    # the attempt's timeline is the goal's whole timeline, as the goal page drew it before attempts
    assert attempt["timeline"]["steps"] == goal_wide["steps"] and attempt["timeline"]["changes"] == goal_wide["changes"] == 6
    assert _rows(page, "attempts") == ["1"] and "pagination" not in page and 'rel="next"' not in page


def _links(page: Path) -> list[str]:
    return [unquote(link) for link in re.findall(r'(?:href|src)="([^"#]+)', page.read_text())]


def test_every_link_of_a_written_report_has_its_file(migrated_url, tmp_path, monkeypatch):
    """A crawl of the written folder: every relative link of every page names a file the report wrote."""
    from benchledger.ledger.read import report_views

    ingest_attempts(migrated_url, GOAL, tmp_path / "files", 4)
    ingest_demo(migrated_url, "demo")
    monkeypatch.setattr(report_attempts, "ATTEMPTS_PAGE_SIZE", 2)
    monkeypatch.setattr(report_views, "BATCHES_PAGE_SIZE", 1)  # a comparison a page: its later pages link no review
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    checked = 0
    for page in site.rglob("*.html"):
        for link in _links(page):
            if link.startswith("data:"):  # (an inline icon: no file)
                continue
            assert not link.startswith(("http:", "https:", "/")), f"{page}: {link}"
            assert (page.parent / link).resolve().is_file(), f"{page.relative_to(site)} links {link}, which the report did not write"
            checked += 1
    assert checked > 50
    # the reviews written: those of the comparisons the goal's first page shows (its two latest attempts', its first
    # comparison row's, which is the latest attempt's); the later pages name the others and point to serve
    reviews = {p.parent.name for p in (site / "goals" / GOAL / "attempts").rglob("review-claim.html")}
    assert len(reviews) == 2
    later = (site / "goals" / GOAL / "batches-4.html").read_text()
    assert "attempt-review-link" not in later and "benchledger serve" in later


@pytest.mark.parametrize("named", [True, False], ids=["--goal", "every goal"])
def test_report_audits_the_goals_it_shows_and_says_so(migrated_url, tmp_path, named, monkeypatch):
    """``report --goal G`` audits G only (it costs what G holds), and the index says whose audit it shows."""
    from benchledger.cli.web import audit_child

    ingest_demo(migrated_url, "shown")
    ingest_demo(migrated_url, "other")
    audited: list[str | None] = []

    class Recorded(audit_child.AuditChild):  # the audit runs in a child process: the goal it is started for is recorded
        def __init__(self, url, goal=None, **options):
            audited.append(goal)
            super().__init__(url, goal, **options)

    monkeypatch.setattr(audit_child, "AuditChild", Recorded)
    site = tmp_path / "site"
    options = ["--goal", "shown"] if named else []
    assert invoke(migrated_url, "report", *options, "--output", str(site)).exit_code == 0
    index, seen = (site / "index.html").read_text(), list(audited)
    with api.open(migrated_url) as ledger:
        goal_digest, ledger_digest = ledger.audit(goal_id="shown").digest, ledger.audit().digest
    if named:
        assert seen == ["shown"]
        assert "audit of goal(s)" in index and "not the whole ledger" in index and "benchledger audit" in index
        assert goal_digest in index and ledger_digest not in index
    else:
        assert seen == [None]
        assert "not the whole ledger" not in index and ledger_digest in index


def test_each_attempts_timeline_reads_the_steps_and_a_fold_says_the_same(migrated_url, tmp_path):
    """Without stored steps (a ledger from before them, until ``replay``) each attempt's timeline is folded: the same one."""
    from sqlalchemy import delete

    from benchledger.ledger.storage.schema import projection_rows
    from benchledger.ledger.storage.store import Store
    from benchledger.projections import catalog

    ingest_attempts(migrated_url, GOAL, tmp_path / "files", 3)
    store = Store.open(migrated_url)
    try:
        stored = report_attempts.lifecycle_attempts(store, GOAL)
        assert [a["attempt"] for a in stored["rows"]] == ["3", "2", "1"]
        assert [a["timeline"]["changes"] for a in stored["rows"]] == [6, 6, 6]
        # the first step of a later attempt reads from nothing open, as the goal's first does: the same timelines
        assert len({json.dumps(a["timeline"]["steps"][0]["gates_opened"]) for a in stored["rows"]}) == 1
        with store.engine.begin() as connection:
            connection.execute(delete(projection_rows).where(projection_rows.c.projection == catalog.STEP))
        assert report_attempts.lifecycle_attempts(store, GOAL) == stored
    finally:
        store.close()
