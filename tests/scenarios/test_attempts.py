"""Attempts inside a goal (issue 27): a team's week, as a user types it, on both backends.

A goal's first case is run to its budget count, then a second case is
preflighted and launched. Each attempt reads as LoopX 0.4.8's
``lifecycle-state`` reads that attempt's own evidence (its answers recorded by
``python -m tests.scenarios.record_attempts``), the goal's current lifecycle is
its latest attempt's, and the history keeps the first attempt's last state.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.helpers import invoke
from tests.scenarios.record_attempts import ANSWERS, FIRST_CASE, LATE_LEDGER, SECOND_PREFLIGHT

LOOPX = json.loads(ANSWERS.read_text())
GOAL = "tb2-db-wal"


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _ingest(url: str, *paths: Path, goal: str = GOAL) -> dict:
    return _json(invoke(url, "ingest", "--goal", goal, *map(str, paths), "--format", "json"))


def _first_case(url: str) -> None:
    """The first case, a piece of evidence at a time as the week produced it (the runs with their comparison)."""
    for kind in ("preflight", "launch", "post-launch"):
        _ingest(url, FIRST_CASE[kind])
    _ingest(url, FIRST_CASE["run"], FIRST_CASE["comparison"])
    _ingest(url, FIRST_CASE["claim-review"])
    _ingest(url, FIRST_CASE["learning-ledger"])


def _attempt_rows(url: str, goal: str = GOAL) -> dict[str, dict]:
    """Every attempt's stored lifecycle-state, by attempt id."""
    view = _json(invoke(url, "show", "--goal", goal, "--projection", "attempt-lifecycle-state", "--format", "json"))
    return {row["key"]: row["payload"] for row in view["projections"].get("attempt-lifecycle-state", [])}


def _current(url: str, goal: str = GOAL) -> dict:
    (row,) = _json(invoke(url, "show", "--goal", goal, "--format", "json"))["projections"]["lifecycle-state"]
    return row["payload"]


def _history(url: str, *args: str) -> list[dict]:
    return _json(invoke(url, "history", "--goal", GOAL, *args, "--format", "json"))["entries"]


def test_a_single_case_is_one_attempt_and_reads_as_loopx_reads_it(migrated_url):
    _first_case(migrated_url)
    assert _attempt_rows(migrated_url) == {"1": LOOPX["first-case"]}
    assert _current(migrated_url) == LOOPX["first-case"]
    assert {e["attempt"] for e in _history(migrated_url)} == {"1"}
    (goal,) = _json(invoke(migrated_url, "goals", "--format", "json"))["goals"]
    assert (goal["attempts"], goal["attempt"], goal["current_phase"]) == (1, "1", "budget_counted")


def test_a_second_preflight_opens_an_attempt_read_from_its_own_evidence_alone(migrated_url):
    _first_case(migrated_url)
    _ingest(migrated_url, SECOND_PREFLIGHT)

    attempts = _attempt_rows(migrated_url)
    assert attempts == {"1": LOOPX["first-case"], "2": LOOPX["second-case-preflighted"]}
    assert _current(migrated_url) == LOOPX["second-case-preflighted"]  # the goal's current lifecycle: its latest attempt's

    # history: the first attempt's budget_counted is its last state; the second attempt starts afresh
    first, second = _history(migrated_url, "--attempt", "1"), _history(migrated_url, "--attempt", "2")
    assert first[-1]["lifecycle"]["current_phase"] == "budget_counted"
    assert [e["kind"] for e in second] == ["preflight", "ingest_batch"]
    assert second[0]["lifecycle"]["current_phase"] == "preflight_ready" and second[0]["phase_changed"]
    assert _history(migrated_url) == first + second

    # show lists the attempts, the latest first, with phase, first blocker and gates
    view = _json(invoke(migrated_url, "show", "--goal", GOAL, "--format", "json"))
    assert [(a["attempt"], a["current_phase"], a["first_blocker"]) for a in view["attempts"]] == [
        ("2", "preflight_ready", ""), ("1", "budget_counted", "ready_for_budget_count"),
    ]
    assert view["attempts"][1]["gates"] == LOOPX["first-case"]["gates"]
    markdown = invoke(migrated_url, "show", "--goal", GOAL, "--format", "markdown").output
    assert "## attempts, the latest first" in markdown and "| 2 " in markdown

    # goals: the attempt count and the latest attempt's phase
    (goal,) = _json(invoke(migrated_url, "goals", "--format", "json"))["goals"]
    assert (goal["attempts"], goal["attempt"], goal["current_phase"]) == (2, "2", "preflight_ready")
    table = invoke(migrated_url, "goals").output
    assert "attempts" in table.splitlines()[0]

    # the table and CSV history carry the attempt of every row
    header, *rows = csv.reader(io.StringIO(invoke(migrated_url, "history", "--goal", GOAL, "--format", "csv").output))
    assert {row[header.index("attempt")] for row in rows} == {"1", "2"}


