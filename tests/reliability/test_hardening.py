"""The edges a hostile user meets, on SQLite and PostgreSQL.

* another application's database is refused untouched, a ledger newer than
  this build says so (and ``db upgrade`` does not pretend it can help);
* ``--as-of`` is validated before it reaches a query;
* what the exit code says is what happened when standard output fails
  (``> /dev/full``): a committed batch stays a success, with a warning;
* a ledger written before the storage guard (lone surrogates, NUL) still
  prints, every unencodable code point as its escape;
* a PostgreSQL server that accepts and never answers is given up after
  ``connect_timeout``, not waited on for ever.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from benchledger.ledger.storage.engine import normalize_url
from benchledger.ledger.storage.migrate import HEAD_REVISION
from tests.helpers import ingest_unguarded, invoke, row_counts

VALID = Path(__file__).parents[1] / "hostile" / "valid"
BENCHLEDGER = str(Path(sys.executable).parent / "benchledger")


def sql(url: str, *statements: str) -> list:
    """Run ``statements`` on the database at ``url`` with a plain engine (no benchledger involved); the last one's rows."""
    engine = create_engine(normalize_url(url))
    try:
        with engine.begin() as connection:
            for statement in statements:
                result = connection.execute(text(statement))
            return result.all() if result.returns_rows else []
    finally:
        engine.dispose()


# -- another application's database, a newer ledger ---------------------------------------------


