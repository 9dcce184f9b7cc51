"""The library API (``benchledger.open`` -> ``Ledger``): what the commands call, usable without click, with their rules."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import benchledger
import benchledger.ledger as package
from benchledger.errors import CHECK_FAILED, BenchledgerError, UnknownGoal
from benchledger.ledger import api, results
from tests.helpers import invoke

DEMO = Path(__file__).parents[2] / "examples" / "demo"
RUNS = [str(DEMO / name) for name in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]


def test_every_public_name_resolves_and_the_root_offers_open_and_ledger():
    assert set(api.__all__) <= set(package.__all__)
    assert all(getattr(package, name) is not None for name in package.__all__)
    assert benchledger.open is api.open and benchledger.Ledger is api.Ledger
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        benchledger.no_such_name  # noqa: B018


@pytest.mark.parametrize(
    "statement",
    ["import benchledger.errors", "import benchledger.ledger", "import benchledger.ledger.api", "import benchledger; benchledger.Ledger"],
)
def test_importing_the_api_loads_no_database_library_nor_the_ledger_rooms(statement):
    """The commands import the facade on every call: the rooms (and SQLAlchemy) load when a method needs them."""
    probe = f"import sys; {statement}; print(sorted(m for m in sys.modules if m.startswith(('sqlalchemy', 'benchledger.ledger.service', 'benchledger.ledger.read'))))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_a_library_caller_gets_the_commands_rules(migrated_url, tmp_path):
    with benchledger.open(migrated_url) as ledger:
        outcome = ledger.ingest("goal-1", RUNS, source="library")
        assert outcome.ok and [b.appended_count for b in outcome.batches] == [3]
        assert [goal.goal_id for goal in ledger.goals()] == ["goal-1"]
        assert ledger.audit().ok is True
        assert sorted(run.score_status for run in ledger.runs(goal_id="goal-1")) == ["failed", "passed"]
        with pytest.raises(UnknownGoal, match="no goal 'nope'"):
            ledger.history("nope")
        # A refused document writes nothing, and says which and why.
        (tmp_path / "cut.json").write_text('{"schema_version": "benchmark_run_v0"')
        refused = ledger.ingest("goal-2", [RUNS[0], str(tmp_path / "cut.json")])
        assert not refused.ok and refused.errors[0][0] == str(tmp_path / "cut.json") and ledger.goal_ids() == ["goal-1"]
        # The store's guard holds for library callers too: an input holding a local path is not kept.
        comparison = next(a for a in api.load_artifacts(RUNS) if a.kind == "comparison")
        leaking = dataclasses.replace(comparison, payload={**comparison.payload, "comparison_id": "/Users/me/notes.txt"})
        with pytest.raises(BenchledgerError, match=r"06-comparison.json: \$\.comparison_id of this comparison holds a local path") as kept:
            ledger.keep_review("goal-2", "review-claim", [leaking], {})
        assert kept.value.exit_code == CHECK_FAILED
        assert not ledger.has_goal("goal-2")


def test_load_artifacts_names_every_refused_document(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(BenchledgerError, match=r"bad\.json: .*Expecting property name"):
        api.load_artifacts([*RUNS, str(tmp_path / "bad.json")])


def test_as_dict_is_what_the_command_prints_with_format_json(migrated_url):
    """The CLI prints the facade's results; a library caller gets the very same documents."""
    assert invoke(migrated_url, "ingest", "--goal", "g", *RUNS).exit_code == 0
    commands = {
        ("goals",): lambda ledger: ledger.goals(),
        ("show", "--goal", "g"): lambda ledger: ledger.show("g"),
        ("show", "--goal", "g", "--as-of", "2", "--projection", "review-runner-invariants"): lambda ledger: ledger.show(
            "g", as_of="2", projection="review-runner-invariants"
        ),
        ("history", "--goal", "g"): lambda ledger: ledger.history("g"),
        ("runs",): lambda ledger: ledger.runs(),
        ("runs", "--current"): lambda ledger: ledger.current_runs(),
        ("runs", "--paired"): lambda ledger: ledger.run_pairs(),
        ("runs", "--summary"): lambda ledger: ledger.pass_rates(),
        ("status",): lambda ledger: ledger.status(),
        ("audit",): lambda ledger: ledger.audit(),
    }
    with benchledger.open(migrated_url) as ledger:
        for argv, answer in commands.items():
            printed = invoke(migrated_url, *argv, "--format", "json")
            assert printed.exit_code == 0, (argv, printed.output)
            assert json.loads(printed.stdout) == answer(ledger).as_dict(), argv


def test_a_history_reads_the_goal_as_it_was_when_it_was_opened(migrated_url):
    """Its entries stream from one snapshot: what is appended while it is open is not in it."""
    with benchledger.open(migrated_url) as ledger, benchledger.open(migrated_url) as writer:
        writer.ingest("goal-a", RUNS[:1])
        with ledger.history("goal-a") as history:
            writer.ingest("goal-a", RUNS[1:2])
            assert [entry.kind for entry in history] == ["run", "ingest_batch"]
        assert [entry.kind for entry in ledger.history("goal-a")] == ["run", "ingest_batch"] * 2


def test_a_listing_read_to_its_end_releases_its_snapshot(migrated_url):
    with benchledger.open(migrated_url) as ledger:
        ledger.ingest("goal-a", RUNS[:1])
        released = []
        listing = ledger.goals()
        listing._close = lambda close=listing._close: released.append(close())
        assert [goal.goal_id for goal in listing] == ["goal-a"] and released == [None]
        listing.close()
        assert released == [None]  # (closed once)


def test_results_are_frozen():
    info = results.LedgerInfo("sqlite://", "sqlite", "0006", "0006", 0, 0, None, None, "0")
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.events = 1  # type: ignore[misc]
    assert list(info.as_dict()) == [field.name for field in dataclasses.fields(info)]
