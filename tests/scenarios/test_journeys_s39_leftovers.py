"""What the walk of session 39 found and left, on both backends.

Each test is a command line a user typed, what it printed, and what is right.
"""

from __future__ import annotations

import json
import shutil

import pytest

import benchledger
from benchledger.errors import InvalidInput
from benchledger.ledger import evaluate_review, load_artifacts
from tests.cli import test_report_browser as browser
from tests.helpers import invoke, row_counts
from tests.report_helpers import DEMO, PUBLIC_LEDGER, ingest_demo, pages_of

browser_type_launch_args = browser.browser_type_launch_args

GOAL = "demo-db-wal-recovery"
FILE_GIVEN = "goal '04-run-baseline.json' does not exist and its name is that of a file here: was a file given where the goal's name goes?"


@pytest.fixture
def in_a_folder_of_runs(tmp_path, monkeypatch):
    """The working directory a user ingests from: the demo's files, and a folder of results."""
    folder = tmp_path / "work"
    shutil.copytree(DEMO, folder)
    (folder / "results").mkdir()
    monkeypatch.chdir(folder)
    return folder


def test_a_files_name_given_as_the_goal_is_refused_on_every_write_unless_meant(migrated_url, in_a_folder_of_runs):
    # In examples/demo, `ingest --goal 04-run-baseline.json 04-run-baseline.json --dry-run` said it "would append" to a new
    # goal named 04-run-baseline.json, and without --dry-run created it: the goal's name left out, the file took its place.
    ingest_demo(migrated_url, GOAL)
    before = row_counts(migrated_url)
    for dry_run in (["--dry-run"], []):
        refused = invoke(migrated_url, "ingest", "--goal", "04-run-baseline.json", "04-run-baseline.json", *dry_run)
        assert refused.exit_code == 2 and refused.stdout == ""
        assert refused.stderr == (f"benchledger: {FILE_GIVEN} Nothing was written; pass --new-goal (library: new_goal=True) "
                                  "if a new goal of that name is meant\n")
    # A name that is also a folder here is how runs are kept (a folder named after its goal): an ordinary new goal.
    named_like_its_folder = invoke(migrated_url, "ingest", "--goal", "results", "--dry-run", "05-run-treatment.json")
    assert named_like_its_folder.exit_code == 0, named_like_its_folder.stderr
    suffix = invoke(migrated_url, "ingest", "--goal", "later.NDJSON", "05-run-treatment.json")  # (no such file: its suffix says it)
    assert suffix.exit_code == 2 and "goal 'later.NDJSON' does not exist and its name ends in .NDJSON, as a file's does" in suffix.stderr

    line = {"goal_id": "05-run-treatment.json", "artifacts": [json.loads((DEMO / "05-run-treatment.json").read_text())]}
    (in_a_folder_of_runs / "lines.ndjson").write_text(json.dumps(line) + "\n")
    batches = invoke(migrated_url, "ingest-batches", "lines.ndjson")
    assert batches.exit_code == 1
    assert ("- line 1: goal '05-run-treatment.json' does not exist and its name is that of a file here: was a file given where the "
            "goal's name goes? Nothing was written; add \"new_goal\": true to the line if a new goal of that name is meant") in batches.stdout

    imported = invoke(migrated_url, "import-loopx", "--goal", "ledger.json", str(PUBLIC_LEDGER))
    assert imported.exit_code == 2 and "goal 'ledger.json' does not exist and its name ends in .json" in imported.stderr

    with benchledger.open(migrated_url) as ledger:
        with pytest.raises(InvalidInput, match=r"its name is that of a file here.*pass --new-goal \(library: new_goal=True\)"):
            ledger.ingest("04-run-baseline.json", ["04-run-baseline.json"])
        run = load_artifacts(["05-run-treatment.json"])
        with pytest.raises(InvalidInput, match="goal 'run.json' does not exist and its name ends in .json"):
            ledger.ingest_artifacts("run.json", run)
    assert row_counts(migrated_url) == before

    # A goal of that name meant: said so, it is created; then it is held, and never questioned again.
    meant = invoke(migrated_url, "ingest", "--goal", "04-run-baseline.json", "--new-goal", "04-run-baseline.json")
    assert meant.exit_code == 0
    assert invoke(migrated_url, "ingest", "--goal", "04-run-baseline.json", "05-run-treatment.json").exit_code == 0
    line["new_goal"] = True
    (in_a_folder_of_runs / "lines.ndjson").write_text(json.dumps(line) + "\n")
    assert invoke(migrated_url, "ingest-batches", "lines.ndjson").exit_code == 0
    goals = json.loads(invoke(migrated_url, "goals", "--format", "json").stdout)
    assert sorted(goal["goal_id"] for goal in goals["goals"]) == ["04-run-baseline.json", "05-run-treatment.json", GOAL]


