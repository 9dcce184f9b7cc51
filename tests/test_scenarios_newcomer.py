"""A newcomer's afternoon: the README followed as written, then the usual mistakes, each checked as a user types it.

Every message must name the file or the setting and the problem, exit non-zero,
write nothing and show no traceback (BENCHLEDGER_DEBUG is unset here where a
test checks that no internal error escapes).
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from benchledger.cli.main import cli

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo"


def _embedded(args: list[str], home: Path):
    """``benchledger ARGS`` on the embedded default ledger of ``BENCHLEDGER_HOME=home``, as a user's shell runs it."""
    env = {"BENCHLEDGER_HOME": str(home), "BENCHLEDGER_DATABASE_URL": None, "BENCHLEDGER_DEBUG": None}
    return CliRunner().invoke(cli, args, env=env)


def test_benchledger_home_pointing_to_a_file_is_named_not_an_internal_error(tmp_path):
    # A user sets BENCHLEDGER_HOME to the ledger file itself (or to any file) instead of its folder.
    home = tmp_path / "ledger.sqlite"
    home.write_bytes(b"not a folder")
    for args in (["goals"], ["ingest", "--goal", "g", str(DEMO / "04-run-baseline.json")], ["info"]):
        result = _embedded(args, home)
        assert result.exit_code == 2, (args, result.output)
        assert (
            result.stderr
            == f"benchledger: BENCHLEDGER_HOME is {home}, which is not a directory: it must name the folder that holds ledger.sqlite\n"
        ), args
    assert home.read_bytes() == b"not a folder"
    # a file further up the path is named the same way
    below = _embedded(["goals"], home / "sub")
    assert below.exit_code == 2 and "which is not a directory" in below.stderr and "internal error" not in below.stderr
