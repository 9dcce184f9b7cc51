"""One team, many ledgers (issue 28, items 5 and 6), as a user types it, on both backends.

A teammate keeps a local SQLite ledger and merges it into the team's ledger
(SQLite or PostgreSQL: the ``migrated_url`` fixture), through a file or
directly; a goal name one typo away from an existing goal is refused unless
``--new-goal`` says it is meant; ``goals archive`` hides a goal from the
listings, by an event, never a deletion.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
PREFLIGHT, LAUNCH, POST_LAUNCH, BASELINE, TREATMENT, COMPARISON = sorted(map(str, DEMO.glob("*.json")))


def _ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _ingest(url: str, goal: str, *paths: str, new_goal: bool = False) -> None:
    _ok(invoke(url, "ingest", "--goal", goal, *paths, *(["--new-goal"] if new_goal else []), "--format", "json"))


def _goal_digest(url: str, goal: str) -> str:
    report = _ok(invoke(url, "audit", "--goal", goal, "--format", "json"))
    assert report["ok"], report
    return report["digest"]


def _reviews(url: str, goal: str) -> dict:
    """The goal's latest projection rows as ``show`` prints them, without their positions (a merge numbers them anew)."""
    shown = _ok(invoke(url, "show", "--goal", goal, "--format", "json"))["projections"]
    return {name: [{k: v for k, v in row.items() if k not in ("position", "key")} for row in rows] for name, rows in shown.items()}


def _clean(url: str) -> dict:
    """The ledger audits clean and its projections are current; returns the audit."""
    report = _ok(invoke(url, "audit", "--format", "json"))
    assert report["ok"] and report["problems"] == [], report
    assert invoke(url, "status").exit_code == 0
    return report


def _goals(url: str, *options: str) -> list[str]:
    return [g["goal_id"] for g in _ok(invoke(url, "goals", *options, "--format", "json"))["goals"]]


@pytest.fixture
def local(tmp_path) -> str:
    """A person's own SQLite ledger."""
    return f"sqlite:///{tmp_path / 'mine.sqlite'}"


# -- merging ledgers ---------------------------------------------------------------------------


def test_a_local_ledger_merges_into_the_team_ledger_through_a_file_and_directly(migrated_url, local, tmp_path):
    team = migrated_url
    _ingest(team, "tb2-shared", PREFLIGHT)
    _ingest(local, "tb2-db-wal", PREFLIGHT, LAUNCH)
    _ingest(local, "tb2-db-wal", BASELINE, TREATMENT, COMPARISON)
    _ingest(local, "skills-mine", BASELINE)
    export = tmp_path / "mine.ndjson"
    export.write_bytes(invoke(local, "export").stdout_bytes)

    merged = _ok(invoke(team, "merge", str(export), "--format", "json"))
    assert [(g["goal_id"], g["action"], g["events_added"]) for g in merged["goals"]] == [("skills-mine", "copied", 2), ("tb2-db-wal", "copied", 7)]
    for goal in ("tb2-db-wal", "skills-mine"):
        # verbatim: the goal digest is the same on both sides, and the projections are what the events say
        assert _goal_digest(team, goal) == _goal_digest(local, goal) == {g["goal_id"]: g["digest"] for g in merged["goals"]}[goal]
        assert _reviews(team, goal) == _reviews(local, goal)
    assert _goals(team) == ["skills-mine", "tb2-db-wal", "tb2-shared"]
    _clean(team)

    # the person goes on locally; the team ledger holds a prefix of the goal: merging again appends the rest
    _ingest(local, "tb2-db-wal", POST_LAUNCH)
    again = _ok(invoke(team, "merge", "--from", local, "--format", "json"))
    assert [(g["goal_id"], g["action"], g["events_added"]) for g in again["goals"]] == [("skills-mine", "held", 0), ("tb2-db-wal", "appended", 2)]
    assert _goal_digest(team, "tb2-db-wal") == _goal_digest(local, "tb2-db-wal")
    _clean(team)

    # the other way round: the team ledger into the local one (the local copy is a prefix of nothing new; tb2-shared is copied)
    back = _ok(invoke(local, "merge", "--from", team, "--format", "json"))
    assert {g["goal_id"]: g["action"] for g in back["goals"]} == {"skills-mine": "held", "tb2-db-wal": "held", "tb2-shared": "copied"}
    assert _goal_digest(local, "tb2-shared") == _goal_digest(team, "tb2-shared")
    _clean(local)

    # merging what is held already adds nothing, and says so
    result = invoke(team, "merge", str(export))
    assert result.exit_code == 0 and "0 event(s) added" in result.output and "held already" in result.output


