"""Every command, run against a database it cannot use, says so in one or two lines with the documented exit code."""

from __future__ import annotations

import os
import stat

import click
import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.errors import USAGE

BROKEN_URLS = {
    "sqlite-missing-directory": ("sqlite:////nonexistent-dir/x.sqlite", "the directory /nonexistent-dir does not exist"),
    "postgresql-unreachable": ("postgresql://u:secret@127.0.0.1:1/x", "127.0.0.1"),
    "mysql": ("mysql://x@h/y", "not mysql"),
}

# The minimal valid arguments of each command that takes required ones (paths need not exist when the
# database is refused first; review commands name their required inputs).
ARGUMENTS = {
    "ingest": ["--goal", "g", "{file}"],
    "show": ["g"],
    "history": ["g"],
    "import-loopx": ["--goal", "g", "{run_ledger}"],
    "import-ndjson": ["{file}"],
}


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


def _review_argv(command: click.Command, file: str) -> list[str]:
    """The required options of a review command, each given ``file`` (or a plain value)."""
    argv = []
    for param in command.params:
        if isinstance(param, click.Option) and param.required:
            argv += [param.opts[0], file if "json" in param.name or "path" in param.name or "ledger" in param.name else "x"]
    return argv


COMMANDS = _commands(cli)


def test_the_walk_covers_every_command():
    names = {" ".join(c) for c in COMMANDS}
    assert {"ingest", "goals", "show", "history", "status", "replay", "audit", "runs", "export", "import-ndjson",
            "import-loopx", "db upgrade", "db current", "benchmark review-claim"} <= names
    assert len([c for c in COMMANDS if c[0] == "benchmark"]) == 8


@pytest.mark.parametrize("broken", sorted(BROKEN_URLS))
@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_a_broken_database_url_is_one_clear_line(tmp_path, path, broken, monkeypatch):
    monkeypatch.delenv("BENCHLEDGER_DEBUG")  # the user's view: what would reach the terminal
    url, problem = BROKEN_URLS[broken]
    file = tmp_path / "input.json"
    file.write_text('{"schema_version": "benchmark_run_v0"}')
    run_ledger = tmp_path / "benchmark-run-ledger.json"
    run_ledger.write_text('{"schema_version": "benchmark_run_ledger_v0", "benchmarks": {}}')
    context = click.Context(cli)
    command = cli
    for name in path:
        command = command.get_command(context, name)
    if path[0] == "benchmark":
        args = [*path, *_review_argv(command, str(file)), "--format", "json"]
        if path[1] != "baseline-failure-gate":
            args += ["--goal", "kept"]
    else:
        args = [*path, *(a.format(file=file, run_ledger=run_ledger) for a in ARGUMENTS.get(path[-1], []))]
    result = CliRunner().invoke(cli, ["--database-url", url, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if path[-1] == "baseline-failure-gate":
        # Without --execute the gate reviews in memory, as LoopX does: its verdict, no database involved.
        assert result.exit_code in (0, 1) and result.stdout.startswith("{"), result.output
        return
    if path[0] == "benchmark" and result.exit_code == 1:
        # A review refuses an input it cannot compact before it stores anything (LoopX's error payload, exit 1).
        assert '"error"' in result.stdout and result.stderr == "", result.output
        return
    assert result.exit_code == USAGE, (args, result.output)
    lines = result.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("benchledger: "), result.stderr
    assert problem in result.stderr and "Traceback" not in result.output and "secret" not in result.output
    assert result.stdout == ""


def test_a_read_only_ledger_refuses_writes_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("BENCHLEDGER_DEBUG")
    url = f"sqlite:///{tmp_path / 'ro.sqlite'}"
    runner = CliRunner()
    assert runner.invoke(cli, ["--database-url", url, "goals"]).exit_code == 0
    run = tmp_path / "run.json"
    run.write_text('{"schema_version": "benchmark_run_v0", "benchmark_id": "b", "mode": "m"}')
    for path in (tmp_path / "ro.sqlite", tmp_path):
        path.chmod(stat.S_IRUSR | stat.S_IXUSR | (stat.S_IRUSR if path.is_file() else 0))
    try:
        if os.access(tmp_path / "ro.sqlite", os.W_OK):
            pytest.skip("running as root: file modes do not stop writes")
        result = runner.invoke(cli, ["--database-url", url, "ingest", "--goal", "g", str(run)])
    finally:
        tmp_path.chmod(0o755)
        (tmp_path / "ro.sqlite").chmod(0o644)
    assert result.exit_code == USAGE, result.output
    assert result.stderr.startswith("benchledger: ") and "read-only" in result.stderr and "Traceback" not in result.output


def test_an_unexpected_error_is_one_line_and_exit_70(monkeypatch):
    from benchledger.ledger import views

    monkeypatch.delenv("BENCHLEDGER_DEBUG")

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(views, "goals", broken)
    result = CliRunner().invoke(cli, ["--database-url", "sqlite://", "goals"])
    assert result.exit_code == 70
    assert result.stderr.startswith("benchledger: internal error (KeyError") and "Traceback" not in result.output
