"""The read side walked as a demanding new user (session 39), on both backends.

Each test is a command line a user typed, what it printed, and what is right.
"""

from __future__ import annotations

import json
import re

import pytest

import benchledger
from benchledger.errors import InvalidInput
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


def test_history_until_a_day_takes_in_the_whole_day_as_its_help_says(migrated_url):
    # `history --help` said --until TIME reads "to the second: that whole second", but `--until 2026-12-06` takes in the
    # whole day (docs/cli.md: a TIME without a fraction names a period, as --as-of's does); the help says so now.
    ingest_demo(migrated_url, GOAL)
    everything = json.loads(invoke(migrated_url, "history", "--goal", GOAL, "--format", "json").stdout)["entries"]
    day = everything[0]["recorded_at"][:10]
    assert all(entry["recorded_at"].startswith(day) for entry in everything)  # (the demo is ingested within seconds)
    until_the_day = invoke(migrated_url, "history", "--goal", GOAL, "--until", day, "--format", "json")
    assert until_the_day.exit_code == 0 and json.loads(until_the_day.stdout)["entries"] == everything
    assert invoke(migrated_url, "history", "--goal", GOAL, "--until", "2000-01-01", "--format", "json").stdout.count('"position"') == 0

    told = " ".join(invoke(migrated_url, "history", "--help").stdout.split())
    assert "to the second: that whole second" not in told
    assert ("recorded (recorded_at) at or before TIME (a TIME without a fraction takes in the whole period it names, as --as-of: "
            "2026-12-04 is up to its last microsecond)") in told


@pytest.mark.parametrize("limit", ["3", -1, 2.5, True])
def test_the_library_refuses_a_limit_that_is_no_whole_number_in_goals_and_history_as_in_its_other_listings(migrated_url, limit):
    # `ledger.history(goal, limit="3")` and `ledger.goals(limit="3")` raised TypeError (a bug's exit 70 in a script, where
    # runs(limit="3") raises InvalidInput), and limit=-1, 2.5 or True read some rows instead (history(limit=-1) one entry,
    # goals(limit=2.5) two goals): docs/python-api.md, "limit is None or a whole number of rows".
    ingest_demo(migrated_url, GOAL)
    with benchledger.open(migrated_url) as ledger:
        with pytest.raises(InvalidInput, match=rf"^limit must be a whole number of rows \(1 or more\) or None, not {re.escape(repr(limit))}$"):
            ledger.history(GOAL, limit=limit)
        with pytest.raises(InvalidInput, match=rf"^limit must be a whole number of rows \(0 or more\) or None, not {re.escape(repr(limit))}$"):
            ledger.goals(limit=limit)
        assert [entry.position for entry in ledger.history(GOAL, limit=2)] == [entry.position for entry in ledger.history(GOAL)][-2:]
        assert [goal.goal_id for goal in ledger.goals(limit=1)] == [GOAL]


def test_the_library_refuses_history_limit_0_as_the_command_line_does(migrated_url):
    # `history --limit 0` is refused (x>=1); `ledger.history(goal, limit=0)` printed the goal's last entry.
    ingest_demo(migrated_url, GOAL)
    assert invoke(migrated_url, "history", "--goal", GOAL, "--limit", "0").exit_code == 2
    with benchledger.open(migrated_url) as ledger, pytest.raises(InvalidInput, match=r"\(1 or more\) or None, not 0$"):
        ledger.history(GOAL, limit=0)


def test_prove_names_an_event_as_retract_does_by_its_position_or_a_prefix_of_its_id(migrated_url):
    # `benchledger prove @5` (history's pos column, as `retract @5` takes it) said "no event '@5' in this ledger", which
    # holds an event at position 5; a prefix of an id (`prove 2bdb915b`) was refused the same way.
    ingest_demo(migrated_url, GOAL)
    entries = json.loads(invoke(migrated_url, "history", "--goal", GOAL, "--format", "json").stdout)["entries"]
    fifth = entries[4]
    by_id = invoke(migrated_url, "prove", fifth["event_id"], "--format", "json")
    assert by_id.exit_code == 0
    for reference in (f"@{fifth['position']}", fifth["event_id"][:8], fifth["event_id"][:8].upper()):
        named = invoke(migrated_url, "prove", reference, "--format", "json")
        assert named.exit_code == 0, named.output
        assert named.stdout == by_id.stdout
    assert "(goal demo-db-wal-recovery, position 5, leaf 4)" in invoke(migrated_url, "prove", "@5").stdout

    for reference, said in (("@99", "@99: no event at position 99"), ("5", "'5': not an event id, a prefix of one (at least 4 "
                            "characters of 0-9, a-f and -) or @POSITION (position 5: @5)")):
        refused = invoke(migrated_url, "prove", reference)
        assert refused.exit_code == 2 and refused.stdout == ""
        assert refused.stderr == (f"benchledger: cannot prove: {said} (`benchledger history --goal GOAL --wide` lists a goal's "
                                  "event ids and positions)\n")
    with benchledger.open(migrated_url) as ledger:
        assert ledger.prove([f"@{fifth['position']}"]).as_dict() == json.loads(by_id.stdout)


