"""The report's and ``serve``'s attempts pages read by key: the same pages the OFFSET reads gave, the overview read once, progress on a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

import pytest
from sqlalchemy import select, update

from benchledger.cli.output import utc_text
from benchledger.cli.web import pages
from benchledger.ledger import api
from benchledger.ledger.read import report_views
from benchledger.ledger.storage.schema import projection_rows
from benchledger.ledger.storage.store import Store
from benchledger.projections import catalog
from tests.helpers import invoke
from tests.report_helpers import DEMO

GOAL = "paged"
ATTEMPTS = 7


def _ingest_attempts(url, folder, count=ATTEMPTS):
    """``count`` attempts (a baseline run, a treatment run, a comparison each), one ``ingest`` each, as a user types them."""
    comparison = json.loads((DEMO / "06-comparison.json").read_text())
    for number in range(count):
        again = folder / f"comparison-{number}.json"
        again.write_text(json.dumps({**comparison, "comparison_id": f"pair-{number}"}))
        files = [str(DEMO / f) for f in ("04-run-baseline.json", "05-run-treatment.json")] + [str(again)]
        assert invoke(url, "ingest", "--goal", GOAL, *files).exit_code == 0


def _offset_page(store, size, number):
    """Page ``number`` as the OFFSET reads cut it (the order and OFFSET the pages had before keyset paging), whole rows."""
    claim = projection_rows
    with store.reading() as connection:
        keys = connection.execute(
            select(claim.c.key).where(claim.c.projection == catalog.CLAIM, claim.c.goal_id == GOAL)
            .order_by(claim.c.position.desc(), claim.c.key).limit(size).offset((number - 1) * size)
        ).scalars().all()
    everything = {a["key"]: a for a in report_views.batches(store, GOAL, limit=10**6)["rows"]}
    return [everything[key] for key in keys]


@pytest.mark.parametrize("shared_positions", [False, True], ids=["distinct", "shared"])
def test_keyset_pages_are_the_offset_pages(migrated_url, tmp_path, shared_positions):
    _ingest_attempts(migrated_url, tmp_path)
    store = Store.open(migrated_url)
    try:
        if shared_positions:
            # Attempts that share a position (rows rewritten by one later event) are ordered by key within it:
            # the pages must split such a run of rows exactly where the OFFSET pages did.
            with store.engine.begin() as connection:
                keys = sorted(report_views.batches(store, GOAL, limit=100)["rows"], key=lambda a: a["key"])
                connection.execute(
                    update(projection_rows)
                    .where(projection_rows.c.projection == catalog.CLAIM, projection_rows.c.key.in_([a["key"] for a in keys[1:5]]))
                    .values(position=10**6)
                )
        for size in (1, 2, 3, ATTEMPTS, ATTEMPTS + 1):
            count = -(-ATTEMPTS // size)
            start, following = None, []
            for number in range(1, count + 1):
                expected = _offset_page(store, size, number)
                page = report_views.batches(store, GOAL, limit=size, start=start)
                assert page["rows"] == expected and expected, (size, number)
                # serve's way to page N: its start found on the index alone
                found = report_views.batches_page_start(store, GOAL, offset=(number - 1) * size)
                assert found == (expected[0]["position"], expected[0]["key"])
                assert report_views.batches(store, GOAL, limit=size, start=found)["rows"] == expected
                following.append(page["next"])
                start = page["next"]
            assert following[-1] is None and all(following[:-1])
            assert report_views.batches_page_start(store, GOAL, offset=ATTEMPTS) is None
    finally:
        store.close()


def _attempt_ids(html: str) -> list[str]:
    """The attempts a page lists, by the time each was recorded (its first cell)."""
    return re.findall(r"<tr>\s*<td>([^<]+)</td>", html.split('id="batches"', 1)[1])


def _recorded(url, *, as_shown: bool = True) -> list[str]:
    """When the goal's batches were recorded, the latest first: as a page shows them (to the second, UTC), or as stored."""
    store = Store.open(url)
    try:
        recorded = [a["recorded_at"] for a in report_views.batches(store, GOAL, limit=100)["rows"]]
        return [utc_text(r) for r in recorded] if as_shown else recorded
    finally:
        store.close()


def test_written_pages_are_the_pages_serve_answers(migrated_url, tmp_path, monkeypatch):
    _ingest_attempts(migrated_url, tmp_path)
    monkeypatch.setattr(report_views, "BATCHES_PAGE_SIZE", 2)
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    written = {p.name: _attempt_ids(p.read_text()) for p in (site / "goals" / GOAL).glob("*.html")}
    assert sorted(written) == ["batches-2.html", "batches-3.html", "batches-4.html", "index.html"]
    assert [i for name in ("index.html", "batches-2.html", "batches-3.html", "batches-4.html") for i in written[name]] == _recorded(migrated_url)
    assert len(set(_recorded(migrated_url, as_shown=False))) == ATTEMPTS
    ledger = api.open(migrated_url)
    try:
        for name in ("batches-3.html", "batches-4.html", "batches-2.html", "index.html"):  # serve: any page first, no page before it
            served = pages.Site(ledger, None, lambda: None).render(f"goals/{GOAL}/{name}")
            assert served is not None and _attempt_ids(served.body.decode()) == written[name], name
        assert pages.Site(ledger, None, lambda: None).render(f"goals/{GOAL}/batches-5.html") is None
    finally:
        ledger.close()


