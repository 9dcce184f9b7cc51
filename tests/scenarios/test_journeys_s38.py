"""The walk of session 38, on both backends.

A notebook user reads the first goal of a listing and closes the ledger (``next(iter(ledger.goals()))``, then
``ledger.close()`` or the end of its ``with``): the listing kept its snapshot's connection until it was
garbage-collected, so on PostgreSQL a ``TRUNCATE`` (a test fixture's, an operator's) waited behind it, and on SQLite
the WAL could not be checkpointed; reading on after the close asked a connection that was gone.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

import benchledger
from benchledger.errors import LedgerUnavailable
from benchledger.ledger.read import views
from tests.helpers import invoke

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
PREFLIGHT = str(DEMO / "01-preflight.json")


def _nobody_reads(url: str) -> bool:
    """True when no other connection holds a read snapshot of the ledger (a lock or a checkpoint would wait for it)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            if engine.dialect.name == "sqlite":
                busy, _, _ = connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)")).one()
                return busy == 0
            connection.execute(text("SET lock_timeout = '2s'"))
            try:
                connection.execute(text("LOCK TABLE events IN ACCESS EXCLUSIVE MODE"))
            except Exception:  # the lock timed out: a snapshot still reads the table
                return False
            connection.rollback()
            return True
    finally:
        engine.dispose()


@pytest.fixture
def three_goals(migrated_url, monkeypatch):
    with benchledger.open(migrated_url) as ledger:
        for goal in ("goal-a", "goal-b", "goal-c"):
            assert ledger.ingest(goal, [PREFLIGHT], kind="preflight").ok
    monkeypatch.setattr(views, "GOALS_PAGE", 1)  # a page a goal: the second goal is read after the first is handed over
    return migrated_url


@pytest.mark.parametrize("listing", ["goals", "history"])
def test_closing_the_ledger_releases_a_half_read_listing_and_reading_on_says_so(three_goals, listing):
    ledger = benchledger.open(three_goals)
    rows = ledger.goals() if listing == "goals" else ledger.history("goal-a")
    first = next(iter(rows))
    assert first is not None
    assert not rows.closed
    ledger.close()
    assert rows.closed
    assert _nobody_reads(three_goals), "the half-read listing still holds its snapshot after Ledger.close()"
    with pytest.raises(LedgerUnavailable, match="this listing was closed before it was read to its end"):
        next(iter(rows))


def test_a_listing_closed_by_the_caller_says_so_too_and_one_read_to_its_end_is_closed(three_goals):
    with benchledger.open(three_goals) as ledger:
        goals = ledger.goals()
        assert next(iter(goals)).goal_id == "goal-a"
        goals.close()
        assert _nobody_reads(three_goals)
        with pytest.raises(LedgerUnavailable, match="closed before it was read to its end"):
            list(goals)
        whole = ledger.goals()
        assert [g.goal_id for g in whole] == ["goal-a", "goal-b", "goal-c"]
        assert whole.closed
        assert list(whole) == [], "a listing is read once: after its end there is nothing, not an error"
        with ledger.goals() as inside:
            assert next(iter(inside)).goal_id == "goal-a"
        assert inside.closed and _nobody_reads(three_goals)


# -- standard error closed (`benchledger runs --summary 2>&1 | head`, a log reader gone) ------------------------------


def _with_stderr_closed(url: str, *args: str) -> int:
    """The command as a whole process whose standard error is a pipe nobody reads (its read end closed)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchledger", "--database-url", url, *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=write_end, timeout=120,
        )
    finally:
        os.close(write_end)
    return done.returncode


def test_a_closed_standard_error_leaves_each_command_its_own_exit_status(migrated_url):
    """A note, an error or a usage error that cannot be written was an internal error, exit 1, whatever the command's outcome."""
    assert _with_stderr_closed(migrated_url, "goals") == 0  # (an empty ledger: a note on stderr)
    assert _with_stderr_closed(migrated_url, "history", "--goal", "no-such-goal") == 2
    assert _with_stderr_closed(migrated_url, "history", "--no-such-option") == 2
    assert _with_stderr_closed(migrated_url, "ingest", "--goal", "goal-a", "--kind", "preflight", PREFLIGHT) == 0
    with benchledger.open(migrated_url) as ledger:
        assert ledger.has_goal("goal-a"), "the ingest whose report could not be written committed"


