"""Migrations: the migrated schema is the models' schema, on every backend."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from benchledger.ledger.storage.engine import create_ledger_engine
from benchledger.ledger.storage.migrate import (
    HEAD_REVISION,
    LedgerNeedsUpgrade,
    current_revision,
    ensure_current,
    script_head,
    upgrade,
)
from benchledger.ledger.storage.schema import DDL_INDEXES, metadata
from benchledger.ledger.storage.store import Store
from tests.helpers import invoke


def test_head_revision_constant_matches_the_scripts():
    assert script_head() == HEAD_REVISION


def test_migrated_schema_equals_models(ledger_url):
    engine = create_ledger_engine(ledger_url)
    upgrade(engine)
    with engine.connect() as connection:
        assert current_revision(connection) == HEAD_REVISION
        # (the indexes made by DDL of their own are compared by the schema dumps: tests/contract/test_schema_reference.py)
        skip_ddl_indexes = {"include_object": lambda item, name, kind, *_: not (kind == "index" and name in DDL_INDEXES)}
        diff = compare_metadata(MigrationContext.configure(connection, opts=skip_ddl_indexes), metadata)
    assert diff == []


def test_embedded_sqlite_is_migrated_on_open(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    ledger = Store.open(url)
    with ledger.engine.connect() as connection:
        assert current_revision(connection) == HEAD_REVISION


@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
def test_server_ledger_is_not_migrated_behind_its_owners_back(ledger_url):
    engine = create_ledger_engine(ledger_url)
    with pytest.raises(LedgerNeedsUpgrade, match="benchledger .*db upgrade"):
        ensure_current(engine)
    with engine.connect() as connection:
        assert current_revision(connection) is None


def test_upgrade_sql_prints_the_migration_without_touching_the_database(ledger_url):
    """An operator reviews `db upgrade --sql` first; the database stays as it was."""
    result = invoke(ledger_url, "db", "upgrade", "--sql")
    assert result.exit_code == 0, result.output
    assert "CREATE TABLE events" in result.output
    assert "CREATE TRIGGER events_no_" in result.output
    assert f"version_num='{HEAD_REVISION}'" in result.output
    engine = create_ledger_engine(ledger_url)
    with engine.connect() as connection:
        assert current_revision(connection) is None
    engine.dispose()


def test_upgrade_sql_from_a_revision_prints_only_the_later_revisions(ledger_url):
    result = invoke(ledger_url, "db", "upgrade", "--sql", "--from-revision", "0002")
    assert result.exit_code == 0, result.output
    assert "CREATE TABLE events" not in result.output and "CREATE TABLE projection_rows" not in result.output
    assert "DELETE FROM projection_rows WHERE projection = 'lifecycle-history'" in result.output
    assert "CREATE TABLE projection_counts" in result.output  # (0005)


def test_upgrade_sql_names_an_unknown_revision(ledger_url):
    result = invoke(ledger_url, "db", "upgrade", "--sql", "--revision", "9999")
    assert result.exit_code == 2
    assert "9999" in result.output
    assert "Traceback" not in result.output


def test_from_revision_needs_sql(ledger_url):
    result = invoke(ledger_url, "db", "upgrade", "--from-revision", "0001")
    assert result.exit_code == 2
    assert "--from-revision only applies with --sql" in result.output


def test_upgrade_sql_refuses_a_database_benchledger_does_not_run_on():
    result = invoke("mysql://x@h/y", "db", "upgrade", "--sql")
    assert result.exit_code == 2
    assert "not mysql" in result.output
    assert "CREATE" not in result.output and "Traceback" not in result.output
