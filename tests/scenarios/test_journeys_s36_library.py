"""The second walk (session 36): the library as a notebook user types it, on both backends.

docs/python-api.md promises that every error a caller can cause is a
``BenchledgerError``. The walk met a closed ledger that silently opened new
connections (and wrote), a path or goal id given alone that was iterated into
its characters (``ingest("g", "/x.json")`` read the filesystem root ``/``), a
negative ``limit`` that dropped the last runs, and raw ``TypeError`` /
``AttributeError`` / driver errors for a ``datetime`` ``since``, a string
``limit``, a list as a goal, a string seed or no resamples, a non-string URL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import benchledger
from benchledger.errors import BenchledgerError, InvalidInput, LedgerUnavailable

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
RUNS = [str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
GOAL = "demo-db-wal-recovery"


@pytest.fixture
def demo(migrated_url):
    with benchledger.open(migrated_url) as ledger:
        assert ledger.ingest(GOAL, RUNS).ok
    return migrated_url


def test_a_closed_ledger_says_it_is_closed_and_writes_nothing(demo):
    ledger = benchledger.open(demo)
    events = ledger.event_count()
    ledger.close()
    for call in (
        ledger.info, lambda: list(ledger.goals()), ledger.runs, ledger.compare,
        lambda: ledger.ingest("other-goal", [str(DEMO / "01-preflight.json")], kind="preflight"),
    ):
        with pytest.raises(LedgerUnavailable, match=r"this ledger is closed .*benchledger\.open\(url\) opens it again"):
            call()
    ledger.close()  # (closing twice is harmless)
    with benchledger.open(demo) as again:
        assert again.event_count() == events and not again.has_goal("other-goal")
    with pytest.raises(LedgerUnavailable, match="closed"):
        again.show(GOAL)


def test_one_path_or_one_goal_given_alone_is_that_one_not_its_characters(demo, tmp_path):
    with benchledger.open(demo) as ledger:
        alone = ledger.ingest(GOAL, RUNS[0], dry_run=True)  # (it read "/", the filesystem root, one character at a time)
        assert alone.ok and alone.errors == () and [m.status for b in alone.batches for m in b.members] == ["duplicate"]
        assert benchledger.ledger.load_artifacts(Path(RUNS[0]))[0].kind == "run"
        assert ledger.compare(goal_ids=GOAL).as_dict() == ledger.compare(goal_ids=[GOAL]).as_dict()
        with pytest.raises(InvalidInput, match="goal_ids must be a list"):
            ledger.compare(goal_ids=5)


def test_a_negative_or_a_text_limit_is_refused_not_a_slice(demo):
    with benchledger.open(demo) as ledger:
        every = len(ledger.runs())
        assert every == 2 and len(ledger.runs(limit=1)) == 1 and len(ledger.run_pairs(limit=0)) == 0
        for limit in (-1, "5", 1.5, True):
            for listing in (ledger.runs, ledger.current_runs, ledger.run_pairs):
                with pytest.raises(InvalidInput, match="limit must be a whole number of rows"):
                    listing(limit=limit)


def test_since_until_and_as_of_take_an_int_position_or_a_datetime(demo):
    with benchledger.open(demo) as ledger:
        everything = ledger.history(GOAL).as_dict()["entries"]
        assert len(ledger.history(GOAL, since=2).as_dict()["entries"]) == len(everything) - 1
        moment = datetime(2000, 1, 1, tzinfo=UTC)
        assert len(ledger.history(GOAL, since=moment, until=datetime(2999, 1, 1)).as_dict()["entries"]) == len(everything)
        assert ledger.show(GOAL, as_of=2).as_of_position == 2
        assert ledger.compare(as_of=1).as_dict()["scope"]["as_of_position"] == 1
        with pytest.raises(InvalidInput, match=r"--since must be a position or an ISO-8601 time \(an int, a str or a datetime\), not list"):
            ledger.history(GOAL, since=[1])


def test_wrong_types_are_the_projects_error_naming_what_was_expected(demo):
    with benchledger.open(demo) as ledger:
        with pytest.raises(InvalidInput, match=r"a goal is named by its id \(a str\), not by a list"):
            ledger.run_pairs(goal_id=[GOAL])
        with pytest.raises(InvalidInput, match="goal_id must be a goal's name"):
            ledger.ingest(None, RUNS, dry_run=True)
        for options, wrong in (({"seed": "a"}, "seed"), ({"seed": -1}, "seed"), ({"resamples": 0}, "resamples"), ({"resamples": "10"}, "resamples")):
            with pytest.raises(InvalidInput, match=f"{wrong} must be a whole number"):
                ledger.compare(**options)
    with pytest.raises(InvalidInput, match="the ledger URL must be a str"):
        benchledger.open(5)
    assert issubclass(InvalidInput, BenchledgerError)


def test_history_of_an_attempt_that_is_no_attempt_id_is_the_projects_error(demo):
    """`Ledger.history(goal, attempt="abc")` raised int()'s ValueError: the check the CLI's --attempt makes is the library's
    too, one line naming what an attempt id is; an attempt the goal does not hold names the ones it does."""
    with benchledger.open(demo) as ledger:
        for bad in ("abc", "0", "01", "-1"):
            with pytest.raises(InvalidInput, match=f"'{bad}' is not an attempt id: a positive whole number"):
                list(ledger.history(GOAL, attempt=bad))
        with pytest.raises(InvalidInput, match="--attempt 9 is not an attempt of goal 'demo-db-wal-recovery': its only attempt is 1"):
            list(ledger.history(GOAL, attempt="9"))
        assert list(ledger.history(GOAL, attempt="1"))