def test_an_attempt_whose_evidence_is_retracted_keeps_its_place_and_reads_as_no_evidence(migrated_url):
    _first_case(migrated_url)
    (preflight,) = [e for e in _ingest(migrated_url, SECOND_PREFLIGHT)["events"] if e["kind"] == "preflight"]
    assert invoke(migrated_url, "retract", preflight["event_id"], "--reason", "wrong host").exit_code == 0
    assert _attempt_rows(migrated_url) == {"1": LOOPX["first-case"], "2": LOOPX["second-case-preflight-retracted"]}
    assert _current(migrated_url) == LOOPX["second-case-preflight-retracted"]
    assert [e["kind"] for e in _history(migrated_url, "--attempt", "2")] == ["preflight", "ingest_batch", "retraction"]
    assert invoke(migrated_url, "replay").exit_code == 0
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True


def test_an_unknown_attempt_is_refused_naming_the_goals_attempts(migrated_url):
    _first_case(migrated_url)
    refused = invoke(migrated_url, "history", "--goal", GOAL, "--attempt", "7", "--format", "json")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert "--attempt 7 is not an attempt of goal" in refused.stderr and "its only attempt is 1" in refused.stderr


@pytest.mark.parametrize("attempt", ["1"])
def test_history_of_an_attempt_as_of_a_position_stops_there(migrated_url, attempt):
    _first_case(migrated_url)
    _ingest(migrated_url, SECOND_PREFLIGHT)
    first = _history(migrated_url, "--attempt", attempt)
    assert _history(migrated_url, "--attempt", attempt, "--as-of", str(first[2]["position"])) == first[:3]


def _appended(report: dict) -> list[str]:
    """The kinds of the member events an ingest appended."""
    return [e["kind"] for e in report["events"] if e["status"] == "appended" and e["kind"] != "ingest_batch"]


def test_the_week_the_second_case_launched_with_the_first_cases_very_launch_file(migrated_url):
    _first_case(migrated_url)
    # the first attempt's files again, into the first attempt (the open one): nothing new
    for path in FIRST_CASE.values():
        assert _appended(_ingest(migrated_url, path)) == []

    _ingest(migrated_url, SECOND_PREFLIGHT)
    launch = _ingest(migrated_url, FIRST_CASE["launch"])  # byte for byte the first case's launch fixture
    assert _appended(launch) == ["launch"]
    first_launch = next(e for e in _history(migrated_url, "--attempt", "1") if e["kind"] == "launch")
    (second_launch,) = [e for e in _history(migrated_url, "--attempt", "2") if e["kind"] == "launch"]
    assert second_launch["event_id"] != first_launch["event_id"]

    assert _attempt_rows(migrated_url) == {"1": LOOPX["first-case"], "2": LOOPX["second-case-launched"]}
    assert _current(migrated_url) == LOOPX["second-case-launched"]
    assert _history(migrated_url, "--attempt", "1")[-1]["lifecycle"]["current_phase"] == "budget_counted"
    assert second_launch["lifecycle"]["current_phase"] == LOOPX["second-case-launched"]["current_phase"]

    # the same launch file again: the second attempt holds it now
    assert _appended(_ingest(migrated_url, FIRST_CASE["launch"])) == []
    # a learning ledger arriving late joins the open attempt
    assert _appended(_ingest(migrated_url, LATE_LEDGER)) == ["learning-ledger"]
    assert _attempt_rows(migrated_url) == {"1": LOOPX["first-case"], "2": LOOPX["second-case-late-ledger"]}
    (goal,) = _json(invoke(migrated_url, "goals", "--format", "json"))["goals"]
    assert (goal["attempts"], goal["current_phase"]) == (2, LOOPX["second-case-late-ledger"]["current_phase"])

    # what an ingest stored is what a replay computes, and the ledger verifies (the new launch's id included)
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True