def test_goals_that_parted_refuse_the_merge_naming_the_goal_and_where(migrated_url, local, tmp_path):
    team = migrated_url
    _ingest(team, "tb2-db-wal", PREFLIGHT, LAUNCH)
    _ingest(local, "tb2-db-wal", PREFLIGHT, LAUNCH)  # the same files, recorded at another time: another history
    _ingest(local, "fresh-goal", BASELINE)
    before = row_counts(team)

    result = invoke(team, "merge", "--from", local)
    assert result.exit_code == 1
    assert "goal 'tb2-db-wal'" in result.stderr and "differ from stream version 1" in result.stderr
    assert "a merge takes a goal only where one copy is a prefix of the other" in result.stderr
    assert row_counts(team) == before  # all or nothing: fresh-goal was not copied either
    assert _goals(team) == ["tb2-db-wal"]

    # a copy that goes on differently after a common start parts at its first own event
    export = tmp_path / "team.ndjson"
    export.write_bytes(invoke(team, "export", "--goal", "tb2-db-wal").stdout_bytes)
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    assert invoke(other, "import-ndjson", str(export)).exit_code == 0
    _ingest(other, "tb2-db-wal", BASELINE)
    _ingest(team, "tb2-db-wal", TREATMENT)
    refused = _ok_refusal(invoke(team, "merge", "--from", other, "--format", "json"))
    (problem,) = refused["problems"]
    assert "goal 'tb2-db-wal'" in problem and "differ from stream version 4 on" in problem, problem
    _clean(team)


def _ok_refusal(result) -> dict:
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    return report


def test_a_merge_refuses_what_does_not_verify_and_a_source_that_is_not_a_ledger(migrated_url, local, tmp_path):
    team = migrated_url
    _ingest(local, "tb2-db-wal", PREFLIGHT, LAUNCH)
    export = tmp_path / "mine.ndjson"
    lines = invoke(local, "export").stdout.splitlines()
    export.write_text("\n".join(lines[:-2] + lines[-1:]) + "\n")  # an event lost: the trailer no longer adds up
    before = row_counts(team)
    result = invoke(team, "merge", str(export))
    assert result.exit_code == 1 and "trailer" in result.stderr
    assert row_counts(team) == before

    missing = f"sqlite:///{tmp_path / 'nothing-here.sqlite'}"
    result = invoke(team, "merge", "--from", missing)
    assert result.exit_code == 2 and "no ledger file there" in result.stderr
    assert not (tmp_path / "nothing-here.sqlite").exists()  # a source is never created

    assert invoke(team, "merge").exit_code == 2
    assert invoke(team, "merge", str(export), "--from", local).exit_code == 2


# -- goal hygiene: a typo does not create a goal ---------------------------------------------


