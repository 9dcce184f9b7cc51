"""Session 39, defects noticed in session 38 and left then, as a user meets them, on both backends.

* `benchledger ingest GOAL run.json` into a goal `goals archive` hid: appended, exit 0, and not a word that
  `goals` and the report's index leave the goal out, and with it what was just appended.
* SIGTERM to a running `benchledger ingest-batches big.ndjson` ended it without a word (exit -15), whatever it had
  committed; Ctrl-C said a count of transactions, not what the error a later transaction meets says of them.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

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


# -- SIGTERM / Ctrl-C to a running ingest-batches -------------------------------------------------------------------

INTERRUPTED = re.compile(
    r"benchledger: interrupted; (?P<file>\S+): while appending (?:lines \d+-\d+|line \d+|the lines from line \d+): this "
    r"transaction wrote nothing; the (?P<transactions>\d+) transaction\(s\) before it committed (?P<batches>\d+) batch\(es\) "
    r"of the lines before line (?P<line>\d+), which stay: running the file again appends only what is missing"
)


def _batches_in(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(text("SELECT count(*) FROM events WHERE kind = 'ingest_batch'")).scalar_one()
    finally:
        engine.dispose()


def _alive(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(("stop", "jobs"), [(signal.SIGTERM, "2"), (signal.SIGINT, "1")], ids=["sigterm-jobs-2", "sigint-jobs-1"])
def test_an_interrupted_ingest_batches_says_what_its_committed_transactions_kept(migrated_url, tmp_path, stop, jobs):
    """SIGTERM killed it silently (exit -15, not a word of the transactions it had committed); Ctrl-C said a count of
    transactions in other words than the error a later transaction meets. Both now end it as that error does."""
    run = json.loads(Path(TREATMENT).read_text())
    lines = 3000
    path = tmp_path / "big.ndjson"
    path.write_text("".join(
        json.dumps({"goal_id": f"goal-{i % 40}", "kind": None, "artifacts": [dict(run, job_name=f"j{i}-{k}") for k in range(3)]}) + "\n"
        for i in range(lines)
    ))
    command = [sys.executable, "-m", "benchledger", "--database-url", migrated_url, "ingest-batches", "--jobs", jobs, str(path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while _batches_in(migrated_url) == 0:  # (the first transaction committed: the append is under way)
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        workers = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
        process.send_signal(stop)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    said = err.strip().splitlines()[-1]
    assert "Traceback" not in err and out == "", err
    matched = INTERRUPTED.fullmatch(said)
    assert matched is not None, said
    assert matched["file"] == str(path) and int(matched["transactions"]) >= 1
    # what it says the transactions kept is what the ledger holds: the lines before the one it names, a batch each
    assert _batches_in(migrated_url) == int(matched["batches"]) == int(matched["line"]) - 1 < lines
    assert not [pid for pid in workers if _alive(pid)], "a worker outlived the interrupted command"
    # the same file again appends the rest
    done = invoke(migrated_url, "ingest-batches", "--format", "json", str(path))
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["batches_appended"] == lines - int(matched["batches"])
    assert _batches_in(migrated_url) == lines


# -- --as-of after the ledger's last event -----------------------------------------------------------------------------


def test_an_as_of_after_the_last_event_says_it_reads_the_current_state_on_every_command_that_takes_it(migrated_url):
    """`history GOAL --as-of 2099-01-01` said "as of position 6: the events the ledger recorded at or before
    2099-01-01T23:59:59.999999Z (--as-of 2099-01-01 takes in that whole day)", as if 2099 had been read."""
    assert invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", BASELINE, TREATMENT, COMPARISON).exit_code == 0
    import benchledger

    with benchledger.open(migrated_url) as ledger:
        last = ledger.last_position()
    said = f"--as-of {{}} is after the ledger's last event (position {last}): this is the current state, as without --as-of"
    note = "benchledger: note: " + said
    for as_of in ("2099-01-01", str(last + 1), "99999"):
        table = invoke(migrated_url, "history", "tb2-db-wal", "--as-of", as_of)
        assert table.exit_code == 0 and table.stdout.splitlines()[0] == said.format(as_of) and table.stderr == "", table.output
        markdown = invoke(migrated_url, "show", "tb2-db-wal", "--as-of", as_of, "--format", "markdown")
        assert markdown.stdout.startswith(f"# Goal `tb2-db-wal` ({said.format(as_of)}; head at position {last})"), markdown.output
        compared = invoke(migrated_url, "compare", "--as-of", as_of)
        assert compared.stdout.splitlines()[0] == said.format(as_of) + "." and compared.stderr == "", compared.output
        for command in (["history", "tb2-db-wal"], ["show", "tb2-db-wal"], ["compare"]):
            for fmt in ("json", "csv") if command[0] != "show" else ("json",):
                done = invoke(migrated_url, *command, "--as-of", as_of, "--format", fmt)
                assert done.exit_code == 0 and done.stderr.splitlines() == [note.format(as_of)], (command, fmt, done.output)
        document = json.loads(invoke(migrated_url, "history", "tb2-db-wal", "--as-of", as_of, "--format", "json").stdout)
        assert document["as_of_after_last_event"]["position"] == last
        scope = json.loads(invoke(migrated_url, "compare", "--as-of", as_of, "--format", "json").stdout)["scope"]
        assert scope["as_of_after_last_event"]["position"] == last
        # what is read is the current state: the same answer as without --as-of
        assert [e["event_id"] for e in document["entries"]] == [
            e["event_id"] for e in json.loads(invoke(migrated_url, "history", "tb2-db-wal", "--format", "json").stdout)["entries"]
        ]
    # the last event itself, and a time before it, are meaningful: said as before, no note
    at_last = invoke(migrated_url, "history", "tb2-db-wal", "--as-of", str(last), "--format", "json")
    assert at_last.stderr == "" and json.loads(at_last.stdout)["as_of_after_last_event"] is None
    assert invoke(migrated_url, "history", "tb2-db-wal", "--as-of", str(last)).stdout.splitlines()[0] == f"as of position {last}"
    recorded = json.loads(at_last.stdout)["entries"][-1]["recorded_at"]
    day = invoke(migrated_url, "history", "tb2-db-wal", "--as-of", recorded[:10], "--format", "json")  # (the day holding it)
    assert day.stderr == "" and json.loads(day.stdout)["as_of_after_last_event"] is None
    before = invoke(migrated_url, "compare", "--as-of", "2000-01-01", "--format", "json")
    assert before.stderr == "" and json.loads(before.stdout)["scope"]["as_of_after_last_event"] is None
    with benchledger.open(migrated_url) as ledger:
        assert ledger.show("tb2-db-wal", as_of="2099-01-01").as_of_after_last_event["position"] == last
        with ledger.history("tb2-db-wal", as_of=last + 1) as history:
            assert history.as_of_after_last_event["position"] == last
        assert ledger.show("tb2-db-wal", as_of=last).as_of_after_last_event is None


