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