def test_reading_a_goal_named_as_a_file_says_it_names_a_file(migrated_url, in_a_folder_of_runs):
    # `history --goal 04-run-baseline.json` said only "no goal '04-run-baseline.json' in this ledger".
    ingest_demo(migrated_url, GOAL)
    told = invoke(migrated_url, "history", "--goal", "04-run-baseline.json")
    assert told.exit_code == 2
    assert told.stderr == ("benchledger: no goal '04-run-baseline.json' in this ledger; '04-run-baseline.json' is a file here, "
                           "not a goal's name (`benchledger goals` lists them)\n")
    assert invoke(migrated_url, "runs", "--goal", "results").stderr == (
        "benchledger: no goal 'results' in this ledger (`benchledger goals` lists them)\n")  # (a folder named after its goal)
    # Only when it does name one.
    assert invoke(migrated_url, "history", "--goal", "nothing.json").stderr == (
        "benchledger: no goal 'nothing.json' in this ledger (`benchledger goals` lists them)\n")


@pytest.mark.parametrize("resamples", [5, 99, 100_001, 10**6])
def test_the_library_takes_the_resamples_compare_takes_and_refuses_the_rest(migrated_url, resamples):
    # `ledger.compare(resamples=5)` (or 10**6) was accepted while `compare --resamples 5` was refused (100 to 100,000):
    # the library gave an interval of 5 resamples, or spent the time and memory of a million.
    ingest_demo(migrated_url, GOAL)
    typed = invoke(migrated_url, "compare", "--resamples", str(resamples))
    assert typed.exit_code == 2 and f"{resamples} is not in the range 100<=x<=100000" in typed.stderr
    with benchledger.open(migrated_url) as ledger:
        with pytest.raises(InvalidInput, match=rf"^resamples must be a whole number \(100 to 100000\), not {resamples}$"):
            ledger.compare(resamples=resamples)
        for taken in (100, 100_000):
            assert ledger.compare(resamples=taken).scope["resamples"] == taken
            assert invoke(migrated_url, "compare", "--resamples", str(taken)).exit_code == 0


def test_the_library_and_compare_take_the_same_seeds(migrated_url):
    ingest_demo(migrated_url, GOAL)
    typed = invoke(migrated_url, "compare", "--seed", "-1")
    assert typed.exit_code == 2 and typed.stderr == "benchledger: seed must be a whole number (0 or more), not -1\n"
    with benchledger.open(migrated_url) as ledger:
        for seed in (-1, True, "7"):
            with pytest.raises(InvalidInput, match=r"^seed must be a whole number \(0 or more\)"):
                ledger.compare(seed=seed)
        big = 10**40
        assert ledger.compare(seed=big).scope["seed"] == big
    assert json.loads(invoke(migrated_url, "compare", "--seed", str(10**40), "--format", "json").stdout)["scope"]["seed"] == 10**40


