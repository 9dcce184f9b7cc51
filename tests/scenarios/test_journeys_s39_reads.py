"""The read side walked as a demanding new user (session 39), on both backends.

Each test is a command line a user typed, what it printed, and what is right.
"""

from __future__ import annotations

from tests.helpers import invoke
from tests.report_helpers import ingest_demo

GOAL = "demo-db-wal-recovery"


def test_show_a_page_past_a_projections_rows_says_there_is_none_there_not_rows_0_to_100(migrated_url):
    # `show --projection lifecycle-step --offset 100 --limit 2 --format markdown` on a goal of 6 steps printed
    # "lifecycle-step: rows 0-100 of 6.": rows that do not exist, and a range that ends where it should start.
    ingest_demo(migrated_url, GOAL)
    steps = invoke(migrated_url, "show", "--goal", GOAL, "--projection", "lifecycle-step", "--offset", "3", "--limit", "2",
                   "--format", "markdown")
    assert steps.exit_code == 0 and "lifecycle-step: rows 4-5 of 6.\n" in steps.stdout

    past = invoke(migrated_url, "show", "--goal", GOAL, "--projection", "lifecycle-step", "--offset", "100", "--limit", "2",
                  "--format", "markdown")
    assert past.exit_code == 0
    assert "rows 0-100" not in past.stdout
    assert "lifecycle-step: no row after --offset 100: the goal holds 6.\n" in past.stdout
    assert "## lifecycle-step" not in past.stdout
    for fmt in ("markdown", "json"):  # the note goes to stderr, so a JSON reader is told too
        told = invoke(migrated_url, "show", "--goal", GOAL, "--projection", "lifecycle-step", "--offset", "6", "--format", fmt)
        assert told.exit_code == 0
        assert told.stderr == (f"benchledger: note: --offset 6 is past the 6 row(s) of projection lifecycle-step of goal '{GOAL}' "
                               "(--offset 0 to 5 start within them)\n")

    none = invoke(migrated_url, "show", "--goal", GOAL, "--projection", "review-adapter-kwargs", "--format", "markdown")
    assert none.exit_code == 0
    assert "rows 0-0" not in none.stdout and "review-adapter-kwargs: no row: the goal holds none.\n" in none.stdout
