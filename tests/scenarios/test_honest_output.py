"""Honest output: journeys as a user types them, on both backends.

Which ledger a command used (``info``, the note when a command creates a ledger,
a read of a mistyped SQLite path refused) and error lists that stay readable (capped) on every command that
lists problems.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from click.testing import CliRunner

from benchledger.cli.main import cli
from tests.helpers import invoke

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"


def _with_password(url: str) -> str:
    """``url`` carrying a password (PostgreSQL here trusts local connections, so any password works)."""
    return url.replace("postgres@", "postgres:s3cret-pw@", 1) if url.startswith("postgresql") else url


def test_info_names_the_ledger_without_its_password(migrated_url):
    url = _with_password(migrated_url)
    assert invoke(url, "ingest", "--goal", "g", str(DEMO)).exit_code == 0
    result = invoke(url, "info", "--format", "json")
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    assert "s3cret-pw" not in result.output
    assert facts["backend"] == ("postgresql" if url.startswith("postgresql") else "sqlite")
    assert (facts["events"], facts["goals"]) == (7, 1)  # the demo's six artifacts and their batch
    assert facts["schema_revision"] == facts["schema_head"]
    if facts["backend"] == "sqlite":
        assert facts["url"] == migrated_url and facts["file_bytes"] > 0
    else:
        assert "postgres:***@" in facts["url"] and facts["file_bytes"] is None
    table = invoke(url, "info")
    assert table.exit_code == 0 and "s3cret-pw" not in table.output
    lines = table.stdout.splitlines()
    assert any(line.split()[:2] == ["events", "7"] for line in lines), lines
    assert any(line.startswith("ledger") and facts["url"] in line for line in lines), lines


def test_a_new_embedded_ledger_is_announced_once(tmp_path):
    """A mistyped BENCHLEDGER_HOME starts an empty ledger: the first command says so on stderr, later ones do not."""
    runner = CliRunner()
    env = {"BENCHLEDGER_HOME": str(tmp_path / "typo"), "BENCHLEDGER_DATABASE_URL": None}
    first = runner.invoke(cli, ["goals"], env=env, catch_exceptions=False)
    assert first.exit_code == 0
    assert first.stderr == (
        f"benchledger: note: created a new, empty ledger at {tmp_path / 'typo' / 'ledger.sqlite'} (`benchledger info` names the ledger in use)\n"
        "benchledger: note: no goals in this ledger (`benchledger info` names it); archived goals are left out (--include-archived lists them); "
        "`benchledger ingest --goal GOAL FILE...` creates one\n"
    )
    again = runner.invoke(cli, ["info", "--format", "json"], env=env, catch_exceptions=False)
    assert again.exit_code == 0 and again.stderr == ""
    assert json.loads(again.stdout)["url"] == f"sqlite:///{tmp_path / 'typo' / 'ledger.sqlite'}"
    # a ledger named explicitly that does not exist is not created by a read: see below


# -- a typo'd ledger path is not an empty ledger ------------------------------------------------

# Every command that only reads, as a user would type it against the ledger they meant.
READS = [
    ["goals"], ["history", "--goal", "g"], ["show", "--goal", "g"], ["runs"], ["runs", "--paired"], ["compare"],
    ["audit"], ["export"], ["info"], ["status"], ["checkpoint"], ["checkpoints"], ["prove-consistency", "1"],
    ["prove", "0" * 64], ["ingest", "--dry-run", "--goal", "g", str(DEMO)], ["report", "--output", "site"],
]


def _no_ledger_at(path: Path) -> str:
    return (
        f"benchledger: no ledger at {path}: nothing has been ingested there; check --database-url (or "
        "BENCHLEDGER_DATABASE_URL), or run `benchledger db upgrade` to create an empty one\n"
    )


def test_a_read_of_a_sqlite_file_that_does_not_exist_is_refused_and_creates_nothing(tmp_path, monkeypatch):
    """`--database-url sqlite:///…/typo.sqlite goals` printed an empty listing, exit 0, and left an empty ledger there."""
    monkeypatch.chdir(tmp_path)
    typo = tmp_path / "typo.sqlite"
    url = f"sqlite:///{typo}"
    for args in READS:
        result = invoke(url, *args)
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", _no_ledger_at(typo)), args
        # the environment's URL is the same ledger, refused the same way
        by_env = CliRunner().invoke(cli, args, env={"BENCHLEDGER_DATABASE_URL": url}, catch_exceptions=False)
        assert (by_env.exit_code, by_env.stderr) == (2, _no_ledger_at(typo)), args
    current = invoke(url, "db", "current")  # (it reports the revision, none here, rather than refuse)
    assert current.exit_code == 0 and current.stdout.startswith("not initialized"), current.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no ledger, no -wal/-shm, no report folder
    # the real process: one line, no traceback; `serve` stops before it listens
    for args in (["goals"], ["serve", "--port", "0"]):
        done = subprocess.run(
            [sys.executable, "-m", "benchledger", "--database-url", url, *args],
            capture_output=True, text=True, timeout=60, env={**os.environ, "BENCHLEDGER_DEBUG": ""},
        )
        assert (done.returncode, done.stdout, done.stderr) == (2, "", _no_ledger_at(typo)), args
    assert not typo.exists()


def test_the_command_that_creates_a_named_sqlite_ledger_says_so_once(tmp_path):
    """A write creates the file a URL names, saying so on stderr; `db upgrade` creates an empty one, saying so."""
    fresh = tmp_path / "fresh.sqlite"
    first = invoke(f"sqlite:///{fresh}", "ingest", "--goal", "g", str(DEMO), "--format", "json")
    assert first.exit_code == 0, first.output
    assert first.stderr == f"benchledger: note: created a new, empty ledger at {fresh} (`benchledger info` names the ledger in use)\n"
    assert json.loads(first.stdout)["appended_count"] == 6  # the demo's six artifacts
    for args in (["ingest", "--goal", "g", str(DEMO)], ["goals"]):
        again = invoke(f"sqlite:///{fresh}", *args)
        assert again.exit_code == 0 and again.stderr == "", (args, again.output)

    empty = tmp_path / "empty.sqlite"
    created = invoke(f"sqlite:///{empty}", "db", "upgrade")
    assert created.exit_code == 0, created.output
    assert created.stderr == f"benchledger: note: created a new, empty ledger in sqlite:///{empty}\n"
    upgraded_again = invoke(f"sqlite:///{empty}", "db", "upgrade")
    assert upgraded_again.exit_code == 0 and upgraded_again.stderr == ""
    listing = invoke(f"sqlite:///{empty}", "goals", "--format", "json")
    assert listing.exit_code == 0 and listing.stderr == "" and json.loads(listing.stdout)["goals"] == []


def test_an_empty_postgresql_database_is_refused_until_db_upgrade_says_it_created_a_ledger():
    """A fresh, empty database of its own on the test server: reads and writes refuse it; `db upgrade` makes it a
    ledger and says so once, its password redacted."""
    import pytest
    from sqlalchemy import create_engine, make_url, text

    from benchledger.ledger.storage.engine import normalize_url
    from tests.conftest import POSTGRES_URL

    if not POSTGRES_URL:
        pytest.skip("BENCHLEDGER_TEST_POSTGRES_URL is not set")
    name = f"bl_empty_{uuid.uuid4().hex[:12]}"
    server = make_url(normalize_url(POSTGRES_URL))
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = _with_password(server.set(database=name).render_as_string(hide_password=False).replace("+psycopg2", ""))
        shown = make_url(url).render_as_string(hide_password=True)
        for args in (["goals"], ["ingest", "--goal", "g", str(DEMO)]):
            refused = invoke(url, *args)
            assert refused.exit_code == 2 and refused.stdout == "", (args, refused.output)
            assert "is not initialized" in refused.stderr and "db upgrade" in refused.stderr, refused.stderr
        created = invoke(url, "db", "upgrade")
        assert created.exit_code == 0, created.output
        assert created.stderr == f"benchledger: note: created a new, empty ledger in {shown}\n"
        assert "s3cret-pw" not in created.output and ":***@" in shown
        again = invoke(url, "db", "upgrade")
        assert again.exit_code == 0 and again.stderr == ""
        listing = invoke(url, "goals", "--format", "json")
        assert listing.exit_code == 0 and listing.stderr == "" and json.loads(listing.stdout)["goals"] == []
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# -- error lists stay readable: the first 20, then how many more ----------------------


def _capped_lines(lines: list[str], total: int) -> None:
    """``lines`` hold exactly the first 20 of ``total`` problems and one line counting the rest."""
    assert len(lines) == 21, lines
    assert lines[-1].endswith(f"... and {total - 20} more"), lines[-1]


def test_import_ndjson_of_a_wrong_file_lists_the_first_20_problems_once_each(migrated_url, tmp_path):
    wrong = tmp_path / "not-an-export.ndjson"
    wrong.write_text("".join(json.dumps({"schema_version": "benchmark_run_v0", "case": i}) + "\n" for i in range(500)))
    result = invoke(migrated_url, "import-ndjson", str(wrong))
    assert result.exit_code == 1
    # stdout: the report; stderr: the errors; each capped
    listed = [line for line in result.stdout.splitlines() if line.startswith("- ")]
    _capped_lines(listed, 500)
    _capped_lines(result.stderr.strip().splitlines(), 500)
    assert "(500 problem(s))" in result.stdout
    report = json.loads(invoke(migrated_url, "import-ndjson", str(wrong), "--format", "json").stdout)
    assert (report["problem_count"], len(report["problems"])) == (500, 20)
    assert report["problems"][0].startswith("line 1: ")


def test_audit_lists_the_first_20_problems_and_counts_them_all(migrated_url):
    for goal in ("a", "b", "c", "d"):
        assert invoke(migrated_url, "ingest", "--goal", goal, str(DEMO)).exit_code == 0
    from benchledger.ledger.storage.store import Store

    ledger = Store.open(migrated_url)
    try:
        stored = len(ledger.projection_rows())
        with ledger.engine.begin() as connection:  # projection rows are no events: no trigger guards them, the audit does
            connection.exec_driver_sql("DELETE FROM projection_rows")
            # (and their stored counts, which would each be a problem of their own: this test is about the rows)
            connection.exec_driver_sql("DELETE FROM projection_counts")
    finally:
        ledger.close()
    assert stored > 20
    result = invoke(migrated_url, "audit")
    assert result.exit_code == 1 and f"# Audit: {stored} problem(s)" in result.stdout
    _capped_lines([line for line in result.stdout.splitlines() if line.startswith(("- projection_missing", "- ... and"))], stored)
    report = json.loads(invoke(migrated_url, "audit", "--format", "json").stdout)
    assert (report["ok"], report["problem_count"], len(report["problems"])) == (False, stored, 20)
    assert {p["kind"] for p in report["problems"]} == {"projection_missing"}
    # status and replay cap their lists alike
    status = json.loads(invoke(migrated_url, "status", "--format", "json").stdout)
    assert status["lagging_goal_count"] == 4 and status["faulted_count"] == 0


def test_import_loopx_lists_the_first_20_refused_rows(migrated_url, tmp_path):
    from tests.cli.test_import_loopx import row, run_ledger

    rows = [row(f"local-{i}", f"2026-06-20T12:{i:02d}:00+08:00", notes=f"rerun from /Users/alice/jobs/{i}") for i in range(30)]
    path = run_ledger(tmp_path, rows)
    result = invoke(migrated_url, "import-loopx", "--goal", "g", str(path))
    assert result.exit_code == 1
    _capped_lines([line for line in result.stdout.splitlines() if line.startswith("- ")], 30)
    _capped_lines(result.stderr.strip().splitlines(), 30)
    report = json.loads(invoke(migrated_url, "import-loopx", "--goal", "g", "--format", "json", str(path)).stdout)
    assert (report["refused_count"], len(report["refused"])) == (30, 20)
