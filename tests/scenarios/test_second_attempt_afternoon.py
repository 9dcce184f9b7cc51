"""A newcomer's afternoon with a second attempt, as typed at the command line, on both backends.

The journey the attempts, publish and ledger-path changes touch: a first case
run through, the same lifecycle file sent again (a no-op that says how to
record a new attempt), the second attempt named, the typical mistakes on the
way (a skipped attempt number, the wrong kind, an unknown goal, a key file
that is not there), a local path in a field (dropped before it is stored), and
a claim published and verified. Every mistake is one line on stderr, a non-zero exit and nothing
written; the audit stays clean and a replay changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
GOAL = "tb2-db-wal"


def _ok(url: str, *args: str) -> str:
    result = invoke(url, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def _refused(url: str, *args: str, says: str, code: int = 2) -> None:
    before = row_counts(url)
    result = invoke(url, *args)
    assert result.exit_code == code, result.output
    # one line saying what is wrong (a usage error is click's: after the usage lines, as every option's is)
    problem = result.stderr.strip().splitlines()[-1]
    assert says in problem and problem.startswith(("benchledger: ", "Error: ")), result.stderr
    assert "Traceback" not in result.output
    assert row_counts(url) == before


def test_a_second_attempt_with_a_newcomers_mistakes(migrated_url, tmp_path):
    for name in ("01-preflight.json", "02-launch.json", "03-post-launch.json"):
        _ok(migrated_url, "ingest", "--goal", GOAL, str(DEMO / name))
    _ok(migrated_url, "ingest", "--goal", GOAL, *(str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")))

    # the preflight sent again: nothing new, and the report says how a new attempt is recorded
    again = _ok(migrated_url, "ingest", "--goal", GOAL, str(DEMO / "01-preflight.json"))
    assert "appended: 0 event(s)" in again and "name it: --attempt 2" in again

    # mistakes on the way: each one line, nothing written
    _refused(migrated_url, "ingest", "--goal", GOAL, "--attempt", "3", str(DEMO / "01-preflight.json"), says="name 2 to open it")
    _refused(migrated_url, "ingest", "--goal", GOAL, "--attempt", "02", str(DEMO / "01-preflight.json"), says="is not an attempt id")
    _refused(migrated_url, "ingest", "--goal", GOAL, "--kind", "launch", str(DEMO / "04-run-baseline.json"), says="contradicts its schema_version")
    _refused(migrated_url, "history", "--goal", "tb2-db-wall", says="no goal 'tb2-db-wall'")
    # a local path in a field is dropped by LoopX's compaction before anything is stored (docs/privacy.md)
    local = tmp_path / "local-path.json"
    local.write_text(json.dumps({**json.loads((DEMO / "01-preflight.json").read_text()), "notes": "/home/me/secret/run.log"}))
    _ok(migrated_url, "ingest", "--goal", "scratch-paths", "--kind", "preflight", str(local))
    assert "/home/me" not in _ok(migrated_url, "export", "--goal", "scratch-paths")

    # the second attempt, named: its preflight and launch are recorded there, and it is the goal's current one
    for name in ("01-preflight.json", "02-launch.json"):
        assert "appended: 1 event(s)" in _ok(migrated_url, "ingest", "--goal", GOAL, "--attempt", "2", str(DEMO / name))
    (goal,) = [g for g in json.loads(_ok(migrated_url, "goals", "--format", "json"))["goals"] if g["goal_id"] == GOAL]
    assert (goal["attempts"], goal["attempt"], goal["current_phase"]) == (2, "2", "launched_process")
    first = json.loads(_ok(migrated_url, "history", "--goal", GOAL, "--attempt", "1", "--format", "json"))["entries"]
    assert first[-1]["lifecycle"]["current_phase"] == "budget_counted"  # the first attempt's last state is kept

    # a claim of the first attempt, published and verified; a missing key file leaves no bundle behind
    key = str(tmp_path / "team")
    _ok("sqlite://", "keygen", "--name", "example.org/team", "--output", key)
    _refused(migrated_url, "publish", "--goal", GOAL, "--comparison", "fixture-pair", "--key", "nokey.key", "--output", str(tmp_path / "c.json"), says="cannot be read")
    assert not (tmp_path / "c.json").exists()
    _ok(migrated_url, "publish", "--goal", GOAL, "--comparison", "fixture-pair", "--key", f"{key}.key", "--output", str(tmp_path / "c.json"))
    assert invoke("sqlite://", "verify", str(tmp_path / "c.json"), "--key", f"{key}.pub").exit_code == 0

    assert json.loads(_ok(migrated_url, "audit", "--format", "json"))["ok"] is True
    assert json.loads(_ok(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0


def test_a_typod_ledger_path_is_not_an_empty_ledger(tmp_path):
    typo = f"sqlite:///{tmp_path / 'ledgr.sqlite'}"
    result = invoke(typo, "goals")
    assert result.exit_code == 2 and result.stderr.startswith(f"benchledger: no ledger at {tmp_path / 'ledgr.sqlite'}: nothing has been ingested there")
    assert not list(tmp_path.iterdir())
    broken = invoke("postgresql://nobody@127.0.0.1:1/ledger", "goals")
    assert broken.exit_code == 2 and broken.stderr.startswith("benchledger: cannot use the ledger at postgresql://nobody@127.0.0.1:1/ledger")
