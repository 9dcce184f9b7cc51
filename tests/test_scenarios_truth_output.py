"""Issue 14, "the ledger tells the truth", point 11 (honest output): journeys as a user types them, on both backends.

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

REPO = Path(__file__).resolve().parents[1]
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
