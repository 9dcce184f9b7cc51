"""Bounded reads: stored lifecycle steps, and the history read from them, as a user types it.

Every scenario runs on both backends (``migrated_url``).
"""

from __future__ import annotations

import json

from sqlalchemy import text

from benchledger.ledger.storage.store import Store
from tests.cli.test_consistency import ingest_demo
from tests.helpers import invoke

STEP = "lifecycle-step"


def _json(url: str, *args: str, exit_code: int = 0) -> dict:
    result = invoke(url, *args, "--format", "json")
    assert result.exit_code == exit_code, result.output
    return json.loads(result.stdout)


def _sql(url: str, statement: str) -> list[tuple]:
    ledger = Store.open(url)
    try:
        with ledger.engine.begin() as connection:
            result = connection.execute(text(statement))
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        ledger.close()


def _positions(view: dict) -> list[int]:
    return [e["position"] for e in view["entries"]]


def test_a_step_is_stored_only_where_the_lifecycle_changed(migrated_url):
    ingest_demo(migrated_url)
    entries = _json(migrated_url, "history", "--goal", "demo")["entries"]
    steps = _sql(migrated_url, f"SELECT key, position FROM projection_rows WHERE projection = '{STEP}' ORDER BY key")
    # The quickstart's 11 events (its five ingests): the lifecycle differs after 6 of them.
    changed = [e["position"] for i, e in enumerate(entries) if i == 0 or e["lifecycle"] != entries[i - 1]["lifecycle"]]
    assert [p for _, p in steps] == changed and (len(changed), len(entries)) == (6, 11)
    assert [k for k, _ in steps] == [f"{p:012d}" for p in changed]
    assert _positions(_json(migrated_url, "history", "--goal", "demo", "--changes-only")) == changed


def test_history_flags_select_entries_without_changing_their_lifecycle(migrated_url):
    ingest_demo(migrated_url)
    everything = _json(migrated_url, "history", "--goal", "demo")["entries"]
    by_position = {e["position"]: e for e in everything}

    def same_entries(*args: str) -> list[int]:
        view = _json(migrated_url, "history", "--goal", "demo", *args)
        for entry in view["entries"]:
            assert entry == by_position[entry["position"]]
        return _positions(view)

    positions = [e["position"] for e in everything]
    assert same_entries("--limit", "3") == positions[-3:]
    assert same_entries("--limit", "500") == positions
    assert same_entries("--since", str(positions[2]), "--until", str(positions[5])) == positions[2:6]
    assert same_entries("--kind", "run", "--limit", "1") == [e["position"] for e in everything if e["kind"] == "run"][-1:]
    assert same_entries("--as-of", str(positions[4]), "--limit", "2") == positions[3:5]
    changed = [e["position"] for e in everything if e["phase_changed"] or e["gates_changed"]]
    assert set(changed) <= set(same_entries("--changes-only"))
    # Times are the ledger's recording times: --since the last event's time shows it, --until before the first shows nothing.
    last = everything[-1]["recorded_at"]
    assert same_entries("--since", last)[-1] == positions[-1]
    assert same_entries("--until", "2000-01-01T00:00:00Z") == []
    assert invoke(migrated_url, "history", "--goal", "demo", "--limit", "0").exit_code == 2
    refused = invoke(migrated_url, "history", "--goal", "demo", "--since", "last week")
    assert refused.exit_code == 2 and "--since 'last week' is neither a position nor an ISO-8601 time" in refused.stderr


def test_the_table_and_csv_stream_the_same_rows(migrated_url):
    ingest_demo(migrated_url)
    csv_lines = invoke(migrated_url, "history", "--goal", "demo", "--format", "csv", "--limit", "2").stdout.splitlines()
    assert len(csv_lines) == 3 and csv_lines[0].startswith("changed,pos,ver,event id,recorded")
    table = invoke(migrated_url, "history", "--goal", "demo", "--limit", "2", "--wide").stdout.splitlines()
    assert len(table) == 4 and "ingest_batch" in table[-1]