# -- runs whose rows name no benchmark and no arm ------------------------------------------------------------------


def test_a_run_naming_no_benchmark_and_no_arm_says_none_in_every_runs_format(migrated_url, tmp_path):
    """`runs --summary` printed a row whose benchmark and arm cells were blank (table, markdown, CSV), which reads as a
    row whose cells were lost."""
    anonymous = json.loads(Path(BASELINE).read_text())
    del anonymous["benchmark_id"], anonymous["mode"]
    path = tmp_path / "anonymous-run.json"
    path.write_text(json.dumps({**anonymous, "job_name": "anonymous-job"}))
    assert invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", BASELINE, str(path)).exit_code == 0

    def rows(*args: str) -> list[str]:
        done = invoke(migrated_url, "runs", *args)
        assert done.exit_code == 0, done.output
        return done.stdout.splitlines()

    table = [line.split() for line in rows("--summary") if line.startswith("(none)")]
    assert table == [["(none)", "(none)", "1", "0", "1", "0", "0%", "0", "0", "0", "0"]]
    assert "| (none) | (none) | 1 | 0 | 1 | 0 | 0% | 0 | 0 | 0 | 0 |" in rows("--summary", "--format", "markdown")
    assert "(none),(none),1,0,1,0,0%,0,0,0,0," in rows("--summary", "--format", "csv")
    rates = json.loads(invoke(migrated_url, "runs", "--summary", "--format", "json").stdout)["pass_rates"]
    assert [(r["benchmark_id"], r["arm"]) for r in rates if r["benchmark_id"] is None] == [(None, None)]
    # the other listings say it the same way
    listed = [line for line in rows("--format", "csv") if "anonymous" in line or ",(none)," in line]
    assert len(listed) == 1 and listed[0].split(",")[2] == "(none)" and listed[0].split(",")[4] == "(none)"
    current = [line.split() for line in rows("--current") if "(none)" in line]
    assert len(current) == 1 and current[0][1:3] == ["(none)", "(none)"]