# -- compare: a seed below 0, the same arm twice -------------------------------------------------------------------


RUNS = [str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]


@pytest.fixture
def demo_runs(migrated_url):
    with benchledger.open(migrated_url) as ledger:
        assert ledger.ingest("demo-goal", RUNS).ok
    return migrated_url


def test_compare_refuses_a_negative_seed_as_a_usage_error(demo_runs):
    """``compare --seed -1`` was the bootstrap generator's ValueError: an internal error, exit 70."""
    done = invoke(demo_runs, "compare", "--seed", "-1")
    assert done.exit_code == 2, done.output
    assert "seed must be a whole number (0 or more), not -1" in done.output
    assert "internal error" not in done.output
    assert invoke(demo_runs, "compare", "--seed", "7").exit_code == 0


@pytest.mark.parametrize("treatment", ["codex-loopx", "codex_loopx", "CODEX-LOOPX"])
def test_compare_refuses_one_arm_as_both_baseline_and_treatment(demo_runs, treatment):
    """The same arm on both sides printed a comparison of an arm with itself (+0.0, "no detectable difference"), exit 0."""
    done = invoke(demo_runs, "compare", "--baseline", "codex-loopx", "--treatment", treatment)
    assert done.exit_code == 2, done.output
    assert "are the same arm" in done.output and "a comparison needs two arms" in done.output
    assert invoke(demo_runs, "compare", "--baseline", "hardened-codex", "--treatment", "codex-loopx").exit_code == 0


# -- an integer beyond the range of a float (valid JSON: 10**400) ---------------------------------------------------


def _huge_run(tmp_path: Path) -> Path:
    run = json.loads((DEMO / "04-run-baseline.json").read_text())
    run["official_task_score"]["value"] = 10**400
    path = tmp_path / "huge-run.json"
    path.write_text(json.dumps(run))
    return path


def test_an_integer_no_float_can_hold_is_refused_by_the_storage_guard_naming_file_and_field_and_nothing_is_written(migrated_url, tmp_path):
    """It passed the storage guard (``1e999`` is refused at intake), then every review reading the score as a float
    failed: ``ingest`` ended in "projection … failed: OverflowError" naming neither file nor field, ``--dry-run`` said it would append, an
    ``ingest-batches`` had committed its earlier transactions, and an ``import-loopx``'d row broke ``runs`` and ``history``."""
    huge = _huge_run(tmp_path)
    for args in (["ingest", "--goal", "goal-huge", "--dry-run", str(huge)], ["ingest", "--goal", "goal-huge", str(huge)]):
        done = invoke(migrated_url, *args)
        assert done.exit_code == 1, done.output
        assert f"{huge.name}: $.official_task_score.value of this run is an integer of 401 digits, beyond the range of a float" in done.output
        assert "OverflowError" not in done.output
    good = json.loads((DEMO / "05-run-treatment.json").read_text())
    lines = [{"goal_id": "goal-bulk", "kind": None, "artifacts": [dict(good, job_name=f"job-{i}")]} for i in range(3)]
    lines.append({"goal_id": "goal-bulk", "kind": None, "artifacts": [json.loads(huge.read_text())]})
    batches = tmp_path / "batches.ndjson"
    batches.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = invoke(migrated_url, "ingest-batches", str(batches))
    assert done.exit_code == 1, done.output
    assert "line 4: artifacts[0]: $.official_task_score.value of this run is an integer of 401 digits" in done.output
    ledger_file = json.loads((REPO / "tests" / "data" / "loopx-public" / "benchmark-run-ledger.json").read_text())
    benchmark = next(iter(ledger_file["benchmarks"].values()))
    next(iter(benchmark["cases"].values()))["runs"][0]["official_score"] = 10**400
    imported = tmp_path / "loopx-ledger.json"
    imported.write_text(json.dumps(ledger_file))
    done = invoke(migrated_url, "import-loopx", "--goal", "goal-loopx", str(imported))
    assert done.exit_code != 0 and "$.official_score of this benchmark_run_ledger_row_v0 is an integer of 401 digits" in done.output, done.output
    with benchledger.open(migrated_url) as ledger:
        assert ledger.event_count() == 0