def test_report_reads_a_goal_overview_once(migrated_url, tmp_path, monkeypatch):
    # 201 pages of a 10^4-attempt goal each read its overview (0.24 s a page): now once per goal.
    _ingest_attempts(migrated_url, tmp_path, count=4)
    monkeypatch.setattr(report_views, "BATCHES_PAGE_SIZE", 1)
    read_for: list[str] = []
    overview = report_views.goal_overview
    monkeypatch.setattr(report_views, "goal_overview", lambda ledger, goal, **options: read_for.append(goal) or overview(ledger, goal, **options))
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    assert (site / "goals" / GOAL / "batches-4.html").exists()
    assert read_for == [GOAL]


def test_serve_reads_a_goal_overview_again_when_the_goal_grew(migrated_url, tmp_path):
    _ingest_attempts(migrated_url, tmp_path, count=2)
    ledger = api.open(migrated_url)
    try:
        site = pages.Site(ledger, None, lambda: None)
        before = site.render(f"goals/{GOAL}/index.html")
        _ingest_attempts(migrated_url, tmp_path, count=3)  # pair-2 is new (pair-0 and pair-1 again: nothing new)
        after = site.render(f"goals/{GOAL}/index.html")
        assert before is not None and after is not None
        assert len(_attempt_ids(before.body.decode())) == 2
        assert _attempt_ids(after.body.decode()) == _recorded(migrated_url) and "3 comparison(s)" in after.body.decode()
    finally:
        ledger.close()


def test_a_comparisons_review_files_read_its_reviews_once_while_the_goal_has_no_new_event(migrated_url, tmp_path, monkeypatch):
    # Six files a comparison (three reviews, HTML and JSON) read its rows six times: 300 reads for 53 comparisons at 10^4.
    _ingest_attempts(migrated_url, tmp_path, count=2)
    read_for: list[str] = []
    reviews = report_views.attempt_reviews
    monkeypatch.setattr(report_views, "attempt_reviews", lambda ledger, goal, key: read_for.append(key) or reviews(ledger, goal, key))
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    shown = sorted(p.name for p in (site / "goals" / GOAL / "attempts").iterdir())
    assert len(shown) == 2 and sorted(read_for) == shown  # every comparison's files written, each read once
    assert all(len(list((site / "goals" / GOAL / "attempts" / key).iterdir())) == 6 for key in shown)
    ledger = api.open(migrated_url)
    try:  # serve: the same comparison's next file reads nothing again, until the goal has a new event
        server_site, key = pages.Site(ledger, None, lambda: None), shown[0]
        read_for.clear()
        for name in ("review-claim.html", "review-claim.json"):
            assert server_site.render(f"goals/{GOAL}/attempts/{key}/{name}") is not None
        assert read_for == [key]
        _ingest_attempts(migrated_url, tmp_path, count=3)
        assert server_site.render(f"goals/{GOAL}/attempts/{key}/review-claim.json") is not None
        assert read_for == [key, key]
    finally:
        ledger.close()


def test_a_goals_first_page_takes_the_reading_its_review_files_were_listed_from(migrated_url, tmp_path, monkeypatch):
    # `report --goal G` lists the review files G's first page links (its first attempts and comparisons), then writes that
    # page: it read both listings twice (the attempts' spans counted again: 0.35 s on PostgreSQL at 10^4 attempts).
    from benchledger.ledger.read import report_attempts

    _ingest_attempts(migrated_url, tmp_path, count=2)
    first_pages: list[str] = []
    attempts, batches = report_attempts.lifecycle_attempts, report_views.batches

    def counted(read, name):
        return lambda ledger, goal, **options: (options.get("start") is None and first_pages.append(name)) or read(ledger, goal, **options)

    monkeypatch.setattr(report_attempts, "lifecycle_attempts", counted(attempts, "attempts"))
    monkeypatch.setattr(report_views, "batches", counted(batches, "batches"))
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--goal", GOAL, "--output", str(site)).exit_code == 0
    assert sorted(first_pages) == ["attempts", "batches"]
    written = (site / "goals" / GOAL / "index.html").read_text()
    ledger = api.open(migrated_url)
    try:  # the page is the page read afresh (serve: nothing listed, every fetch reads its listings)
        served = pages.Site(ledger, [GOAL], lambda: None)
        first_pages.clear()
        for _ in range(2):
            page = served.render(f"goals/{GOAL}/index.html")
            assert page is not None and _attempt_ids(page.body.decode()) == _attempt_ids(written) and len(_attempt_ids(written)) == 2
        assert sorted(first_pages) == ["attempts", "attempts", "batches", "batches"]
    finally:
        ledger.close()


def _report_stderr(url, output, *, terminal):
    """``benchledger report`` as a process, its stderr a terminal (a pseudo-terminal) or a pipe; returns (exit code, stderr)."""
    command = [sys.executable, "-m", "benchledger", "--database-url", url, "report", "--output", str(output)]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        return done.returncode, done.stderr
    parent, child = pty.openpty()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=child)
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(parent, 4096)
        except OSError:  # the terminal's other end closed: the process is done
            break
        if not chunk:
            break
        shown += chunk
    os.close(parent)
    return process.wait(timeout=300), shown.decode(errors="replace")


def test_report_shows_progress_on_a_terminal_only(migrated_url, tmp_path):
    _ingest_attempts(migrated_url, tmp_path, count=2)
    code, shown = _report_stderr(migrated_url, tmp_path / "on-terminal", terminal=True)
    assert code == 0 and "auditing" in shown and "writing pages" in shown, shown
    code, logged = _report_stderr(migrated_url, tmp_path / "in-a-log", terminal=False)
    assert code == 0 and logged == ""
