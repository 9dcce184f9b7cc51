"""The audit ``report`` shows runs in a child process while the pages are written (issue 31 item 1), on both backends.

The index (every page showing the audit) is written last, once the audit is
done, and shows what ``benchledger audit --format json`` prints for the same
scope: clean, or a tampered ledger's problems. The report stays all-or-nothing:
an audit child that fails, a page that fails, Ctrl-C or SIGTERM leave no
folder built, the earlier report as it was, and no audit running; each is one
line on stderr, no traceback.
"""

from __future__ import annotations

import json
import os
import re
import signal

import pytest
from sqlalchemy import text

from benchledger.cli.web import audit_child, pages
from benchledger.ledger.storage.store import Store
from tests.helpers import invoke
from tests.report_helpers import DEMO, ingest_demo

GOAL = "audited"


def _audit_json(url: str, *options: str) -> dict:
    result = invoke(url, "audit", "--format", "json", *options)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _audit_section(index: str) -> str:
    return index.split('<section class="audit" id="audit">')[1].split("</section>")[0]


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _nothing_built(parent) -> bool:
    return not [p.name for p in parent.iterdir() if ".benchledger-" in p.name]


@pytest.fixture
def started(monkeypatch):
    """Every audit child the report starts, recorded (the report kills the one still running when it fails)."""
    children: list[audit_child.AuditChild] = []

    class Recorded(audit_child.AuditChild):
        def __init__(self, *args, **options):
            super().__init__(*args, **options)
            children.append(self)

    monkeypatch.setattr(audit_child, "AuditChild", Recorded)
    return children


def _tamper(url: str, goal: str, what: str) -> None:
    """Something changed outside benchledger, what `audit` exists to find: a stored row (the projections) or the goal's head (its history)."""
    statement = {
        "a row": "UPDATE projection_rows SET status = 'faulted' WHERE goal_id = :goal AND projection = 'review-claim'",
        "the head": "UPDATE stream_heads SET last_recorded_at = '2099-01-01T00:00:00.000000Z' WHERE goal_id = :goal",
    }[what]
    store = Store.open(url)
    try:
        with store.engine.begin() as connection:
            changed = connection.execute(text(statement), {"goal": goal}).rowcount
        assert changed >= 1
    finally:
        store.close()


@pytest.mark.parametrize("tampered", [None, "a row", "the head"], ids=["clean", "a row tampered", "the head tampered"])
@pytest.mark.parametrize("full", [False, True], ids=["history only", "--full-audit"])
@pytest.mark.parametrize("named", [True, False], ids=["--goal", "every goal"])
def test_the_index_shows_what_audit_prints_for_the_same_scope(migrated_url, tmp_path, tampered, full, named, started):
    ingest_demo(migrated_url, GOAL)
    ingest_demo(migrated_url, "other")
    if tampered:
        _tamper(migrated_url, GOAL, tampered)
    scope = ["--goal", GOAL] if named else []
    expected = _audit_json(migrated_url, *scope, *([] if full else ["--history-only"]))
    # a history-only audit does not see a tampered row, and the index does not claim it checked the rows
    assert expected["ok"] is (tampered is None or (tampered == "a row" and not full))
    assert expected["projections"] == ("checked" if full else "not checked")
    site = tmp_path / "site"
    result = invoke(migrated_url, "report", *scope, *(["--full-audit"] if full else []), "--output", str(site))
    assert result.exit_code == 0, result.output
    assert [child.goal for child in started] == ([GOAL] if named else [None])
    shown = _audit_section((site / "index.html").read_text())
    verdict = "clean" if expected["ok"] else f"{expected['problem_count']} problem(s)"
    assert f'<span class="{"yes" if expected["ok"] else "no"}">{verdict}</span>' in shown
    goals = f"{expected['goals_checked']} goal" + ("" if expected["goals_checked"] == 1 else "s")  # ("1 goal", "2 goals")
    not_refolded = (
        f"the history of {expected['events_checked']} events ({goals}) checked (hashes, chain, Merkle log, digest); "
        "projections were not refolded: run <code>benchledger audit</code> (or <code>report --full-audit</code>) for that"
    )
    checked = f"{expected['events_checked']} events, {goals}, {expected['projections_checked']} projections checked"
    assert (checked in shown, not_refolded in shown) == (full, not full)
    assert ("projections checked" in shown) is full
    assert expected["digest"] in shown
    listed = re.findall(r"<li>(.*?)</li>", shown)
    assert listed == [f"{p['kind']} (goal {p['goal_id']}, position {p['position']}): {p['detail']}" for p in expected["problems"]]
    assert bool(listed) is not expected["ok"]
    assert "recorded in what it audits while this report was written" not in shown


def test_the_pages_are_written_while_the_audit_runs_and_the_index_after_it(migrated_url, tmp_path, started, monkeypatch):
    ingest_demo(migrated_url, GOAL)
    order: list[str] = []
    render = pages.Site.render

    def recorded(self, path):
        if not order:
            order.append("audit running" if started and started[0]._process.poll() is None else "no audit running")
        if path == "index.html":
            order.append("audit ended" if started[0]._process.poll() is not None else "audit running")
        order.append(path)
        return render(self, path)

    monkeypatch.setattr(pages.Site, "render", recorded)
    assert invoke(migrated_url, "report", "--goal", GOAL, "--output", str(tmp_path / "site")).exit_code == 0
    # the audit was started before the first page, and had ended (waited for) before the index, the last page
    assert order[0] == "audit running"
    assert order[-2:] == ["audit ended", "index.html"]
    assert len(order) > 10 and "index.html" not in order[1:-1]