def test_compare_without_paired_tasks_says_a_retracted_run_was_left_out_as_it_says_an_archived_one(migrated_url, tmp_path):
    # After `retract @N` of the demo goal's baseline run, `compare` said only "no task has countable, scored runs in both
    # arms": the run the user withdrew was gone without a word, where an archived run left out is counted.
    ingest_demo(migrated_url, GOAL)
    listed = json.loads(invoke(migrated_url, "runs", "--goal", GOAL, "--arm", "hardened-codex", "--format", "json").stdout)
    assert invoke(migrated_url, "retract", f"@{listed['runs'][0]['position']}", "--reason", "stale image").exit_code == 0
    note = "no task has countable, scored runs in both arms; 1 retracted run(s) of these arms are left out"
    compared = invoke(migrated_url, "compare", "--goal", GOAL)
    assert compared.exit_code == 0
    assert f"terminal-bench@2.0 (hardened-codex vs codex-loopx): {note}\n" in compared.stdout
    as_json = json.loads(invoke(migrated_url, "compare", "--goal", GOAL, "--format", "json").stdout)["comparisons"]
    assert [(c["verdict"], c["note"]) for c in as_json] == [("no paired tasks", note)]
    with benchledger.open(migrated_url) as ledger:  # (one runs model: the library and the report read the same note)
        assert [c.note for c in ledger.compare(goal_ids=[GOAL]).comparisons] == [note]
    assert invoke(migrated_url, "report", "--goal", GOAL, "--output", str(tmp_path / "site")).exit_code == 0
    assert sum(note in page.read_text() for page in (tmp_path / "site").rglob("*.html")) >= 1


@pytest.mark.parametrize("kind", ["report", "serve"])
def test_the_index_of_an_empty_ledger_says_what_creates_a_goal_as_goals_does(migrated_url, tmp_path, page, kind):
    # `report` (and `serve`) of an empty ledger showed "0 goal(s)." over an empty table header, and no next step.
    listed = invoke(migrated_url, "goals")
    assert listed.exit_code == 0
    assert listed.stderr.endswith("; `benchledger ingest --goal GOAL FILE...` creates one\n"), listed.stderr
    with pages_of(kind, migrated_url, tmp_path) as base:
        page.goto(base + "index.html")
        said = page.locator("#no-goals")
        assert said.is_visible()
        again = "; then write this report again (benchledger report)" if kind == "report" else ", and this page lists it when reloaded"
        assert said.inner_text() == f"No goal in this ledger yet: benchledger ingest --goal GOAL FILE... creates one with a run's artifacts{again}."
        assert "0 goal(s)" not in page.inner_text("main") and page.locator("table.goals").count() == 0
        page.screenshot(path=str(tmp_path / "index.png"), full_page=True)


def test_the_index_of_a_ledger_whose_goals_are_all_archived_says_include_archived_lists_them(migrated_url, tmp_path):
    assert invoke(migrated_url, "ingest", "--goal", GOAL, str(DEMO / "04-run-baseline.json")).exit_code == 0
    assert invoke(migrated_url, "goals", "archive", GOAL).exit_code == 0
    assert invoke(migrated_url, "report", "--output", str(tmp_path / "site")).exit_code == 0
    index = (tmp_path / "site" / "index.html").read_text()
    assert ('<p class="next-step" id="no-goals">No goal to list: the ledger\'s 1 goal is archived; '
            "<code>benchledger report --include-archived</code> lists it.</p>") in index
    assert invoke(migrated_url, "report", "--include-archived", "--output", str(tmp_path / "all")).exit_code == 0
    assert 'id="no-goals"' not in (tmp_path / "all" / "index.html").read_text()


def test_a_review_the_library_does_not_know_is_refused_by_name_not_a_key_error(migrated_url):
    # Found on the way: `ledger.keep_review(goal, "claim-review", ...)` (the command is review-claim) raised KeyError:
    # 'claim-review', no benchledger error, where every error a caller can cause is one (docs/python-api.md).
    inputs = load_artifacts([str(DEMO / name) for name in ("06-comparison.json", "04-run-baseline.json", "05-run-treatment.json")])
    before = row_counts(migrated_url)
    with benchledger.open(migrated_url) as ledger:
        with pytest.raises(InvalidInput, match=r"^no review named 'claim-review'; the reviews are: attempt-learning-gate, .*review-claim"):
            ledger.keep_review(GOAL, "claim-review", inputs, {})
        with pytest.raises(InvalidInput, match="no review named 'claim-review'"):
            evaluate_review("claim-review", inputs, {})
    assert row_counts(migrated_url) == before
    with benchledger.open(migrated_url) as ledger:
        assert ledger.keep_review(GOAL, "review-claim", inputs, {}).payload == evaluate_review("review-claim", inputs, {}).payload