def test_a_ledger_stored_before_steps_answers_and_says_to_replay(migrated_url):
    ingest_demo(migrated_url)
    before = invoke(migrated_url, "history", "--goal", "demo", "--format", "json").stdout
    limited = invoke(migrated_url, "history", "--goal", "demo", "--limit", "2", "--changes-only", "--format", "json").stdout
    _sql(migrated_url, f"DELETE FROM projection_rows WHERE projection = '{STEP}'")  # what an older benchledger left
    _sql(migrated_url, f"DELETE FROM projection_counts WHERE projection = '{STEP}'")  # (and revision 0005 counted)

    status = invoke(migrated_url, "status")
    assert status.exit_code == 1 and f"stale: no {STEP} rows for 1 goal(s)" in status.stdout
    assert _json(migrated_url, "status", exit_code=1)["missing"] == [{"projection": STEP, "goals": 1}]
    # Until a replay, history folds the goal instead: the same answer.
    assert invoke(migrated_url, "history", "--goal", "demo", "--format", "json").stdout == before
    assert invoke(migrated_url, "history", "--goal", "demo", "--limit", "2", "--changes-only", "--format", "json").stdout == limited
    audit = _json(migrated_url, "audit", exit_code=1)
    assert audit["ok"] is False and {p["kind"] for p in audit["problems"]} == {"projection_missing"}

    assert invoke(migrated_url, "replay").exit_code == 0
    assert invoke(migrated_url, "status").exit_code == 0
    assert _json(migrated_url, "audit")["ok"] is True
    assert invoke(migrated_url, "history", "--goal", "demo", "--format", "json").stdout == before


def test_a_tampered_step_is_reported_by_audit(migrated_url):
    ingest_demo(migrated_url)
    _sql(migrated_url, f"UPDATE projection_rows SET payload = replace(payload, 'preflight_ready', 'budget_counted') WHERE projection = '{STEP}'")
    problems = _json(migrated_url, "audit", exit_code=1)["problems"]
    assert problems and {p["kind"] for p in problems} == {"projection_mismatch"}
    assert all(STEP in p["detail"] for p in problems)


def test_steps_of_an_old_version_are_stale_and_not_read(migrated_url):
    ingest_demo(migrated_url)
    before = invoke(migrated_url, "history", "--goal", "demo", "--format", "json").stdout
    _sql(migrated_url, f"UPDATE projection_rows SET projection_version = 0, payload = '{{}}' WHERE projection = '{STEP}'")
    stale = _json(migrated_url, "status", exit_code=1)["stale"]
    assert [s["projection"] for s in stale] == [STEP] and stale[0]["stored_version"] == 0
    assert invoke(migrated_url, "history", "--goal", "demo", "--format", "json").stdout == before


# -- show: the current state by default, the rest a page at a time ----------------------------------


def test_show_prints_the_latest_row_of_each_projection_and_counts_the_rest(migrated_url):
    ingest_demo(migrated_url)
    view = _json(migrated_url, "show", "--goal", "demo")
    stored = _sql(migrated_url, "SELECT projection, key, position FROM projection_rows WHERE goal_id = 'demo'")
    counts: dict[str, int] = {}
    latest: dict[str, tuple] = {}
    for projection, key, position in stored:
        counts[projection] = counts.get(projection, 0) + 1
        latest[projection] = max(latest.get(projection, (0, "")), (position, key))
    assert view["counts"] == dict(sorted(counts.items()))
    assert {name: [(r["position"], r["key"]) for r in rows] for name, rows in view["projections"].items()} == {
        name: [value] for name, value in latest.items()
    }
    assert view["projections"]["lifecycle-state"][0]["key"] == "current"
    markdown = invoke(migrated_url, "show", "--goal", "demo", "--format", "markdown").stdout
    assert "Rows per projection: " in markdown and "review-runner-invariants 2" in markdown