def test_events_recorded_while_the_report_is_written_are_said_on_the_index(migrated_url, tmp_path, monkeypatch):
    """The audit reads the ledger as its child begins, after the pages' snapshot: when its scope moved meanwhile, the index says so."""
    ingest_demo(migrated_url, GOAL)
    render = pages.Site.render
    ingested: list[str] = []

    def ingest_meanwhile(self, path):
        if path.startswith("goals/") and not ingested:
            ingested.append(path)
            run = json.loads((DEMO / "04-run-baseline.json").read_text())
            (tmp_path / "later-run.json").write_text(json.dumps({**run, "job_name": "a later run"}))
            assert invoke(migrated_url, "ingest", "--goal", GOAL, str(tmp_path / "later-run.json")).exit_code == 0  # another writer
        return render(self, path)

    monkeypatch.setattr(pages.Site, "render", ingest_meanwhile)
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--goal", GOAL, "--output", str(site)).exit_code == 0
    assert ingested
    assert "recorded in what it audits while this report was written" in _audit_section((site / "index.html").read_text())


def _earlier_report(url, tmp_path):
    ingest_demo(url, GOAL)
    site = tmp_path / "site"
    assert invoke(url, "report", "--output", str(site)).exit_code == 0
    return site, _tree(site)


def test_an_audit_child_that_fails_fails_the_report_and_leaves_the_earlier_one(migrated_url, tmp_path, monkeypatch):
    site, before = _earlier_report(migrated_url, tmp_path)

    class Unreachable(audit_child.AuditChild):  # the child's database went away: it ends with its own one-line error
        def __init__(self, url, goal=None, **options):
            super().__init__(f"sqlite:///{tmp_path / 'no-such-folder' / 'ledger.db'}", goal, **options)

    monkeypatch.setattr(audit_child, "AuditChild", Unreachable)
    result = invoke(migrated_url, "report", "--output", str(site))
    assert result.exit_code == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("benchledger: the audit (`benchledger audit --history-only`, a child process) failed: ") and "Traceback" not in result.stderr
    assert len(line) > len("benchledger: the audit (`benchledger audit --history-only`, a child process) failed: ") + 10  # the child's reason
    assert _tree(site) == before and _nothing_built(tmp_path)


def test_an_audit_child_that_is_killed_fails_the_report(migrated_url, tmp_path, monkeypatch):
    site, before = _earlier_report(migrated_url, tmp_path)

    class Killed(audit_child.AuditChild):
        def result(self):
            self.kill()
            return super().result()

    monkeypatch.setattr(audit_child, "AuditChild", Killed)
    result = invoke(migrated_url, "report", "--goal", GOAL, "--output", str(site))
    assert result.exit_code == 2
    assert result.stderr == f"benchledger: the audit (`benchledger audit --goal {GOAL} --history-only`, a child process) failed: it was ended by signal {signal.SIGKILL.value}\n"
    assert _tree(site) == before and _nothing_built(tmp_path)


@pytest.mark.parametrize("how", ["page fails", "Ctrl-C", "SIGTERM"])
def test_a_report_that_stops_midway_ends_its_audit_and_builds_nothing(migrated_url, tmp_path, monkeypatch, started, how):
    site, before = _earlier_report(migrated_url, tmp_path)
    started.clear()
    handler = signal.getsignal(signal.SIGTERM)
    render = pages.Site.render

    def stop_on_a_goal_page(self, path):
        if path.startswith("goals/"):
            assert started[0]._process.poll() is None  # (the audit is still running: ending the report must end it)
            if how == "page fails":
                raise OSError(28, "No space left on device", path)
            if how == "Ctrl-C":
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGTERM)
        return render(self, path)

    class Slow(audit_child.AuditChild):  # an audit long enough to be running when the report stops
        def __init__(self, url, goal=None, **options):
            super().__init__(url, goal, **options)
            self._process.send_signal(signal.SIGSTOP)

    monkeypatch.setattr(pages.Site, "render", stop_on_a_goal_page)
    monkeypatch.setattr(audit_child, "AuditChild", Slow)
    result = invoke(migrated_url, "report", "--output", str(site))
    assert result.exit_code == (2 if how == "page fails" else 130), result.output
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
    assert started[0]._process.wait(timeout=10) == -signal.SIGKILL  # killed, not left running
    assert _tree(site) == before and _nothing_built(tmp_path)
    assert signal.getsignal(signal.SIGTERM) is handler  # the report's own handler is gone with it


@pytest.mark.parametrize("full", [False, True], ids=["history only", "--full-audit"])
def test_the_index_of_several_goals_says_what_their_audits_checked_together(migrated_url, tmp_path, full):
    ingest_demo(migrated_url, GOAL)
    ingest_demo(migrated_url, "other")
    option = [] if full else ["--history-only"]
    audits = [_audit_json(migrated_url, "--goal", goal, *option) for goal in (GOAL, "other")]
    site = tmp_path / "site"
    result = invoke(migrated_url, "report", "--goal", GOAL, "--goal", "other", *(["--full-audit"] if full else []), "--output", str(site))
    assert result.exit_code == 0, result.output
    shown = _audit_section((site / "index.html").read_text())
    events = sum(a["events_checked"] for a in audits)
    if full:
        assert f"{events} events, 2 goals, {sum(a['projections_checked'] for a in audits)} projections checked" in shown
    else:
        assert f"the history of {events} events (2 goals) checked" in shown and "projections were not refolded" in shown
        assert "projections checked" not in shown
    assert all(a["digest"] in shown for a in audits)
