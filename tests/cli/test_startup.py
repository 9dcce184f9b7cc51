"""What a command process loads and leaves to the interpreter's teardown (what a one-artifact
ingest costs as a whole process). Checked through ``sys.modules`` and the collector's state, never by timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from benchledger.cli.main import COMMANDS, cli

DEMO = Path(__file__).parents[2] / "examples" / "demo"

# Modules an ingest into a ledger at the current schema revision has no use for: the migration tool, the
# ORM, the other commands and what only they need, the worker processes of replay and audit, the report's libraries.
NOT_FOR_AN_INGEST = (
    "alembic",
    "multiprocessing",
    "concurrent.futures.process",
    "mako",
    "sqlalchemy.orm",
    "sqlalchemy.ext",
    "jinja2",
    "plotly",
    "cryptography",  # (signing checkpoints: the [sign] extra)
    "benchledger.cli.db",
    "benchledger.cli.interop",
    "benchledger.cli.queries",
    "benchledger.cli.report",
    "benchledger.cli.reviews",
    "benchledger.cli.web",
    "benchledger.cli.proofs",
    "benchledger.ledger.service.exchange",
    "benchledger.ledger.service.claims",
    "benchledger.ledger.service.proofs",
    "benchledger.ledger.service.signing",
    "benchledger.projections.tlog_checkpoint",
    "benchledger.ledger.service.loopx_import",
    "benchledger.ledger.read.report_views",
    "benchledger.ledger.read.views",
)


def _run_main(*argv: str, reported: tuple[str, ...] | None = None) -> dict:
    """``benchledger ARGV`` through the console script's ``main()`` in a fresh interpreter: its exit code, the
    modules it loaded of ``reported`` (default: :data:`NOT_FOR_AN_INGEST` and the other backend's dialect), the
    collector's state after."""
    unused = repr(reported) if reported is not None else (
        f"{NOT_FOR_AN_INGEST!r} + ('sqlalchemy.dialects.' + ('sqlite' if 'postgresql' in sys.argv[2] else 'postgresql'),)"
    )
    probe = (
        "import gc, json, sys\n"
        "from benchledger.cli.main import main\n"
        f"sys.argv = ['benchledger', *{list(argv)!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    code = done.code\n"
        "unfrozen = len(gc.get_objects())\n"
        f"unused = {unused}\n"
        "print(json.dumps({'code': code, 'loaded': sorted(m for m in sys.modules if m.startswith(unused)),\n"
        "                  'collecting': gc.isenabled(), 'frozen': gc.get_freeze_count(), 'unfrozen': unfrozen}), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(result.stderr.strip().splitlines()[-1])


def test_an_ingest_into_a_current_ledger_loads_only_its_own_command(migrated_url):
    state = _run_main("--database-url", migrated_url, "ingest", "--goal", "g", str(DEMO / "06-comparison.json"))
    assert state["code"] == 0
    assert state["loaded"] == []
    # The collector, paused while the command's modules were imported, collects again; what lived at the
    # end (the modules imported by the command as it ran included) went to the permanent generation,
    # which the teardown's collections skip.
    assert state["collecting"] is True
    assert state["frozen"] > 10_000 and state["unfrozen"] < 100


def test_the_first_ingest_into_an_empty_embedded_ledger_still_migrates_it(tmp_path):
    """Migrations are applied on first use: there alembic is loaded, and only there."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    first = _run_main("--database-url", url, "ingest", "--goal", "g", str(DEMO / "04-run-baseline.json"))
    assert first["code"] == 0 and "alembic" in first["loaded"]
    second = _run_main("--database-url", url, "ingest", "--goal", "g", str(DEMO / "06-comparison.json"))
    assert second["code"] == 0 and second["loaded"] == []


@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
def test_verifying_a_claim_bundle_loads_no_database_backend(migrated_url, tmp_path):
    """``verify`` is a third party's check with no ledger (docs/proofs.md): its process imports neither SQLAlchemy
    (nor the storage modules that need it) nor numpy, while ``info`` on the same machine does load SQLAlchemy."""
    from benchledger.ledger.api import generate_key
    from benchledger.ledger.api import open as open_ledger

    signing, public = generate_key("example.org/bench")
    with open_ledger(migrated_url) as ledger:
        ledger.ingest("g", [str(path) for path in sorted(DEMO.glob("*.json"))])
        bundle = ledger.publish("g", "fixture-pair", signing)
    claim, key = tmp_path / "claim.json", tmp_path / "team.pub"
    claim.write_text(json.dumps(bundle.as_dict()), encoding="utf-8")
    key.write_text(public, encoding="utf-8")
    backend = ("sqlalchemy", "numpy", "benchledger.ledger.storage.store", "benchledger.ledger.storage.merkle_log")

    checked = _run_main("verify", str(claim), "--key", str(key), reported=backend)
    assert checked["code"] == 0 and checked["loaded"] == []
    info = _run_main("--database-url", migrated_url, "info", reported=backend)
    assert info["code"] == 0 and "sqlalchemy" in info["loaded"] and "benchledger.ledger.storage.store" in info["loaded"]


def test_every_command_of_the_table_is_the_command_of_that_name():
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        assert cli.get_command(ctx, name).name == name
    assert cli.get_command(ctx, "no-such-command") is None


def test_every_command_written_in_the_cli_is_in_the_table():
    """The root finds a command through COMMANDS only: one defined and left out of it could never be run."""
    import importlib
    import pkgutil

    import benchledger.cli

    defined = {}
    for module_info in pkgutil.iter_modules(benchledger.cli.__path__):
        module = importlib.import_module(f"benchledger.cli.{module_info.name}")
        for attribute, value in vars(module).items():
            if isinstance(value, click.Command) and value is not cli and value.callback.__module__ == module.__name__:
                defined[f"{module.__name__}:{attribute}"] = value
    subcommands = {id(c) for group in defined.values() if isinstance(group, click.Group) for c in group.commands.values()}
    assert {where for where, command in defined.items() if id(command) not in subcommands} == set(COMMANDS.values())


def test_a_program_that_runs_the_cli_itself_keeps_its_collector(tmp_path):
    """Only the console script's process, which ends with its command, freezes what it imported: a test
    runner or a program calling ``cli`` many times would otherwise keep every cycle it held at the time."""
    probe = (
        "import gc, sys\n"
        "from benchledger.cli.main import cli\n"
        f"try:\n    cli(['--database-url', 'sqlite:///{tmp_path / 'l.sqlite'}', 'goals'])\nexcept SystemExit:\n    pass\n"
        "print(gc.isenabled(), gc.get_freeze_count(), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stderr.strip().splitlines()[-1] == "True 0"


def test_a_mistyped_command_is_answered_with_the_close_name():
    """click suggests from the commands added to a group; the root adds none (each loads when it runs)."""
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["ingset"])
    assert result.exit_code == 2 and "No such command 'ingset'." in result.output
    if hasattr(click.exceptions, "NoSuchCommand"):  # (click 8.4 and later make suggestions)
        assert "Did you mean 'ingest'?" in result.output


@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
def test_opening_a_postgresql_ledger_sends_only_what_it_needs(migrated_url):
    """Every statement a fresh engine sends while a ledger is opened is a round trip of every command."""
    import logging

    import psycopg2.extras
    from sqlalchemy import event

    from benchledger.ledger.storage.engine import create_ledger_engine
    from benchledger.ledger.storage.migrate import ensure_current

    sent: list[str] = []

    class Logged(psycopg2.extras.LoggingConnection):
        def cursor(self, *args, **kwargs):  # (every cursor, the plain ones psycopg2's own helpers ask for too)
            return super().cursor(*args, **{**kwargs, "cursor_factory": psycopg2.extras.LoggingCursor})

        def filter(self, msg, curs):
            sent.append(msg.decode() if isinstance(msg, bytes) else msg)
            return msg

    engine = create_ledger_engine(migrated_url)

    @event.listens_for(engine, "do_connect")
    def _logged(dialect, conn_rec, cargs, cparams):
        connection = dialect.dbapi.connect(*cargs, **cparams, connection_factory=Logged)
        connection.initialize(logging.getLogger(__name__))  # (the filter above records; the logger has no handler)
        return connection

    try:
        ensure_current(engine)
    finally:
        engine.dispose()
    # SQLAlchemy's first-connect probes (server version, schema, isolation level, string quoting),
    # then the ledger's tables and revision: no hstore oid lookup.
    assert not any("pg_type" in statement for statement in sent), sent
    assert len(sent) <= 6, sent
