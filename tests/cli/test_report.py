"""``benchledger report`` and the page data behind it, as a user runs them, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from benchledger.ledger.read import report_charts, report_views
from tests.helpers import invoke
from tests.report_helpers import DEMO, HOSTILE_TEXTS, IMAGE, SCRIPT, ingest_demo, ingest_hostile

GOAL = "demo-db-wal-recovery"


def test_report_writes_an_offline_site_of_the_demo(migrated_url, tmp_path):
    ingest_demo(migrated_url, GOAL)
    result = invoke(migrated_url, "report", "--output", str(tmp_path / "site"))
    assert result.exit_code == 0, result.output
    site = tmp_path / "site"
    index = (site / "index.html").read_text()
    assert f'href="goals/{GOAL}/index.html"' in index and "budget_counted" in index
    assert "clean" in index and "digest" in index
    page = (site / "goals" / GOAL / "index.html").read_text()
    # one plotly.js beside the pages, loaded relatively; nothing from any other place
    assert (site / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    assert 'src="../../assets/plotly.min.js"' in page
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    figures = json.loads(page.split('<script type="application/json" id="figures">')[1].split("</script>")[0])
    # one attempt: one timeline (its own), as the goal's was before attempts
    assert set(figures) == {"timeline-1", "score-delta", "claim-strengths", "attribution-labels", "learning-status", "paired-differences"}
    assert figures["timeline-1"]["data"][0]["y"][-1] == "budget_counted"
    review = json.loads((site / "goals" / GOAL / "reviews" / "review-claim.json").read_text())
    assert review["payload"]["decision"]["claim_strength"] == "candidate_score_recovery_needs_attribution_review"
    assert 'http-equiv="Content-Security-Policy"' in page and "script-src &#39;self&#39;;" in page


def test_report_of_named_goals_lists_only_them_and_refuses_unknown_ones(migrated_url, tmp_path):
    ingest_demo(migrated_url, GOAL)
    ingest_demo(migrated_url, "other-goal")
    ingest_demo(migrated_url, "third-goal")
    assert invoke(migrated_url, "report", "--goal", "other-goal", "--output", str(tmp_path / "one")).exit_code == 0
    index = (tmp_path / "one" / "index.html").read_text()
    assert "other-goal" in index and GOAL not in index and "third-goal" not in index
    assert not (tmp_path / "one" / "goals" / GOAL).exists()
    # --goal repeats; the older spelling (goals as arguments) still works, hidden from --help
    assert invoke(migrated_url, "report", "--goal", "other-goal", "--goal", "third-goal", "-o", str(tmp_path / "two")).exit_code == 0
    assert invoke(migrated_url, "report", "other-goal", "third-goal", "-o", str(tmp_path / "alias")).exit_code == 0
    for site in ("two", "alias"):
        assert sorted(p.name for p in (tmp_path / site / "goals").iterdir()) == ["other-goal", "third-goal"]
    assert "[GOAL]" not in invoke(migrated_url, "report", "--help").stdout
    refused = invoke(migrated_url, "report", "--goal", "no-such-goal", "--output", str(tmp_path / "none"))
    assert refused.exit_code == 2 and "no goal 'no-such-goal'" in refused.output
    assert not (tmp_path / "none").exists()


def test_artifact_markup_is_escaped_in_every_page(migrated_url, tmp_path):
    ingest_hostile(migrated_url, "hostile", tmp_path / "hostile")
    assert invoke(migrated_url, "report", "--output", str(tmp_path / "site")).exit_code == 0
    for path in (tmp_path / "site").rglob("*.html"):
        text = path.read_text()
        for hostile in HOSTILE_TEXTS:
            assert hostile not in text, f"{path} holds {hostile} unescaped"
    page = (tmp_path / "site" / "goals" / "hostile" / "index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_attempts_and_pass_rates_come_from_the_stored_reviews(ledger):
    url = ledger.engine.url.render_as_string(hide_password=False)
    ingest_demo(url, GOAL)
    (entry,) = report_views.goal_index(ledger)["goals"]
    assert entry["attempts"] == entry["comparisons"] == 1 and entry["current_phase"] == "budget_counted"
    rates = {r["arm"]: (r["passed"], r["failed"], r["pass_rate"]) for r in entry["pass_rates"]}
    assert rates == {"codex-loopx": (1, 0, 1.0), "hardened-codex": (0, 1, 0.0)}
    (attempt,) = report_views.batches(ledger, GOAL)["rows"]
    assert attempt["attempt"] == "1"
    assert attempt["baseline"] == {"mode": "hardened-codex", "official_score": 0.0, "official_passed": False}
    assert attempt["treatment"]["mode"] == "codex-loopx" and attempt["score_delta"] == 1.0
    assert attempt["blockers"] == ["baseline_failure_attribution_caveat"] and attempt["budget_count_allowed"] is True
    charts = report_charts.chart_series(ledger, GOAL)
    assert report_views.goal_runs(ledger, [GOAL])["failure_labels"][GOAL] == [{"label": "verifier_platform_probe_failure", "arm": "hardened-codex", "runs": 1}]
    assert charts["claim_strengths"] == [{"claim_strength": "candidate_score_recovery_needs_attribution_review", "attempts": 1}]


def test_listings_are_paged_and_series_bucketed(ledger, tmp_path):
    url = ledger.engine.url.render_as_string(hide_password=False)
    for number in range(3):
        ingest_demo(url, f"goal-{number}")
    page = report_views.goal_index(ledger, limit=2, offset=2)
    assert page["total"] == 3 and [g["goal_id"] for g in page["goals"]] == ["goal-2"]
    cut = report_charts.buckets(list(range(1000)), most=300)
    assert len(cut) == 300 and {len(b) for b in cut} == {3, 4} and [p for b in cut for p in b] == list(range(1000))
    assert len(report_charts.buckets(list(range(10)), most=300)) == 10


@pytest.mark.parametrize("command", [["ingest", "--goal", "g", "RUN"], ["benchmark", "review-claim", "--help"]])
def test_ingest_and_reviews_do_not_import_the_report_libraries(tmp_path, command):
    """The one-artifact ingest pays nothing for the report: Jinja2, Plotly and any web server stay unloaded."""
    from tests.report_helpers import DEMO

    argv = [str(DEMO / "04-run-baseline.json") if arg == "RUN" else arg for arg in command]
    probe = (
        "import sys\n"
        "from benchledger.cli.main import cli\n"
        f"try:\n    cli(['--database-url', 'sqlite:///{tmp_path / 'l.sqlite'}', *{argv!r}])\n"
        "except SystemExit as done:\n    assert done.code == 0, done.code\n"
        "loaded = sorted(m for m in ('jinja2', 'plotly', 'starlette', 'uvicorn', 'http.server', 'benchledger.cli.web') if m in sys.modules)\n"
        "print(loaded)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_report_without_the_extra_names_it(tmp_path):
    """Without Jinja2 the command says which extra to install (exit 2), never a traceback."""
    probe = (
        "import sys\n"
        "sys.modules['jinja2'] = None\n"
        "from benchledger.cli.main import cli\n"
        f"cli(['--database-url', 'sqlite:///{tmp_path / 'l.sqlite'}', 'report', '--output', '{tmp_path / 'site'}'])\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2, result.stderr
    assert "pip install 'benchledger[report]'" in result.stderr and "Traceback" not in result.stderr


def test_hostile_goal_data_round_trips_as_text(ledger, tmp_path):
    url = ledger.engine.url.render_as_string(hide_password=False)
    ingest_hostile(url, "hostile", tmp_path)
    (attempt,) = report_views.batches(ledger, "hostile")["rows"]
    assert attempt["task_id"] == SCRIPT and attempt["baseline"]["mode"] == f"{IMAGE}-baseline"


def test_report_reads_a_ledger_it_did_not_change(migrated_url, tmp_path):
    from tests.helpers import row_counts

    ingest_demo(migrated_url, GOAL)
    before = row_counts(migrated_url)
    assert invoke(migrated_url, "report", "--output", str(tmp_path / "site")).exit_code == 0
    assert row_counts(migrated_url) == before


def test_the_index_counts_every_problem_of_an_audit_that_lists_the_first_20(migrated_url):
    """``serve`` hands the index what ``audit --format json`` prints: 20 problems listed, ``problem_count`` all of them."""
    from benchledger.cli.web.pages import Site
    from benchledger.ledger.api import open

    problems = [{"kind": "chain_broken", "goal_id": GOAL, "position": n, "detail": f"problem {n}"} for n in range(1, 26)]
    audit = {"ok": False, "events_checked": 25, "goals_checked": 1, "projections_checked": 0, "digest": "25:ab",
             "problems": problems[:20], "problem_count": 25, "checked_at": "2026-01-01T00:00:00Z", "stale": False}
    with open(migrated_url) as ledger:
        index = Site(ledger, None, lambda: audit).render("index.html").body.decode()
    assert "25 problem(s)" in index
    assert index.count("<li>chain_broken") == 20


@pytest.mark.parametrize("planted", ["assets/plotly.min.js", f"goals/{GOAL}/index.html", "index.html", f"goals/{GOAL}"])
def test_report_refuses_an_earlier_report_holding_a_planted_link_and_writes_through_none(migrated_url, tmp_path, planted):
    """Issue 30 item 2: a link planted in a shared folder had the file it points at overwritten with a page.

    A folder holding no earlier report is refused whatever it holds (tests/scenarios/test_report_safety.py);
    in an earlier report, a link is refused by name, and neither followed nor removed.
    """
    ingest_demo(migrated_url, GOAL)
    site = tmp_path / "shared"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "index.html").write_text("the victim's file\n")
    link = site / planted
    shutil.rmtree(link) if link.is_dir() else link.unlink()
    link.symlink_to(victim if planted == f"goals/{GOAL}" else victim / "index.html")
    before = sorted(p.relative_to(site).as_posix() for p in site.rglob("*"))
    result = invoke(migrated_url, "report", "--output", str(site))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        f"benchledger: refusing to write the report into {site}: {link} is a symbolic link benchledger did not make "
        "(remove it, or choose another folder)\n"
    )
    assert [p.name for p in victim.iterdir()] == ["index.html"] and (victim / "index.html").read_text() == "the victim's file\n"
    assert link.is_symlink() and sorted(p.relative_to(site).as_posix() for p in site.rglob("*")) == before
    assert [p.name for p in tmp_path.iterdir() if "benchledger-" in p.name] == []


def test_a_link_planted_while_the_report_is_written_is_replaced_not_written_through(migrated_url, tmp_path, monkeypatch):
    """The report is built in a new folder; a link that appears there while it is written is replaced by the page (written to a new file, renamed)."""
    from benchledger.cli.web import report_folder

    ingest_demo(migrated_url, GOAL)
    site, victim = tmp_path / "site", tmp_path / "victim.html"
    victim.write_text("the victim's file\n")
    write = report_folder.write_file

    def plant_then_write(root, parts, body):
        if parts == ["index.html"]:
            (root / "index.html").symlink_to(victim)
        write(root, parts, body)

    monkeypatch.setattr(report_folder, "write_file", plant_then_write)
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    assert victim.read_text() == "the victim's file\n"
    assert not (site / "index.html").is_symlink() and GOAL in (site / "index.html").read_text()
    assert not [p for p in site.rglob("*.partial")]


def test_report_rewrites_its_own_earlier_output(migrated_url, tmp_path):
    ingest_demo(migrated_url, GOAL)
    site = tmp_path / "site"
    first = invoke(migrated_url, "report", "--output", str(site))
    again = invoke(migrated_url, "report", "--output", str(site))
    assert first.exit_code == again.exit_code == 0 and first.stdout.split(";")[0] == again.stdout.split(";")[0]


@pytest.mark.parametrize("named", [True, False], ids=["--goal", "every goal"])
def test_only_the_first_page_of_a_goal_reads_its_runs_and_once(migrated_url, tmp_path, monkeypatch, named):
    # A goal's runs are read for its comparisons and its pass rates at once (one runs model), on its first page only:
    # the 200 later pages of a 10^4-attempt goal must not read them again, nor the index (with --goal, its scope is the goal's).
    from benchledger.ledger.read import runs as run_reads

    comparison = json.loads((DEMO / "06-comparison.json").read_text())
    for number in range(3):
        again = tmp_path / f"comparison-{number}.json"
        again.write_text(json.dumps({**comparison, "comparison_id": f"pair-{number}"}))
        files = [str(DEMO / f) for f in ("04-run-baseline.json", "05-run-treatment.json")] + [str(again)]
        assert invoke(migrated_url, "ingest", "--goal", "paged", *files).exit_code == 0
    monkeypatch.setattr(report_views, "BATCHES_PAGE_SIZE", 1)  # a comparison a page
    models: list[list[str]] = []
    streamed: list[list[str]] = []
    model, counted = run_reads.runs_model_and_events, run_reads.goal_pass_rates

    def counting_model(ledger, goal_ids=()):
        models.append(list(goal_ids))
        return model(ledger, goal_ids=goal_ids)

    def counting_rates(ledger, ids):
        streamed.append(list(ids))
        return counted(ledger, ids)

    monkeypatch.setattr(report_views, "runs_model_and_events", counting_model)
    for module in (report_views, run_reads):
        monkeypatch.setattr(module, "goal_pass_rates", counting_rates)
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", *(["--goal", "paged"] if named else []), "--output", str(site)).exit_code == 0
    pages = sorted(p.name for p in (site / "goals" / "paged").glob("*.html"))
    assert pages == ["batches-2.html", "batches-3.html", "index.html"]
    assert "pass rate per benchmark" in (site / "goals" / "paged" / "index.html").read_text()
    assert "pass rate per benchmark" not in (site / "goals" / "paged" / "batches-2.html").read_text()
    # the goal's first page, then (without --goal) the index's comparisons over the ledger, whose model gives the index's pass rates
    assert models == ([["paged"]] if named else [["paged"], []])
    assert streamed == []  # never a second reading of a goal's runs for its pass rates


def test_the_pass_rates_a_report_shows_are_those_runs_summary_gives(migrated_url):
    """The pages' pass rates come from ``compare``'s runs model; ``runs --summary --goal G`` counts them streamed: the two agree."""
    from benchledger.cli.web.pages import Site
    from benchledger.ledger.api import open

    ingest_demo(migrated_url, GOAL)
    ingest_demo(migrated_url, "other")
    with open(migrated_url) as ledger:
        run = next(iter(ledger.runs(goal_id=GOAL)))
        ledger.retract([run.event_id], "a flaky run", goal_id=GOAL)
        want = {goal: [rate.as_dict() for rate in ledger.pass_rates(goal_id=goal)] for goal in (GOAL, "other")}
        assert want[GOAL] != want["other"]  # (the retraction counts: the two goals' rates differ)
        for named in ([GOAL], None):
            site = Site(ledger, named, lambda: None)
            site.render(f"goals/{GOAL}/index.html")
            site.render("index.html")
            shown = {goal: [{k: r[k] for k in want[goal][0]} for r in rates] for goal, (_, rates) in site._pass_rates.items()}
            assert shown == {goal: want[goal] for goal in ([GOAL] if named else [GOAL, "other"])}


def test_the_runs_a_goal_page_shows_are_counted_with_the_collector_paused(migrated_url, monkeypatch):
    """``goal_runs`` keeps the collector off past the model's build, through ``compare`` and the counts (its full passes over the
    model found nothing: 0.8 s of a 10^4-attempt goal's first page), and on again after, as it was."""
    import gc

    from benchledger.ledger.storage.store import Store

    ingest_demo(migrated_url, GOAL)
    collecting: list[bool] = []
    compared = report_views.compare_model
    monkeypatch.setattr(report_views, "compare_model", lambda model, **options: collecting.append(gc.isenabled()) or compared(model, **options))
    store = Store.open(migrated_url)
    try:
        assert gc.isenabled()
        read = report_views.goal_runs(store, [GOAL])
        assert collecting == [False] and gc.isenabled()
        assert read["comparisons"]["comparisons"] and read["pass_rates"][GOAL]
    finally:
        store.close()