def sqlite_state(path: Path) -> tuple[str, list[str]]:
    """The file's bytes (hashed) and what sits beside it (a -wal or -shm file means it was opened in WAL)."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), sorted(p.name for p in path.parent.iterdir())


COMMANDS = [
    ["goals"],
    ["audit"],
    ["ingest", "--goal", "g", str(VALID / "run-1.json")],
    ["import-ndjson", str(VALID / "run-1.json")],
    ["db", "upgrade"],
    ["db", "current"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_foreign_database_with_an_events_table_is_refused_untouched(ledger_url, tmp_path, command):
    create = "CREATE TABLE events (id INTEGER PRIMARY KEY, name TEXT)"
    sql(ledger_url, create, "INSERT INTO events (id, name) VALUES (1, 'theirs')")
    path = Path(ledger_url.removeprefix("sqlite:///")) if ledger_url.startswith("sqlite") else None
    before = sqlite_state(path) if path else None
    result = invoke(ledger_url, *command)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("benchledger: ") and "is not a benchledger ledger (it holds the tables events and no schema revision)" in line
    assert "left it untouched" in line
    if path:
        assert sqlite_state(path) == before
        assert sql(ledger_url, "PRAGMA journal_mode")[0][0] == "delete"
    else:
        tables = sql(ledger_url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        assert [t for (t,) in tables] == ["events"]
    assert sql(ledger_url, "SELECT id, name FROM events") == [(1, "theirs")]


def test_a_new_empty_database_still_becomes_a_ledger(ledger_url):
    result = invoke(ledger_url, "db", "upgrade")
    assert result.exit_code == 0 and HEAD_REVISION in result.stdout
    assert invoke(ledger_url, "ingest", "--goal", "g", str(VALID / "run-1.json")).exit_code == 0


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_ledger_newer_than_this_build_says_so_and_is_left_as_it_is(migrated_url, command):
    assert invoke(migrated_url, "ingest", "--goal", "g", str(VALID / "run-1.json")).exit_code == 0
    counts = row_counts(migrated_url)
    sql(migrated_url, "UPDATE alembic_version SET version_num = '9001'")
    result = invoke(migrated_url, *command)
    if command == ["db", "current"]:
        assert result.exit_code == 0 and result.stdout.startswith("9001 (head") and "newer than this benchledger" in result.stdout
        assert "needs `benchledger db upgrade`" not in result.stdout
    else:
        assert result.exit_code == 2, result.output
        (line,) = result.stderr.splitlines()
        assert f"is at schema revision 9001, newer than this benchledger (revision {HEAD_REVISION})" in line
        assert "run `benchledger" not in line  # no advice that would then fail
    assert sql(migrated_url, "SELECT version_num FROM alembic_version") == [("9001",)]
    sql(migrated_url, f"UPDATE alembic_version SET version_num = '{HEAD_REVISION}'")
    assert row_counts(migrated_url) == counts


# -- --as-of -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, message",
    [
        ("²", "--as-of '²' is neither a position nor an ISO-8601 time"),
        ("１２", "--as-of '１２' is neither a position nor an ISO-8601 time"),
        ("99999999999999999999999", "--as-of '99999999999999999999999' is beyond any position (at most 9223372036854775807)"),
        ("9223372036854775808", "is beyond any position"),
        ("-1", "--as-of '-1' is neither a position nor an ISO-8601 time"),
        ("2026-02-30", "--as-of '2026-02-30' is neither a position nor an ISO-8601 time (day is out of range for month)"),
        ("2026-13-01T00:00:00Z", "(month must be in 1..12)"),
        ("0001-01-01T00:00:00+05:00", "is outside the times a UTC timestamp can name"),
        ("9999-12-31T23:59:59-05:00", "is outside the times a UTC timestamp can name"),
    ],
)
@pytest.mark.parametrize("command", ["history", "show"])
def test_as_of_is_validated_with_one_line(migrated_url, command, value, message):
    assert invoke(migrated_url, "ingest", "--goal", "g", str(VALID / "run-1.json")).exit_code == 0
    result = invoke(migrated_url, command, "g", "--as-of", value)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [result.stderr.strip()] and result.stderr.startswith("benchledger: --as-of ")
    assert message in result.stderr


def test_as_of_the_largest_position_is_everything(migrated_url):
    assert invoke(migrated_url, "ingest", "--goal", "g", str(VALID / "run-1.json")).exit_code == 0
    everything = invoke(migrated_url, "history", "g", "--format", "json")
    result = invoke(migrated_url, "history", "g", "--as-of", "9223372036854775807", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["entries"] == json.loads(everything.stdout)["entries"]


# -- a ledger written before the storage guard -----------------------------------------------------

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def plant_a_run_stored_before_the_guard(url: str) -> None:
    """The demo goal ``g`` plus a run holding lone surrogates and a NUL, as a build before the storage guard stored it."""
    assert invoke(url, "ingest", "--goal", "g", str(DEMO)).exit_code == 0
    run = json.loads((DEMO / "05-run-treatment.json").read_text(encoding="utf-8"))
    planted = {**run, "job_name": "job-\ud800", "benchmark_id": "bench-\udc00", "mode": "mode-\udbff",
               "failure_attribution_labels": ["label-\udfff"], "score_failure_attribution": "nul-\x00"}
    ingest_unguarded(url, "g", [("run", planted)], source="benchledger before the storage guard")


def holds_a_surrogate(text: str) -> bool:
    return any("\ud800" <= character <= "\udfff" for character in text)


@pytest.mark.parametrize(
    "args",
    [
        ["runs"], ["runs", "--format", "csv"], ["runs", "--summary"], ["runs", "--paired"], ["goals"], ["history", "g"],
        ["history", "g", "--format", "csv"], ["show", "g"], ["export"], ["audit"],
    ],
    ids=" ".join,
)
def test_a_surrogate_or_nul_stored_before_the_guard_is_printed_as_its_escape(migrated_url, args):
    """Item 3's aftermath: a ledger written before the storage guard may hold lone surrogates; every read prints their escape."""
    plant_a_run_stored_before_the_guard(migrated_url)
    result = invoke(migrated_url, *args)
    assert result.exit_code == 0, result.output
    assert not holds_a_surrogate(result.stdout)
    if args[0] == "runs" and args != ["runs", "--paired"]:  # (the planted run pairs with nothing)
        assert "bench-\\udc00" in result.stdout and "mode-\\udbff" in result.stdout
    if args == ["runs", "--format", "csv"]:  # (the job name is a column of CSV and --wide, not of the fitted table)
        assert "job-\\ud800" in result.stdout
    if args[0] == "export":  # (the stored JSON text holds the escape: the export is what was stored)
        assert '"job_name\\":\\"job-\\\\ud800\\"' in result.stdout


def test_a_surrogate_stored_before_the_guard_is_shown_escaped_by_report_and_serve(migrated_url, tmp_path):
    from tests.report_helpers import running_serve

    plant_a_run_stored_before_the_guard(migrated_url)
    assert invoke(migrated_url, "report", "--output", str(tmp_path / "site")).exit_code == 0
    page = (tmp_path / "site" / "goals" / "g" / "index.html").read_text(encoding="utf-8")
    assert "label-\\udfff" in page and not holds_a_surrogate(page)  # (the attribution chart's label)
    with running_serve(migrated_url) as (base, _):
        with urllib.request.urlopen(f"{base}/goals/g/index.html", timeout=30) as response:
            assert response.status == 200 and "label-\\udfff" in response.read().decode("utf-8")


