"""Every command, run against a database it cannot use, says so in one or two lines with the documented exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    "ingest-batches": ["{file}"],
    "report": ["--output", "{file}.site"],
    "retract": ["00000000-0000-0000-0000-000000000000", "--reason", "r"],
    "prove": ["00000000-0000-0000-0000-000000000000"],
    "prove-consistency": ["1"],
    "publish": ["--goal", "g", "--comparison", "c", "--key", "{file}", "--output", "{file}.claim"],
    "archive": ["some-goal"],
    "unarchive": ["some-goal"],
    "merge": ["{file}"],
}
# Commands that read files only, never a ledger (docs/proofs.md: a verifier holds no database).
DATABASE_FREE = {("keygen",), ("verify",), ("verify-consistency",)}


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            if command.invoke_without_command:  # (a command itself, too: `goals` lists, `goals archive G` archives)
                found.append((*prefix, name))
            found += _commands(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


DEMO = Path(__file__).parents[2] / "examples" / "demo"


def _review_argv(command: click.Command, file: str) -> list[str]:
    """The required options of a review command: the demo's comparison or run where one fits, else ``file``."""
    argv = []
    for param in command.params:
        if isinstance(param, click.Option) and param.required:
            if "comparison" in param.name:
                value = str(DEMO / "06-comparison.json")
            elif "run" in param.name or "result" in param.name:
                value = str(DEMO / "04-run-baseline.json")
            else:
                value = file if "json" in param.name or "path" in param.name or "ledger" in param.name else "x"
            argv += [param.opts[0], value]
    return argv


COMMANDS = _commands(cli)


def test_the_walk_covers_every_command():
    names = {" ".join(c) for c in COMMANDS}
    assert {"ingest", "goals", "show", "history", "status", "replay", "audit", "runs", "export", "import-ndjson",
            "import-loopx", "db upgrade", "db current", "benchmark review-claim"} <= names
    assert len([c for c in COMMANDS if c[0] == "benchmark"]) == 8


def test_a_command_that_needs_no_ledger_never_opens_the_url(tmp_path):
    result = CliRunner().invoke(cli, ["--database-url", "mysql://x@h/y", "keygen", "--name", "test.example/l", "--output", str(tmp_path / "k")])
    assert result.exit_code == 0 and (tmp_path / "k.pub").exists(), result.output
    assert {c for c in COMMANDS if c in DATABASE_FREE} == DATABASE_FREE