def test_a_typo_in_goal_is_refused_with_did_you_mean_unless_new_goal_says_it_is_meant(migrated_url, tmp_path):
    url = migrated_url
    _ingest(url, "tb2-db-wal", PREFLIGHT)
    before = row_counts(url)

    for typo in ("tb2-db-wall", "tb2-bd-wal", "TB2-db-wal"):
        result = invoke(url, "ingest", "--goal", typo, LAUNCH)
        assert result.exit_code == 2, result.output
        assert f"goal {typo!r} does not exist" in result.stderr and "did you mean 'tb2-db-wal'?" in result.stderr
        assert "--new-goal" in result.stderr
    assert invoke(url, "ingest", "--goal", "tb2-db-wall", "--dry-run", LAUNCH).exit_code == 2  # a dry run says so too
    assert row_counts(url) == before and _goals(url) == ["tb2-db-wal"]

    # names that are a series, short, or far apart are not typos; an existing goal is never questioned
    for goal in ("tb3-db-wal", "g1", "skills-pilot"):
        _ingest(url, goal, PREFLIGHT)
    _ingest(url, "tb2-db-wal", LAUNCH)
    # meant: created
    _ingest(url, "tb2-db-wall", LAUNCH, new_goal=True)
    assert _goals(url) == ["g1", "skills-pilot", "tb2-db-wal", "tb2-db-wall", "tb3-db-wal"]

    # the same rule on every way a goal is created: a review's --goal, import-loopx, an ingest-batches line
    review = ["benchmark", "review-claim", "--benchmark-comparison-json", COMPARISON, "--benchmark-run-json", BASELINE,
              "--benchmark-run-json", TREATMENT]
    result = invoke(url, *review, "--goal", "skills-pilots")
    assert result.exit_code == 2 and "did you mean 'skills-pilot'?" in result.stderr
    assert invoke(url, *review, "--goal", "skills-pilots", "--new-goal").exit_code in (0, 1)  # (the review's verdict)
    assert "skills-pilots" in _goals(url)

    gate_case = REPO / "tests" / "conformance" / "corpus" / "cases" / "baseline-failure-gate" / "baseline-gate-01"
    gate = ["benchmark", "baseline-failure-gate", *json.loads((gate_case / "case.json").read_text())["args"], "--execute"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(gate_case)
        result = invoke(url, *gate, "--goal-id", "skills-pilot2s")
        assert result.exit_code == 2 and "did you mean 'skills-pilots'?" in result.stderr
        assert invoke(url, *gate, "--goal-id", "skills-pilot2s", "--new-goal").exit_code == 0

    loopx_ledger = REPO / "tests" / "data" / "loopx-public"
    run_ledger = next(loopx_ledger.rglob("benchmark-run-ledger.json"))
    result = invoke(url, "import-loopx", "--goal", "tb3-db-wall", str(run_ledger))
    assert result.exit_code == 2 and "did you mean 'tb3-db-wal'?" in result.stderr

    lines = tmp_path / "batches.ndjson"
    document = json.loads(Path(BASELINE).read_text())
    lines.write_text(
        json.dumps({"goal_id": "fresh-series", "artifacts": [document]}) + "\n"
        + json.dumps({"goal_id": "fresh-seriez", "artifacts": [document]}) + "\n"  # close to the line above's new goal
        + json.dumps({"goal_id": "tb2-db-wal1", "artifacts": [document], "new_goal": True}) + "\n"
    )
    before = row_counts(url)
    result = invoke(url, "ingest-batches", str(lines))
    assert result.exit_code == 1 and "line 2: goal 'fresh-seriez' does not exist" in result.output
    assert 'add "new_goal": true to the line' in result.output
    assert row_counts(url) == before  # refused while validating: no transaction ran
    lines.write_text(lines.read_text().replace('"fresh-seriez"', '"fresh-seriez", "new_goal": true'))
    assert invoke(url, "ingest-batches", str(lines)).exit_code == 0
    assert {"fresh-series", "fresh-seriez", "tb2-db-wal1"} <= set(_goals(url))
    _clean(url)


# -- archiving goals -----------------------------------------------------------------------


def test_goals_archive_hides_a_goal_by_an_event_and_unarchive_brings_it_back(migrated_url, tmp_path):
    url = migrated_url
    _ingest(url, "tb2-db-wal", PREFLIGHT, LAUNCH)
    _ingest(url, "tb2-db-wall", PREFLIGHT, new_goal=True)  # the typo that slipped through
    events_before = _ok(invoke(url, "info", "--format", "json"))["events"]

    result = invoke(url, "goals", "archive", "tb2-db-wall")
    assert result.exit_code == 0 and "archived" in result.output
    assert _goals(url) == ["tb2-db-wal"]
    listed = _ok(invoke(url, "goals", "--include-archived", "--format", "json"))["goals"]
    assert [(g["goal_id"], g["archived"]) for g in listed] == [("tb2-db-wal", False), ("tb2-db-wall", True)]
    assert "yes" in invoke(url, "goals", "--all").output.splitlines()[-1]
    # an event, never a deletion: the goal, its events and history are all there
    assert _ok(invoke(url, "info", "--format", "json"))["events"] == events_before + 1
    history = _ok(invoke(url, "history", "--goal", "tb2-db-wall", "--format", "json"))["entries"]
    assert history[-1]["kind"] == "goal_archive" and "archived" in history[-1]["summary"]
    again = _ok(invoke(url, "goals", "archive", "--goal", "tb2-db-wall", "--format", "json"))
    assert again["changed"] is False and again["archived"] is True
    # a retraction cannot take the mark back; unarchive does
    result = invoke(url, "retract", history[-1]["event_id"], "--reason", "oops")
    assert result.exit_code == 2 and "archive mark" in result.stderr

    # the report's index leaves it out, unless asked for or named
    site = tmp_path / "site"
    assert invoke(url, "report", "--output", str(site)).exit_code == 0
    index = (site / "index.html").read_text()
    assert "tb2-db-wal/index.html" in index and "tb2-db-wall" not in index
    assert not (site / "goals" / "tb2-db-wall").exists()
    everything = tmp_path / "all"
    assert invoke(url, "report", "--output", str(everything), "--include-archived").exit_code == 0
    assert "tb2-db-wall/index.html" in (everything / "index.html").read_text() and ">archived<" in (everything / "index.html").read_text()
    _clean(url)

    assert _ok(invoke(url, "goals", "unarchive", "tb2-db-wall", "--format", "json"))["changed"] is True
    assert _goals(url) == ["tb2-db-wal", "tb2-db-wall"]
    # archiving again after an unarchive is a new event (not the first archive again)
    assert _ok(invoke(url, "goals", "archive", "tb2-db-wall", "--format", "json"))["changed"] is True
    assert _goals(url) == ["tb2-db-wal"]
    _clean(url)
    assert _ok(invoke(url, "replay", "--format", "json"))["rows_changed"] == 0

    # the marks travel with the goal: an export restores, and a merge copies, an archived goal archived
    export = tmp_path / "ledger.ndjson"
    export.write_bytes(invoke(url, "export").stdout_bytes)
    copy = f"sqlite:///{tmp_path / 'copy.sqlite'}"
    assert invoke(copy, "import-ndjson", str(export)).exit_code == 0
    merged = f"sqlite:///{tmp_path / 'merged.sqlite'}"
    assert invoke(merged, "merge", str(export)).exit_code == 0
    for other in (copy, merged):
        assert _goals(other) == ["tb2-db-wal"] and _goals(other, "--all") == ["tb2-db-wal", "tb2-db-wall"]
        _clean(other)

    assert invoke(url, "goals", "archive", "no-such-goal").exit_code == 2