# -- ingest-batches stops spooling once the file is refused -------------------------------------------------------


@pytest.fixture
def spooled(monkeypatch):
    """The bytes ingest-batches writes to its spool (a temporary file), as they are written."""
    import tempfile as real_tempfile

    from benchledger.ledger.service import bulk

    written: list[int] = []
    temporary_file = real_tempfile.TemporaryFile

    class Counted:
        def __init__(self, **options):
            self._file = temporary_file(**options)

        def write(self, data):
            written.append(len(data))
            return self._file.write(data)

        def __getattr__(self, name):
            return getattr(self._file, name)

        def __iter__(self):
            return iter(self._file)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._file.close()

    monkeypatch.setattr(bulk.tempfile, "TemporaryFile", Counted)
    return written


def _batch_lines(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def _run_line(goal: str, job: str, attempt: str | None = None) -> dict:
    run = {**json.loads(Path(TREATMENT).read_text()), "job_name": job}
    return {"goal_id": goal, "kind": None, "artifacts": [run], **({"attempt": attempt} if attempt else {})}


BAD_LINE = '{"goal_id": "bulk-goal", "kind": null, "artifacts": [{"schema_version": "benchmark_run_v0", "x": NaN}]}'


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_refused_file_is_still_read_to_its_end_but_not_spooled(migrated_url, tmp_path, spooled, jobs):
    """A big file refused at its first line was still written whole to the spool (normalized, about the stored size),
    for an append that would never come; every later bad line is still listed."""
    lines = [BAD_LINE, *(_run_line(f"goal-{i % 7}", f"j{i}") for i in range(300)), BAD_LINE]
    path = _batch_lines(tmp_path / "big-bad.ndjson", lines)
    done = invoke(migrated_url, "ingest-batches", "--jobs", jobs, "--format", "json", str(path))
    assert done.exit_code == 1, done.output
    report = json.loads(done.stdout)
    assert [e["line"] for e in report["errors"]] == [1, 302] and report["batches"] == 300
    assert sum(spooled) == 0, f"{sum(spooled)} bytes spooled for a refused file"


def test_after_the_refusal_the_attempts_named_are_still_checked_as_the_lines_leave_them(migrated_url, tmp_path, spooled):
    """What the check of the attempts reads is still spooled: a line naming an attempt, or of a goal named so; a goal
    whose attempt is named only after some of its lines were left out is read again for it, so the check is exact."""
    lines = [
        BAD_LINE,
        _run_line("fresh-goal", "a1"),  # (opens attempt 1 of a new goal: left out of the spool, then needed)
        *(_run_line("other-goal", f"o{i}") for i in range(50)),  # (never named: left out)
        _run_line("fresh-goal", "a2", attempt="2"),  # (the next after line 2's: not refused)
        _run_line("fresh-goal", "a3", attempt="4"),  # (skips 3: refused)
    ]
    path = _batch_lines(tmp_path / "bad-named.ndjson", lines)
    done = invoke(migrated_url, "ingest-batches", "--format", "json", str(path))
    assert done.exit_code == 1, done.output
    errors = json.loads(done.stdout)["errors"]
    assert [e["line"] for e in errors] == [1, 54], errors
    assert errors[1]["error"].startswith("attempt 4: the next attempt of goal fresh-goal is 3, so 4 would skip 3;")
    run_line = len(json.dumps(_run_line("fresh-goal", "a1")))
    assert 0 < sum(spooled) < 10 * run_line, "the second reading spools the named goal's three lines, not the other goal's fifty"


# -- the library's refusals name its own arguments -----------------------------------------------------------------


def test_the_library_refusals_name_the_argument_a_caller_gave(migrated_url):
    """``ledger.ingest(goal, [comparison], kind="preflight")`` said "--kind preflight contradicts …, drop --kind for it",
    and ``ledger.merge_from(url)`` of its own ledger "--from URL is the ledger this merges into": options a library
    caller never gave. Each names the argument beside the option now, as the refusal of a goal's name already did."""
    import benchledger
    from benchledger.errors import InvalidInput

    with benchledger.open(migrated_url) as ledger:
        with pytest.raises(InvalidInput, match=r"--kind preflight \(library: kind='preflight'\) contradicts its schema_version") as refused:
            ledger.ingest("tb2-db-wal", [COMPARISON], kind="preflight")
        assert "(drop --kind for it; library: kind=None)" in str(refused.value)
        with pytest.raises(InvalidInput, match=r"\(library: merge_from's url\) is the ledger this merges into"):
            ledger.merge_from(migrated_url)
        # attempt is an int or its digits (the type hint said str only)
        import inspect

        for method in (ledger.ingest, ledger.ingest_files, ledger.ingest_artifacts):
            assert inspect.signature(method).parameters["attempt"].annotation == "str | int | None"
        assert ledger.ingest("tb2-db-wal", [BASELINE], attempt=1).ok
    done = invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", "--kind", "preflight", COMPARISON)
    assert done.exit_code == 2 and "--kind preflight (library: kind='preflight') contradicts" in done.stderr


def test_importing_loopx_history_into_an_archived_goal_says_it_stays_hidden(migrated_url):
    # import-loopx into an archived goal appended 303 events, exit 0, and said nothing: its rows are events given as they
    # are (no batch manifest), which the note's check did not count as appended.
    assert invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", BASELINE).exit_code == 0
    assert invoke(migrated_url, "goals", "archive", "tb2-db-wal").exit_code == 0
    ledger_file = str(REPO / "tests" / "data" / "loopx-public" / "benchmark-run-ledger.json")

    dry = invoke(migrated_url, "import-loopx", "--goal", "tb2-db-wal", "--dry-run", ledger_file)
    assert dry.exit_code == 0, dry.output
    assert dry.stderr.splitlines() == [ARCHIVED_NOTE.format(command="import-loopx", did="would append")]

    done = invoke(migrated_url, "import-loopx", "--goal", "tb2-db-wal", "--format", "json", ledger_file)
    assert done.exit_code == 0, done.output
    assert done.stderr.splitlines() == [ARCHIVED_NOTE.format(command="import-loopx", did="appended")]
    report = json.loads(done.stdout)
    assert report["events_appended"] > 0 and report["archived_goals"] == ["tb2-db-wal"]

    # the same file again appends nothing, so there is nothing to say
    again = invoke(migrated_url, "import-loopx", "--goal", "tb2-db-wal", "--format", "json", ledger_file)
    assert again.exit_code == 0 and again.stderr == "" and "archived_goals" not in json.loads(again.stdout)
