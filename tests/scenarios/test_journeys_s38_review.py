"""The review of session 38's change, as the next engineer and then as a new user on a fresh clone.

A dry run before the embedded default ledger exists is judged against an empty in-memory ledger standing in for it;
that stand-in skipped the storage guard (the guard is off for a stateless review's throwaway ledger, which reads
what LoopX reads), so ``ingest --dry-run`` of a run holding a local path, or an integer no float holds, said "would
append" where the real ingest refuses it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"


def _default_ledger(home: Path, *args: str):
    """``benchledger ARGS`` with the embedded default ledger of ``home`` (no --database-url), as a new user types it."""
    return CliRunner().invoke(cli, list(args), env={"BENCHLEDGER_HOME": str(home), "BENCHLEDGER_DATABASE_URL": None}, catch_exceptions=False)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("job_name", "/home/alice/run-7", "$.job_name of this run holds a local path"),
        ("official_task_score", {"value": 10**400}, "is an integer of 401 digits, beyond the range of a float"),
    ],
    ids=["local-path", "huge-integer"],
)
def test_a_dry_run_before_the_default_ledger_exists_refuses_what_the_ingest_will(tmp_path, field, value, says):
    run = json.loads((DEMO / "04-run-baseline.json").read_text())
    run[field] = value
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    home = tmp_path / "home"
    dry = _default_ledger(home, "ingest", "--goal", "goal-dry", "--dry-run", str(path))
    assert dry.exit_code == 1, dry.output
    assert says in dry.stdout and "would append" not in dry.stdout
    assert not home.exists(), "a dry run creates no ledger"
    real = _default_ledger(home, "ingest", "--goal", "goal-dry", str(path))
    assert real.exit_code == 1 and says in real.stdout
    # and what the ingest takes, the dry run says it would append
    good = _default_ledger(tmp_path / "other-home", "ingest", "--goal", "goal-dry", "--dry-run", str(DEMO / "04-run-baseline.json"))
    assert good.exit_code == 0 and "would append" in good.stdout


def test_the_walk_of_the_review_on_the_embedded_default_ledger(tmp_path):
    """The quickstart's ingests into a new machine's default ledger, then the typical mistakes, each one line on stderr,
    no traceback, nothing written; a re-generated file (same content, new bytes) is a new observation; audit is clean and
    a replay changes no row."""
    home = tmp_path / "home"

    def run(*args: str):
        return _default_ledger(home, *args)

    goal = "demo-db-wal-recovery"
    for kind, name in (("preflight", "01-preflight.json"), ("launch", "02-launch.json"), ("post-launch", "03-post-launch.json")):
        assert run("ingest", "--goal", goal, "--kind", kind, str(DEMO / name)).exit_code == 0
    assert run("ingest", "--goal", goal, *(str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json"))).exit_code == 0
    events = json.loads(run("info", "--format", "json").stdout)["events"]

    def refused(code: int, says: str, *args: str) -> None:
        done = run(*args)
        assert done.exit_code == code, done.output
        assert says in done.output and "Traceback" not in done.output, done.output
        assert json.loads(run("info", "--format", "json").stdout)["events"] == events, f"{args} wrote"

    refused(2, "did you mean 'demo-db-wal-recovery'?", "history", "--goal", "demo-db-wal-recovey")
    refused(2, "contradicts its schema_version 'benchmark_run_v0'", "ingest", "--goal", goal, "--kind", "launch", str(DEMO / "04-run-baseline.json"))
    run_with_path = json.loads((DEMO / "05-run-treatment.json").read_text()) | {"mode": "/home/bob/checkout"}
    (tmp_path / "path.json").write_text(json.dumps(run_with_path))
    refused(1, "holds a local path", "ingest", "--goal", goal, str(tmp_path / "path.json"))
    refused(2, "port 1 failed", "--database-url", "postgresql://nobody@127.0.0.1:1/x", "goals")
    refused(2, "benchledger keeps its ledger in SQLite or PostgreSQL, not bogus", "--database-url", "bogus://x", "goals")
    # the same file again appends nothing; the same content in new bytes is a new observation (an artifact's identity is its source hash)
    again = run("ingest", "--goal", goal, str(DEMO / "06-comparison.json"), "--format", "json")
    assert (json.loads(again.stdout)["appended_count"], json.loads(again.stdout)["batch_status"]) == (0, "duplicate")
    regenerated = tmp_path / "06-comparison.json"
    regenerated.write_text(json.dumps(json.loads((DEMO / "06-comparison.json").read_text()), indent=4))
    assert json.loads(run("ingest", "--goal", goal, str(regenerated), "--format", "json").stdout)["appended_count"] == 1
    assert run("audit").exit_code == 0
    replayed = run("replay", "--format", "json")
    assert replayed.exit_code == 0 and json.loads(replayed.stdout)["rows_changed"] == 0