def test_the_storage_guard_refuses_it_on_every_way_in():
    """``merge`` and ``import-ndjson`` do not parse through intake: the guard that every write passes refuses it too."""
    from benchledger.ledger.storage.canonical import canonical_json
    from benchledger.ledger.storage.guard import payload_problems

    payload = {"schema_version": "benchmark_run_v0", "scores": [1, -(10**400)], "fine": 10**300, "text": "9" * 400}
    assert payload_problems(payload, canonical_json(payload)) == [
        ("$.scores[1]", "is an integer of 401 digits, beyond the range of a float: the reviews read scores and counts as "
         "floats, so the ledger stores only numbers within a float's range, about ±1.8e308"),
    ]


# -- a read of a goal one typo away -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["history"], ["show"], ["runs"], ["compare"], ["export"], ["audit"]],
    ids=lambda c: c[0],
)
def test_a_read_of_a_goal_one_typo_away_names_the_goal_meant(demo_runs, command):
    """A write said "did you mean" for a goal one typo away; every read said only that there is no such goal."""
    done = invoke(demo_runs, *command, "--goal", "demo-gaol")
    assert done.exit_code == 2, done.output
    assert done.output.strip() == (
        "benchledger: no goal 'demo-gaol' in this ledger; did you mean 'demo-goal'? (`benchledger goals` lists them)"
    )
    done = invoke(demo_runs, *command, "--goal", "another-goal")
    assert done.output.strip() == "benchledger: no goal 'another-goal' in this ledger (`benchledger goals` lists them)"


def test_the_library_says_it_too(demo_runs):
    from benchledger.errors import UnknownGoal

    with benchledger.open(demo_runs) as ledger, pytest.raises(UnknownGoal, match=r"did you mean 'demo-goal'\?"):
        ledger.show("DEMO-GOAL")


# -- --as-of as a user types a time ----------------------------------------------------------------------------------