def _visible_text(html: str) -> str:
    """A page's text as a reader sees it: no tags, no attributes (a title shows only on hover), spaces collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_written_reports_later_comparison_page_says_why_its_reviews_have_no_link(migrated_url, tmp_path, monkeypatch):
    # `benchledger report` writes the reviews of the comparisons a goal's first page shows; batches-2.html listed the
    # others' "claim · learning · verifier" greyed, without a link, and said nowhere on the page why (a hover title only),
    # where docs/cli.md says the later pages say that `benchledger serve` shows them.
    from benchledger.ledger.read import report_views
    from tests.report_helpers import DEMO

    monkeypatch.setattr(report_views, "BATCHES_PAGE_SIZE", 2)
    baseline, treatment, comparison = (json.loads((DEMO / name).read_text()) for name in
                                       ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json"))
    for n in range(3):
        files = []
        for name, artifact in (("baseline", baseline), ("treatment", treatment), ("comparison", comparison)):
            edited = {**artifact, "comparison_id": f"pair-{n}"} if name == "comparison" else {**artifact, "job_name": f"{artifact['job_name']}-{n}"}
            (tmp_path / f"{name}-{n}.json").write_text(json.dumps(edited))
            files.append(str(tmp_path / f"{name}-{n}.json"))
        assert invoke(migrated_url, "ingest", "--goal", GOAL, *files).exit_code == 0
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    said = "This written report holds the reviews of the comparisons on the goal's first page; benchledger serve shows every one."
    later = _visible_text((site / "goals" / GOAL / "batches-2.html").read_text())
    assert "3 comparison(s), the latest first" in later and "claim · learning · verifier" in later
    assert said in later
    assert said not in _visible_text((site / "goals" / GOAL / "index.html").read_text())  # its reviews are linked


def _table_column(text: str, header: str, rows: int) -> list[str]:
    """The cells of the column ``header`` in the first ``rows`` rows of a printed table (its columns read off the rule
    under the headers; the last runs to the line's end)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    spans, at = [], 0
    for dashes in lines[rule].split("  "):
        spans.append((at, at + len(dashes)))
        at += len(dashes) + 2
    printed = [lines[rule - 1][a:b].strip() for a, b in spans]  # (a header may be cut: "treatment a…")
    a, b = next(span for name, span in zip(printed, spans) if name == header or (name.endswith("…") and header.startswith(name[:-1])))
    return [line[a:b].strip() for line in lines[rule + 1 : rule + 1 + rows]]


@pytest.mark.parametrize("columns", ["100", "120"])
def test_a_table_cut_to_the_terminal_still_tells_its_arms_apart(migrated_url, columns):
    # `runs --summary` in a 100-column terminal printed codex-acp-blind-loop-baseline, codex-app-server-goal-baseline and
    # codex-goal-mode-baseline as the same "code…ine" (compare's arms as "co…e" and "…-…t"), where docs/cli.md says a cut
    # cell keeps what tells it apart: a column that names what a row is about (benchmark, case, arm) is never cut so far
    # that two of its values print alike.
    from tests.report_helpers import PUBLIC_LEDGER

    assert invoke(migrated_url, "import-loopx", str(PUBLIC_LEDGER), "--goal", "loopx-public").exit_code == 0
    terminal = {"COLUMNS": columns}
    rates = json.loads(invoke(migrated_url, "runs", "--summary", "--format", "json").stdout)["pass_rates"]
    summary = invoke(migrated_url, "runs", "--summary", env=terminal).stdout
    assert len(set(_table_column(summary, "arm", len(rates)))) == len({rate["arm"] for rate in rates}), summary
    compared = json.loads(invoke(migrated_url, "compare", "--format", "json").stdout)["comparisons"]
    table = invoke(migrated_url, "compare", env=terminal).stdout
    for side in ("baseline arm", "treatment arm"):
        assert len(set(_table_column(table, side, len(compared)))) == len({c[side.replace(" ", "_")] for c in compared}), table


def test_compare_of_a_goal_named_twice_names_it_once_in_its_scope(migrated_url):
    # `compare --goal G --goal G --format json` said "goals": ["G", "G"] (the numbers were one goal's); as report --goal
    # G --goal G does, the scope names each goal once.
    ingest_demo(migrated_url, GOAL)
    once = json.loads(invoke(migrated_url, "compare", "--goal", GOAL, "--format", "json").stdout)
    twice = invoke(migrated_url, "compare", "--goal", GOAL, "--goal", GOAL, "--format", "json")
    assert twice.exit_code == 0 and json.loads(twice.stdout) == once and once["scope"]["goals"] == [GOAL]
    with benchledger.open(migrated_url) as ledger:
        assert ledger.compare(goal_ids=[GOAL, GOAL]).as_dict() == once
