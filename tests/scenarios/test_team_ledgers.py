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