def test_as_of_takes_a_month_and_rfc_3339_lower_case_letters(demo_runs):
    """``--as-of 2026-12`` (a month) and ``…T07:23:37z`` (RFC 3339's lower-case z) were refused as no ISO-8601 time."""
    with benchledger.open(demo_runs) as ledger:
        last = ledger.last_position()
        recorded = next(iter(ledger.history("demo-goal", limit=1))).recorded_at
    month = recorded[:7]
    done = invoke(demo_runs, "history", "--goal", "demo-goal", "--as-of", month, "--format", "json")
    assert done.exit_code == 0, done.output
    document = json.loads(done.output)
    assert (document["as_of_position"], document["as_of_period"]) == (last, "month")
    assert document["as_of_time"].startswith(month) and document["as_of_time"].endswith("T23:59:59.999999Z")
    before = invoke(demo_runs, "history", "--goal", "demo-goal", "--as-of", "2000-01", "--format", "json")
    assert json.loads(before.output)["as_of_position"] == 0
    lower = recorded[:19].replace("T", "t") + "z"
    done = invoke(demo_runs, "history", "--goal", "demo-goal", "--as-of", lower, "--format", "json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["as_of_period"] == "second"
    done = invoke(demo_runs, "history", "--goal", "demo-goal", "--as-of", "2026-13")
    assert done.exit_code == 2 and "month must be in 1..12" in done.output


def test_show_as_of_before_the_goal_existed_says_so(demo_runs):
    """``show --as-of`` before the goal's first event printed an empty page (rows per projection: none), exit 0, no word."""
    invoke(demo_runs, "ingest", "--goal", "later-goal", "--kind", "preflight", PREFLIGHT)
    note = "benchledger: note: no event of goal 'later-goal' at or before position 1: it held nothing then"
    for fmt in ("json", "markdown"):
        done = invoke(demo_runs, "show", "--goal", "later-goal", "--as-of", "1", "--format", fmt)
        assert done.exit_code == 0, done.output
        assert note in done.stderr
    assert "note" not in invoke(demo_runs, "show", "--goal", "later-goal").stderr
    assert json.loads(invoke(demo_runs, "show", "--goal", "later-goal", "--as-of", "1", "--format", "json").stdout)["counts"] == {}


# -- small words a user read wrong -----------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_a_format_given_as_its_own_flag_is_pointed_at_format(demo_runs, flag):
    """``history --json`` was answered "Did you mean one of: '--as-of', '--since'?"."""
    done = invoke(demo_runs, "history", "--goal", "demo-goal", flag)
    assert done.exit_code == 2
    assert f"No such option '{flag}'. Did you mean '--format {flag[2:]}'?" in done.output


def test_a_digest_beyond_the_ledger_may_be_another_ledgers(demo_runs):
    """``audit --expect-digest`` of a position the ledger does not reach said "history was truncated" only."""
    done = invoke(demo_runs, "audit", "--expect-digest", "99999:" + "0" * 64)
    assert done.exit_code == 1
    assert "has no event at position 99999: history was truncated, or the digest is another ledger's" in done.output


def test_goals_include_archived_says_no_of_a_goal_not_archived(demo_runs):
    """The ``archived`` column was blank for the goals not archived: a cell a reader cannot tell from a missing value."""
    invoke(demo_runs, "ingest", "--goal", "kept-goal", "--kind", "preflight", PREFLIGHT)
    assert invoke(demo_runs, "goals", "archive", "demo-goal").exit_code == 0
    rows = invoke(demo_runs, "goals", "--include-archived", "--format", "csv").stdout.splitlines()
    archived = {line.split(",")[0]: line.split(",")[-1] for line in rows[1:]}
    assert rows[0].split(",")[-1] == "archived"
    assert archived == {"demo-goal": "yes", "kept-goal": "no"}


def test_compare_as_of_says_what_it_resolved_to(demo_runs):
    """``compare --as-of`` never said which position it read up to; before the first event its empty answer did not
    say that --as-of had emptied it."""
    with benchledger.open(demo_runs) as ledger:
        last = ledger.last_position()
    done = invoke(demo_runs, "compare", "--as-of", str(last), "--format", "table")
    assert done.exit_code == 0 and done.stdout.startswith(f"As of position {last} (--as-of {last}): the events up to it only.\n")
    early = invoke(demo_runs, "compare", "--as-of", "2000-01-01", "--format", "table").stdout.splitlines()
    assert early[:2] == [
        "As of position 0 (--as-of 2000-01-01): the events up to it only.",
        "No arm pair to compare: no comparison or LoopX run group names one here; give --baseline ARM --treatment ARM.",
    ]
    assert not invoke(demo_runs, "compare", "--format", "table").stdout.startswith("As of")


def test_compare_says_none_where_no_detectable_difference_can_be_stated(demo_runs):
    """One task: docs/statistics.md says the minimum detectable difference is "none"; the table left the cell blank."""
    rows = invoke(demo_runs, "compare", "--format", "csv").stdout.splitlines()
    cells = dict(zip(rows[0].split(","), next(csv.reader([rows[1]]))))
    assert (cells["tasks"], cells["detectable (pts)"]) == ("1", "none")
    assert json.loads(invoke(demo_runs, "compare", "--format", "json").stdout)["comparisons"][0]["minimum_detectable_difference"] is None


def test_standard_input_named_twice_is_refused_as_such(migrated_url):
    """``ingest --goal g - -`` read the run, then called the exhausted stream "<stdin>: the file is empty"."""
    run = (DEMO / "04-run-baseline.json").read_text()
    done = invoke(migrated_url, "ingest", "--goal", "goal-dash", "-", "-", input=run)
    assert done.exit_code == 2
    assert done.stderr.strip() == "benchledger: <stdin>: `-` (standard input) is given 2 times; it can be read once"
    with benchledger.open(migrated_url) as ledger:
        assert not ledger.has_goal("goal-dash")
    assert invoke(migrated_url, "ingest", "--goal", "goal-dash", "-", input=run).exit_code == 0


def test_the_report_shows_times_and_deltas_as_the_cli_does(demo_runs, tmp_path):
    """The report showed times with microseconds (``…T07:26:16.309358Z``) where every table shows seconds, and a delta
    as ``1`` where ``runs --paired`` shows ``+1``."""
    assert invoke(demo_runs, "report", "-o", str(tmp_path / "site")).exit_code == 0
    page = (tmp_path / "site" / "goals" / "demo-goal" / "index.html").read_text()
    shown = re.sub(r"<script.*?</script>", "", page, flags=re.DOTALL)  # (a chart's data keeps the recorded instants)
    assert re.search(r"T\d\d:\d\d:\d\d\.\d+Z", shown) is None
    assert re.search(r"<td>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ</td>", shown)
    paired = invoke(demo_runs, "runs", "--paired", "--format", "csv").stdout.splitlines()
    delta = next(csv.reader([paired[1]]))[paired[0].split(",").index("delta")]
    assert delta == "+1" and f'<td class="num">{delta}</td>' in shown


# -- the review commands where a differential run against LoopX 0.4.8 found them apart ---------------------------------


def _review(tmp_path: Path, comparison: dict, *extra: str):
    path = tmp_path / "comparison.json"
    path.write_text(json.dumps(comparison))
    return invoke("sqlite://", "benchmark", "review-claim", "--benchmark-comparison-json", str(path), *extra)


def test_a_terminal_colour_code_in_an_input_is_printed_raw_as_loopx_prints_it(tmp_path):
    """click.echo drops ``ESC[…m`` from a pipe: ``- Task: `ab``` where LoopX prints ``- Task: `a\\x1b[31mb```."""
    done = _review(tmp_path, {"schema_version": "benchmark_comparison_v0", "task_id": "a\x1b[31mb"})
    assert "- Task: `a\x1b[31mb`" in done.stdout


def test_a_review_holding_a_lone_surrogate_is_not_printed_as_loopx_prints_none(tmp_path):
    """LoopX dies printing it (exit 1, nothing on stdout); benchledger printed the review with the surrogate escaped, exit 0."""
    for fmt in ("json", "markdown"):
        done = _review(tmp_path, {"schema_version": "benchmark_comparison_v0", "task_id": "a\ud800b"}, "--format", fmt)
        assert (done.exit_code, done.stdout) == (1, "")
        assert done.stderr.startswith("benchledger: the review-claim review holds an unpaired UTF-16 surrogate")


def _nested(key: str, depth: int, leaf: str) -> str:
    """``leaf`` (JSON text) inside ``depth`` objects of one ``key`` each, as text (json.dumps would recurse that deep)."""
    return f'{{"{key}":' * depth + leaf + "}" * depth


def test_a_deeply_nested_input_loopx_reads_is_reviewed_not_an_internal_error(tmp_path):
    """A preflight whose ``preflight_guard`` nests 968 deep: LoopX answers (first blocker preflight_not_ready); benchledger
    read it, then failed writing its canonical JSON from a deeper stack (RecursionError: internal error, exit 70)."""
    path = tmp_path / "preflight.json"
    path.write_text(_nested("preflight_guard", 968, '{"ready": false}'))
    # (as a process of its own: how deep json.loads reads depends on the stack it is called from, a test runner's deeper)
    done = _whole_process("benchmark", "lifecycle-state", "--preflight-json", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["first_blocker"] == "preflight_not_ready"


def _whole_process(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "benchledger", *args], capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def test_too_deep_an_input_is_refused_in_the_decoders_own_words(tmp_path):
    """Nested objects were refused "while decoding a JSON array", the word hard-coded; LoopX says "object" for them."""
    path = tmp_path / "run.json"
    path.write_text(_nested("a", 1200, "1"))
    done = invoke("sqlite://", "benchmark", "review-runner-invariants", "--benchmark-run-json", str(path), "--format", "json")
    assert done.exit_code == 1
    assert json.loads(done.stdout)["error"] == "maximum recursion depth exceeded while decoding a JSON object from a unicode string"


def test_the_four_answer_as_loopx_does(tmp_path, loopx):
    """The same inputs given to LoopX 0.4.8 itself: the same stdout and exit status (each a process of its own)."""
    cases = {
        "ansi": ({"schema_version": "benchmark_comparison_v0", "task_id": "a\x1b[31mb"}, ["review-claim", "--benchmark-comparison-json"], []),
        "surrogate": ({"schema_version": "benchmark_comparison_v0", "task_id": "a\ud800b"}, ["review-claim", "--benchmark-comparison-json"], ["--format", "json"]),
        "deep": (_nested("preflight_guard", 968, '{"ready": false}'), ["lifecycle-state", "--preflight-json"], ["--format", "json"]),
        "too-deep": (_nested("a", 1200, "1"), ["review-runner-invariants", "--benchmark-run-json"], ["--format", "json"]),
    }
    for name, (document, command, extra) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(document if isinstance(document, str) else json.dumps(document))
        theirs = subprocess.run([loopx, "benchmark", *command, str(path), *extra], capture_output=True, timeout=120)
        ours = _whole_process("benchmark", *command, str(path), *extra)
        assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), name