# -- a report that cannot be printed --------------------------------------------------------------


def run_to_full_disk(url: str, *args: str) -> subprocess.CompletedProcess:
    """``benchledger --database-url URL ARGS > /dev/full`` as a user's shell runs it (a real process)."""
    env = {k: v for k, v in os.environ.items() if k != "BENCHLEDGER_DEBUG"}
    with open("/dev/full", "w") as full:
        return subprocess.run([BENCHLEDGER, "--database-url", url, *args], stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120)


pytestmark_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")


@pytestmark_full
def test_a_committed_ingest_whose_report_cannot_be_printed_succeeds_with_a_warning(migrated_url):
    result = run_to_full_disk(migrated_url, "ingest", "--goal", "g", str(VALID / "run-1.json"))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "benchledger: warning: the report could not be written to standard output (No space left on device); "
        "the change it reports was committed to the ledger (`benchledger history` shows it)"
    ]
    assert row_counts(migrated_url)["events"] == 2  # the run and its batch


@pytestmark_full
@pytest.mark.parametrize(
    "args",
    [["export"], ["ingest", "--goal", "g", "--dry-run", str(VALID / "run-1.json")], ["goals"]],
    ids=["export", "dry-run", "goals"],
)
def test_a_command_that_committed_nothing_fails_when_its_output_cannot_be_written(migrated_url, args):
    before = row_counts(migrated_url)
    result = run_to_full_disk(migrated_url, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "benchledger: cannot write to standard output (No space left on device); the output is incomplete"
    ]
    assert row_counts(migrated_url) == before


def test_an_output_failure_weighs_only_the_commits_of_its_own_command(migrated_url, monkeypatch):
    # In one process (a test runner, a program calling the CLI), an earlier command's commit made a later
    # `goals` whose output failed exit 0 with "the change it reports was committed": the count was the process's.
    import errno
    import io

    from benchledger.cli import main as cli_main

    assert invoke(migrated_url, "ingest", "--goal", "g", str(VALID / "run-1.json")).exit_code == 0

    class FullDisk(io.TextIOBase):
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    wrap = cli_main._OutputStream
    monkeypatch.setattr(cli_main, "_OutputStream", lambda stream: wrap(FullDisk()))
    result = invoke(migrated_url, "goals")
    assert result.exit_code == 2, result.output
    assert result.stderr == "benchledger: cannot write to standard output (No space left on device); the output is incomplete\n"


# -- PostgreSQL connect_timeout -----------------------------------------------------------------


@pytest.mark.parametrize(
    "url, expected",
    [("postgresql://u@db.invalid/ledger", 10), ("postgresql://u@db.invalid/ledger?connect_timeout=3", "3")],
)
def test_a_server_that_does_not_answer_is_given_up_after_the_connect_timeout(monkeypatch, url, expected):
    import psycopg2

    from benchledger.errors import LedgerUnavailable
    from benchledger.ledger.storage.engine import create_ledger_engine, database_errors_as_unavailable

    seen = {}

    def refuse(*args, **kwargs):
        seen.update(kwargs)
        raise psycopg2.OperationalError("timeout expired")

    monkeypatch.setattr(psycopg2, "connect", refuse)
    engine = create_ledger_engine(url)
    with pytest.raises(LedgerUnavailable, match="timeout expired"), database_errors_as_unavailable(url):
        engine.connect()
    assert seen["connect_timeout"] == expected


@pytest.mark.parametrize("query, timeout", [("?connect_timeout=2", 2), ("", 10)], ids=["url-timeout", "default-timeout"])
def test_a_server_that_accepts_but_never_answers_is_given_up_after_the_connect_timeout(query, timeout):
    """A real socket that takes the connection and never says a word (a blackholed server), as a user's command meets it."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # (connections wait in the backlog: never accepted, never answered)
        url = f"postgresql://u@127.0.0.1:{silent.getsockname()[1]}/ledger{query}"
        started = time.monotonic()
        result = subprocess.run([BENCHLEDGER, "--database-url", url, "goals"], capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("benchledger: cannot use the ledger at postgresql://u@127.0.0.1:") and line.endswith("timeout expired")
    assert timeout - 0.5 <= elapsed < timeout + 15  # it waited for the timeout, and no longer (process start-up under load)