def test_show_projection_pages_through_one_projection(migrated_url):
    ingest_demo(migrated_url)
    steps = _sql(migrated_url, f"SELECT key FROM projection_rows WHERE projection = '{STEP}' ORDER BY position")
    listed = _json(migrated_url, "show", "--goal", "demo", "--projection", STEP)
    assert [r["key"] for r in listed["projections"][STEP]] == [k for (k,) in steps] and listed["counts"] == {STEP: len(steps)}
    page = _json(migrated_url, "show", "--goal", "demo", "--projection", STEP, "--limit", "2", "--offset", "1")
    assert [r["key"] for r in page["projections"][STEP]] == [k for (k,) in steps[1:3]]
    one = _json(migrated_url, "show", "--goal", "demo", "--projection", STEP, "--key", steps[0][0])
    assert [r["key"] for r in one["projections"][STEP]] == [steps[0][0]]
    markdown = invoke(migrated_url, "show", "--goal", "demo", "--projection", STEP, "--limit", "2", "--format", "markdown").stdout
    assert f"{STEP}: rows 1-2 of {len(steps)}." in markdown
    # --as-of replays: the steps up to then, paged the same way
    early = _json(migrated_url, "show", "--goal", "demo", "--as-of", "3", "--projection", STEP)
    assert [r["key"] for r in early["projections"][STEP]] == [k for (k,) in steps if int(k) <= 3]
    unknown = invoke(migrated_url, "show", "--goal", "demo", "--projection", "review-claims")
    assert unknown.exit_code == 2 and "--projection 'review-claims' is not a projection; known: " in unknown.stderr
    assert invoke(migrated_url, "show", "--goal", "demo", "--limit", "2").exit_code == 2


def test_the_report_timeline_reads_the_steps_and_a_fold_says_the_same(migrated_url):
    from benchledger.ledger.read import report_views

    ingest_demo(migrated_url)
    ledger = Store.open(migrated_url)
    try:
        stored = report_views.lifecycle_timeline(ledger, "demo")
        assert stored["events"] == 11 and stored["changes"] == len(stored["steps"]) == 6
        assert [s["phase"] for s in stored["steps"]][-1] == "budget_counted"
        assert report_views.lifecycle_timeline(ledger, "demo", limit=2)["steps"] == stored["steps"][-2:]
        _sql(migrated_url, f"DELETE FROM projection_rows WHERE projection = '{STEP}'")
        assert report_views.lifecycle_timeline(ledger, "demo") == stored
        assert report_views.lifecycle_timeline(ledger, "demo", limit=2)["steps"] == stored["steps"][-2:]
        # a limit above the changes but below twice them keeps every change (it kept only the last limit - changes)
        assert report_views.lifecycle_timeline(ledger, "demo", limit=8)["steps"] == stored["steps"]
    finally:
        ledger.close()


# -- goals: streamed a page at a time, --limit -----------------------------------------------------


def test_goals_are_listed_a_page_at_a_time_and_limited(migrated_url, monkeypatch):
    from benchledger.ledger.read import views

    for goal in ("c-goal", "a-goal", "b-goal"):
        ingest_demo(migrated_url, goal)
    whole = _json(migrated_url, "goals")["goals"]
    assert [g["goal_id"] for g in whole] == ["a-goal", "b-goal", "c-goal"]
    assert {g["current_phase"] for g in whole} == {"budget_counted"}
    monkeypatch.setattr(views, "GOALS_PAGE", 2)  # three goals: two pages
    assert _json(migrated_url, "goals")["goals"] == whole
    assert _json(migrated_url, "goals", "--limit", "2")["goals"] == whole[:2]
    csv_lines = invoke(migrated_url, "goals", "--limit", "1", "--format", "csv").stdout.splitlines()
    assert len(csv_lines) == 2 and csv_lines[1].startswith("a-goal,")
    assert invoke(migrated_url, "goals", "--limit", "0").exit_code == 2


def test_runs_limit_keeps_the_first_rows_of_each_listing(migrated_url):
    from tests.cli.test_consistency import PUBLIC

    assert invoke(migrated_url, "import-loopx", "--goal", "loopx-public", str(PUBLIC)).exit_code == 0
    ingest_demo(migrated_url)
    for listing, key in (((), "runs"), (("--current",), "current_runs"), (("--paired",), "pairs")):
        whole = _json(migrated_url, "runs", *listing)[key]
        assert len(whole) > 3
        assert _json(migrated_url, "runs", *listing, "--limit", "3")[key] == whole[:3]
    refused = invoke(migrated_url, "runs", "--summary", "--limit", "3")
    assert refused.exit_code == 2 and "--limit does not apply to --summary" in refused.stderr