@pytest.mark.parametrize("broken", sorted(BROKEN_URLS))
@pytest.mark.parametrize("path", [c for c in COMMANDS if c not in DATABASE_FREE], ids=" ".join)
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
        args += ["--execute", "--goal-id", "kept"] if path[1] == "baseline-failure-gate" else ["--goal", "kept"]
    else:
        args = [*path, *(a.format(file=file, run_ledger=run_ledger) for a in ARGUMENTS.get(path[-1], []))]
    result = CliRunner().invoke(cli, ["--database-url", url, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == USAGE, (args, result.output)
    lines = result.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("benchledger: "), result.stderr
    assert problem in result.stderr and "Traceback" not in result.output and "secret" not in result.output
    assert result.stdout == ""


@pytest.mark.parametrize("path", [c for c in COMMANDS if c[0] == "benchmark"], ids=" ".join)
def test_a_review_without_goal_needs_no_database(path):
    """Without --goal (or --execute) a review runs in a throwaway in-memory ledger, as LoopX runs it: the URL is not used."""
    command = cli.get_command(click.Context(cli), "benchmark").get_command(click.Context(cli), path[1])
    args = [*path, *_review_argv(command, str(DEMO / "04-run-baseline.json")), "--format", "json"]
    result = CliRunner().invoke(cli, ["--database-url", "mysql://x@h/y", *args])
    assert result.exit_code in (0, 1) and result.stdout.startswith("{") and result.stderr == "", result.output


def test_a_read_only_ledger_refuses_writes_in_one_line(tmp_path, monkeypatch):
    """SQLite opened read-only (here: mode=ro, which also holds as root, unlike file modes) reads fine and refuses writes."""
    monkeypatch.delenv("BENCHLEDGER_DEBUG")
    path = tmp_path / "ro.sqlite"
    runner = CliRunner()
    assert runner.invoke(cli, ["--database-url", f"sqlite:///{path}", "db", "upgrade"]).exit_code == 0
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    assert runner.invoke(cli, ["--database-url", read_only, "goals"]).exit_code == 0
    result = runner.invoke(cli, ["--database-url", read_only, "ingest", "--goal", "g", str(DEMO / "04-run-baseline.json")])
    assert result.exit_code == USAGE, result.output
    assert result.stderr == f"benchledger: cannot use the ledger at {read_only}: {path} (or its directory) is read-only\n"


def test_the_installed_entry_point_prints_no_traceback(tmp_path):
    """The real process (not click's test runner): one line on stderr, exit 2."""
    environment = {k: v for k, v in os.environ.items() if k != "BENCHLEDGER_DEBUG"}
    done = subprocess.run(
        [sys.executable, "-m", "benchledger", "--database-url", "sqlite:////nonexistent-dir/x.sqlite", "goals"],
        capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=60,
    )
    assert done.returncode == USAGE and done.stdout == ""
    assert done.stderr == "benchledger: cannot use the ledger at sqlite:////nonexistent-dir/x.sqlite: the directory /nonexistent-dir does not exist\n"


def test_an_unexpected_error_is_one_line_and_exit_70(monkeypatch, tmp_path):
    from benchledger.ledger.read import views

    monkeypatch.delenv("BENCHLEDGER_DEBUG")

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    assert CliRunner().invoke(cli, ["--database-url", url, "db", "upgrade"]).exit_code == 0
    monkeypatch.setattr(views, "goal_listing", broken)
    result = CliRunner().invoke(cli, ["--database-url", url, "goals"])
    assert result.exit_code == 70
    assert result.stderr.startswith("benchledger: internal error (KeyError") and "Traceback" not in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "nope"], "no goal 'nope' in this ledger"),
        (["history", "g", "--as-of", "yesterday"], "--as-of 'yesterday' is neither a position nor an ISO-8601 time"),
        (["audit", "--expect-digest", "xx"], "not a benchledger digest: 'xx'"),
        # issue 30 item 16: each of these was "no digest" (exit 0) or a digest_mismatch (exit 1)
        (["audit", "--expect-digest", ""], "not a benchledger digest: ''"),
        (["audit", "--expect-digest", f"{2**63}:{'a' * 64}"], f"not a benchledger digest: '{2**63}:"),
        (["audit", "--expect-digest", f"1:{'A' * 64}"], "not a benchledger digest: '1:AAAA"),
        (["audit", "--expect-digest", f"1:{'a' * 63}"], "not a benchledger digest: '1:aaaa"),
        (["audit", "--expect-digest", f"01:{'a' * 64}"], "not a benchledger digest: '01:"),
        (["audit", "--goal", "g", "--expect-digest", ""], "not a benchledger digest: ''"),
        (["replay", "--projection", "nope"], "--projection 'nope' is not a projection; known: "),
        (["export", "--goal", "nope"], "no goal 'nope' in this ledger"),
        (["runs", "--goal", "nope"], "no goal 'nope' in this ledger"),
    ],
    ids=lambda value: value[0] if isinstance(value, list) else "",
)
def test_bad_input_to_a_working_ledger_is_one_line_and_exit_2(migrated_url, args, message):
    from tests.helpers import invoke

    assert invoke(migrated_url, "ingest", "--goal", "g", str(DEMO / "04-run-baseline.json")).exit_code == 0
    result = invoke(migrated_url, *args)
    assert result.exit_code == USAGE and result.stdout == "", result.output
    assert result.stderr.startswith(f"benchledger: {message}") and len(result.stderr.splitlines()) == 1, result.stderr


@pytest.mark.parametrize("jobs", ["0", "-1", "99999999999999999999", "100000", "x"])
@pytest.mark.parametrize("command", ["replay", "audit"])
def test_nonsense_jobs_is_a_usage_error(migrated_url, command, jobs):
    """Issue 30 item 17: ``--jobs`` of 10^20 ran (exit 0); it is capped at 4x the CPU count, as its help says."""
    from tests.helpers import invoke

    result = invoke(migrated_url, command, "--jobs", jobs)
    assert result.exit_code == USAGE and result.stdout == "", result.output
    assert "--jobs" in result.stderr


def test_jobs_up_to_the_cap_is_accepted(migrated_url):
    from tests.helpers import invoke

    cap = 4 * (os.cpu_count() or 1)
    assert invoke(migrated_url, "audit", "--jobs", str(cap)).exit_code == 0
    assert invoke(migrated_url, "audit", "--jobs", str(cap + 1)).exit_code == USAGE
