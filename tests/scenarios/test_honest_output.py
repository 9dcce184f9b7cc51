"""Honest output: journeys as a user types them, on both backends.

Which ledger a command used (``info``, the note when the embedded default is
created) and error lists that stay readable (capped) on every command that
lists problems.
"""

from __future__ import annotations

import json
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
    assert first.stderr == f"benchledger: note: created a new, empty ledger at {tmp_path / 'typo' / 'ledger.sqlite'} (`benchledger info` names the ledger in use)\n"
    again = runner.invoke(cli, ["info", "--format", "json"], env=env, catch_exceptions=False)
    assert again.exit_code == 0 and again.stderr == ""
    assert json.loads(again.stdout)["url"] == f"sqlite:///{tmp_path / 'typo' / 'ledger.sqlite'}"
    # a ledger named explicitly is never announced
    explicit = runner.invoke(cli, ["--database-url", f"sqlite:///{tmp_path / 'other.sqlite'}", "goals"], env=env, catch_exceptions=False)
    assert explicit.exit_code == 0 and explicit.stderr == ""


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