def test_the_second_cases_preflight_and_launch_in_one_ingest(migrated_url):
    _first_case(migrated_url)
    assert _appended(_ingest(migrated_url, SECOND_PREFLIGHT, FIRST_CASE["launch"])) == ["preflight", "launch"]
    assert _attempt_rows(migrated_url) == {"1": LOOPX["first-case"], "2": LOOPX["second-case-launched"]}
    assert _appended(_ingest(migrated_url, SECOND_PREFLIGHT, FIRST_CASE["launch"])) == []


def _ingest_into(url: str, attempt: str, *paths: Path) -> dict:
    return _json(invoke(url, "ingest", "--goal", GOAL, "--attempt", attempt, *map(str, paths), "--format", "json"))


def _replay_changes_nothing_and_audit_is_clean(url: str) -> None:
    assert _json(invoke(url, "replay", "--format", "json"))["rows_changed"] == 0
    assert _json(invoke(url, "audit", "--format", "json"))["ok"] is True


def test_a_batch_named_into_an_attempt_joins_it_whatever_the_rule_says(migrated_url):
    """ingest --attempt ID (docs/linking.md, "Naming the attempt"): into an earlier attempt while the next is open, into the
    open one, and into a new one, which it opens; each attempt still reads as LoopX reads its own evidence."""
    _first_case(migrated_url)
    _ingest(migrated_url, SECOND_PREFLIGHT)  # the rule opens attempt 2

    # the first case's launch file again, named into the first attempt, which holds it: nothing new
    assert _appended(_ingest_into(migrated_url, "1", FIRST_CASE["launch"])) == []
    # a learning ledger arriving late, named into the first attempt: the first attempt's row changes, not the open one's
    assert _appended(_ingest_into(migrated_url, "1", LATE_LEDGER)) == ["learning-ledger"]
    assert _attempt_rows(migrated_url) == {"1": LOOPX["first-case-late-ledger"], "2": LOOPX["second-case-preflighted"]}
    assert _current(migrated_url) == LOOPX["second-case-preflighted"]
    # history: the late ledger is listed with attempt 1, after attempt 2's preflight, and not with attempt 2
    assert [e["kind"] for e in _history(migrated_url, "--attempt", "1")][-2:] == ["learning-ledger", "ingest_batch"]
    assert [e["kind"] for e in _history(migrated_url, "--attempt", "2")] == ["preflight", "ingest_batch"]
    assert [e["attempt"] for e in _history(migrated_url)][-4:] == ["2", "2", "1", "1"]
    _replay_changes_nothing_and_audit_is_clean(migrated_url)
    # and again: the same bytes in the same attempt append nothing
    assert _appended(_ingest_into(migrated_url, "1", LATE_LEDGER)) == []

    # un-named evidence still joins the most recently opened attempt
    assert _appended(_ingest(migrated_url, FIRST_CASE["launch"])) == ["launch"]
    assert _attempt_rows(migrated_url)["2"] == LOOPX["second-case-launched"]
    # the same launch file named into a new attempt: a new observation there, which opens it and is the goal's latest
    assert _appended(_ingest_into(migrated_url, "3", FIRST_CASE["launch"])) == ["launch"]
    assert _attempt_rows(migrated_url) == {
        "1": LOOPX["first-case-late-ledger"], "2": LOOPX["second-case-launched"], "3": LOOPX["third-case-launched"],
    }
    assert _current(migrated_url) == LOOPX["third-case-launched"]
    (goal,) = _json(invoke(migrated_url, "goals", "--format", "json"))["goals"]
    assert (goal["attempts"], goal["attempt"]) == (3, "3")
    # the open attempt named: a preflight named into it stays in it (the rule would open a fourth)
    assert _appended(_ingest_into(migrated_url, "3", SECOND_PREFLIGHT)) == ["preflight"]
    assert set(_attempt_rows(migrated_url)) == {"1", "2", "3"}
    _replay_changes_nothing_and_audit_is_clean(migrated_url)


