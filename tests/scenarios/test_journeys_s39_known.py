"""Session 39, defects noticed in session 38 and left then, as a user meets them, on both backends.

* `benchledger ingest GOAL run.json` into a goal `goals archive` hid: appended, exit 0, and not a word that
  `goals` and the report's index leave the goal out, and with it what was just appended.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import invoke

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
BASELINE, TREATMENT, COMPARISON = (str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json"))

ARCHIVED_NOTE = (
    "benchledger: note: goal 'tb2-db-wal' is archived: `goals` and the report's index (its pass rates and comparisons) "
    "leave it out, and with it what this {command} {did} (`goals --include-archived` and `report --include-archived` "
    "show it; `goals unarchive tb2-db-wal` lists it again)"
)


def _listed(url: str) -> list[str]:
    return [g["goal_id"] for g in json.loads(invoke(url, "goals", "--format", "json").stdout)["goals"]]


def test_ingesting_into_an_archived_goal_says_it_stays_hidden_and_how_to_see_it(migrated_url, tmp_path):
    assert invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", BASELINE).exit_code == 0
    assert invoke(migrated_url, "ingest", "--goal", "other-goal", BASELINE).exit_code == 0
    assert invoke(migrated_url, "goals", "archive", "tb2-db-wal").exit_code == 0

    dry = invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", "--dry-run", TREATMENT)
    assert dry.exit_code == 0, dry.output
    assert dry.stderr.splitlines() == [ARCHIVED_NOTE.format(command="ingest", did="would append")]

    done = invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", TREATMENT, "--format", "json")
    assert done.exit_code == 0, done.output
    assert done.stderr.splitlines() == [ARCHIVED_NOTE.format(command="ingest", did="appended")]
    assert json.loads(done.stdout)["archived_goals"] == ["tb2-db-wal"]
    assert _listed(migrated_url) == ["other-goal"]  # (what the note says: the goal, and what was appended, stay hidden)

    # nothing appended (the same file again): nothing to say; a goal not archived: nothing either
    again = invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", TREATMENT, "--format", "json")
    assert again.exit_code == 0 and again.stderr == "" and "archived_goals" not in json.loads(again.stdout)
    plain = invoke(migrated_url, "ingest", "--goal", "other-goal", TREATMENT)
    assert plain.exit_code == 0 and plain.stderr == ""

    # ingest-batches: a line into the archived goal, one into another
    run = json.loads(Path(COMPARISON).read_text())
    lines = [{"goal_id": "tb2-db-wal", "kind": None, "artifacts": [run]}, {"goal_id": "other-goal", "kind": None, "artifacts": [run]}]
    path = tmp_path / "batches.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    bulk = invoke(migrated_url, "ingest-batches", "--format", "json", str(path))
    assert bulk.exit_code == 0, bulk.output
    assert bulk.stderr.splitlines() == [ARCHIVED_NOTE.format(command="ingest-batches", did="appended")]
    assert json.loads(bulk.stdout)["archived_goals"] == ["tb2-db-wal"]

    # unarchived, it is listed with everything appended meanwhile, and its ingests say nothing
    assert invoke(migrated_url, "goals", "unarchive", "tb2-db-wal").exit_code == 0
    assert _listed(migrated_url) == ["other-goal", "tb2-db-wal"]
    later = invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", str(DEMO / "01-preflight.json"), "--kind", "preflight")
    assert later.exit_code == 0 and later.stderr == ""
