"""The library API (``benchledger.ledger.__all__``): what the commands call, usable without click."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import benchledger.ledger as api
from benchledger.errors import BenchledgerError, UnknownGoal
from benchledger.ledger.service.intake.artifacts import collect_artifacts

DEMO = Path(__file__).parents[2] / "examples" / "demo"


def test_every_public_name_resolves():
    assert all(callable(getattr(api, name)) or name == "HEAD_REVISION" for name in api.__all__)
    with pytest.raises(AttributeError):
        api.no_such_name  # noqa: B018


def test_importing_the_api_does_not_import_sqlalchemy():
    """The review commands import it on every call: the names load on first use."""
    code = "import sys, benchledger.ledger; print('sqlalchemy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_a_library_caller_gets_the_commands_rules(migrated_url, tmp_path):
    ledger = api.open_store(migrated_url)
    try:
        artifacts, _, refused = collect_artifacts([str(DEMO / "04-run-baseline.json"), str(DEMO / "06-comparison.json")], None)
        assert refused == []
        api.ingest(ledger, "goal-1", artifacts, source="library")
        assert [g["goal_id"] for g in api.goals(ledger)] == ["goal-1"]
        assert api.audit(ledger)["ok"] is True
        assert len(api.select_runs(ledger, goal_id="goal-1")) == 1
        with pytest.raises(UnknownGoal, match="no goal 'nope'"):
            api.history(ledger, "nope")
        # The store's guard holds for library callers too: an input holding a local path is not kept.
        comparison = next(a for a in artifacts if a.kind == "comparison")
        leaking = dataclasses.replace(comparison, payload={**comparison.payload, "comparison_id": "/Users/me/notes.txt"})
        with pytest.raises(BenchledgerError, match=r"06-comparison.json: \$\.comparison_id of this comparison holds a local path") as refused_keep:
            api.evaluate_and_keep(ledger, "goal-2", "review-claim", [leaking], {})
        assert isinstance(refused_keep.value, BenchledgerError) and refused_keep.value.exit_code == 1
        assert ledger.head("goal-2") is None
    finally:
        ledger.close()