def test_a_late_learning_ledger_named_into_an_attempt_whose_preflight_was_retracted(migrated_url):
    """Named attempts interleaved with a retraction: the goal is folded whole then, and the named batch stays where it was named."""
    _first_case(migrated_url)
    (preflight,) = [e for e in _ingest(migrated_url, SECOND_PREFLIGHT)["events"] if e["kind"] == "preflight"]
    assert _appended(_ingest_into(migrated_url, "1", LATE_LEDGER)) == ["learning-ledger"]
    assert invoke(migrated_url, "retract", preflight["event_id"], "--reason", "wrong host").exit_code == 0
    assert _attempt_rows(migrated_url) == {"1": LOOPX["first-case-late-ledger"], "2": LOOPX["second-case-preflight-retracted"]}
    _replay_changes_nothing_and_audit_is_clean(migrated_url)


@pytest.mark.parametrize("attempt", ["0", "01", "-1", "two", "1.0", "1234567890", ""])
def test_an_attempt_that_is_no_attempt_id_is_refused_and_nothing_written(migrated_url, attempt):
    _first_case(migrated_url)
    before = _json(invoke(migrated_url, "info", "--format", "json"))
    refused = invoke(migrated_url, "ingest", "--goal", GOAL, "--attempt", attempt, str(SECOND_PREFLIGHT))
    assert refused.exit_code == 2 and "--attempt" in refused.output and "not an attempt id" in refused.output
    assert _json(invoke(migrated_url, "info", "--format", "json")) == before


def test_an_attempt_number_that_would_skip_the_next_one_is_refused_and_nothing_written(migrated_url, tmp_path):
    """A typo (9 for 2) must not open attempt 9 and leave 2-8 unopened: the refusal names the next number."""
    _first_case(migrated_url)
    before = _json(invoke(migrated_url, "info", "--format", "json"))
    refused = invoke(migrated_url, "ingest", "--goal", GOAL, "--attempt", "9", str(SECOND_PREFLIGHT))
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"benchledger: attempt 9: the next attempt of goal {GOAL} is 2, so 9 would skip 2-8; name 2 to open it, "
        "or an attempt the goal has; nothing was written\n"
    )
    # the same in an ingest-batches line, whose earlier lines are not written either (one transaction)
    lines = tmp_path / "batches.ndjson"
    lines.write_text(_batch_line(LATE_LEDGER, "learning-ledger", attempt="1") + "\n" + _batch_line(SECOND_PREFLIGHT, "preflight", attempt="3") + "\n")
    refused = invoke(migrated_url, "ingest-batches", str(lines))  # (refused while the file is validated: exit 1, as every bad line)
    assert refused.exit_code == 1 and "attempt 3: the next attempt of goal tb2-db-wal is 2, so 3 would skip 2;" in refused.stderr
    assert _json(invoke(migrated_url, "info", "--format", "json")) == before
    # the next number opens it
    assert _appended(_ingest_into(migrated_url, "2", SECOND_PREFLIGHT)) == ["preflight"]


