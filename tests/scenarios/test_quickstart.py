"""The README's main job, as a newcomer runs it: `bash examples/quickstart.sh` into an empty embedded ledger, twice."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "quickstart.sh"


def test_the_quickstart_ingests_the_examples_and_shows_the_goal_history_pairs_and_a_clean_audit(tmp_path):
    if not (ROOT / ".venv" / "bin" / "benchledger").exists():
        pytest.skip("the quickstart runs .venv/bin/benchledger, which the README's first command (or .ci/run) creates")
    env = {**os.environ, "BENCHLEDGER_HOME": str(tmp_path), "COLUMNS": "200"}
    env.pop("BENCHLEDGER_DATABASE_URL", None)
    first = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "ledger.sqlite").exists()
    assert "budget_counted" in first.stdout  # the history reaches the demo's last phase
    assert "db-wal-recovery  fixture-pair  hardened-codex" in first.stdout  # the pair, with its own task's runs
    assert "clean" in first.stdout.lower()
    # Safe to rerun: nothing new is appended, the same history is shown.
    again = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("appended: 0 event(s)") >= 5 or "nothing new" in again.stdout