def test_a_repeated_lifecycle_file_is_the_stored_event_and_the_report_says_how_to_record_a_new_attempt(migrated_url):
    """A repeated file is a no-op (a user's most common mistake), yet a byte-identical preflight may start a new attempt:
    only the user knows, and the report names the option and the number that would record it."""
    _first_case(migrated_url)
    again = invoke(migrated_url, "ingest", "--goal", GOAL, str(FIRST_CASE["preflight"]))
    assert again.exit_code == 0
    assert "- note: the preflight record(s) are stored already, byte for byte" in again.stdout
    assert again.stdout.rstrip().splitlines()[5].endswith("if they start a new attempt, name it: --attempt 2")
    # named, it is recorded there; the same again in that attempt is a no-op with no such note
    assert _appended(_ingest_into(migrated_url, "2", FIRST_CASE["preflight"])) == ["preflight"]
    assert _json(invoke(migrated_url, "ingest", "--goal", GOAL, "--attempt", "2", str(FIRST_CASE["preflight"]), "--format", "json")).get("notes", []) == []
    # a run stored already is the same document in any attempt: no note
    assert _json(invoke(migrated_url, "ingest", "--goal", GOAL, str(FIRST_CASE["run"]), "--format", "json")).get("notes", []) == []


def _batch_line(path: Path, kind: str, **fields) -> str:
    return json.dumps({"goal_id": GOAL, "kind": kind, "artifacts": [json.loads(path.read_text())], **fields})


def test_ingest_batches_names_the_attempt_of_a_line(migrated_url, tmp_path):
    """An "attempt" key of an ingest-batches line is --attempt: the same placement, the same identity, on replay too."""
    _first_case(migrated_url)
    _ingest(migrated_url, SECOND_PREFLIGHT)
    lines = tmp_path / "batches.ndjson"
    lines.write_text(_batch_line(LATE_LEDGER, "learning-ledger", attempt="1") + "\n" + _batch_line(FIRST_CASE["launch"], "launch", attempt=3) + "\n")
    report = _json(invoke(migrated_url, "ingest-batches", str(lines), "--format", "json"))
    assert (report["appended"], report["batches_appended"]) == (2, 2)
    assert _attempt_rows(migrated_url) == {
        "1": LOOPX["first-case-late-ledger"], "2": LOOPX["second-case-preflighted"], "3": LOOPX["third-case-launched"],
    }
    _replay_changes_nothing_and_audit_is_clean(migrated_url)
    # the same file again appends nothing: each line's bytes are in its attempt already
    assert _json(invoke(migrated_url, "ingest-batches", str(lines), "--format", "json"))["appended"] == 0


@pytest.mark.parametrize("attempt", ["0", True, 1.5, ["1"], "x"])
def test_an_ingest_batches_line_naming_no_attempt_id_is_refused_with_its_line(migrated_url, tmp_path, attempt):
    _first_case(migrated_url)
    before = _json(invoke(migrated_url, "info", "--format", "json"))
    lines = tmp_path / "batches.ndjson"
    lines.write_text(_batch_line(SECOND_PREFLIGHT, "preflight") + "\n" + _batch_line(LATE_LEDGER, "learning-ledger", attempt=attempt) + "\n")
    refused = invoke(migrated_url, "ingest-batches", str(lines), "--format", "json")
    assert refused.exit_code == 1
    (error,) = json.loads(refused.stdout)["errors"]
    assert error["line"] == 2 and "attempt, when given, must be an attempt id" in error["error"]
    assert _json(invoke(migrated_url, "info", "--format", "json")) == before


def test_the_library_refuses_an_attempt_that_is_no_attempt_id_before_anything_is_read(migrated_url):
    import benchledger.ledger as library
    from benchledger.errors import InvalidInput

    _first_case(migrated_url)
    with library.open(migrated_url) as ledger:
        before = ledger.info().as_dict()
        for attempt in ("0", 0, True, "2 "):  # (an int from 1 is an attempt id, as an ingest-batches line's "attempt": 2 is)
            with pytest.raises(InvalidInput, match="is not an attempt id"):
                ledger.ingest(GOAL, [str(LATE_LEDGER)], attempt=attempt)
        assert ledger.info().as_dict() == before
        # a valid one names the attempt, as --attempt does
        assert [m.kind for m in ledger.ingest(GOAL, [str(LATE_LEDGER)], attempt="1").members() if m.status == "appended"] == ["learning-ledger"]
    assert _attempt_rows(migrated_url)["1"] == LOOPX["first-case-late-ledger"]
