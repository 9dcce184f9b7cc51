"""Migrations: the migrated schema is the models' schema, on every backend."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from benchledger.ledger.migrate import (
    HEAD_REVISION,
    LedgerNeedsUpgrade,
    current_revision,
    ensure_current,
    script_head,
    upgrade,
)
from benchledger.ledger.schema import metadata
from benchledger.ledger.store import Ledger, create_ledger_engine


def test_head_revision_constant_matches_the_scripts():
    assert script_head() == HEAD_REVISION


def test_migrated_schema_equals_models(ledger_url):
    engine = create_ledger_engine(ledger_url)
    upgrade(engine)
    with engine.connect() as connection:
        assert current_revision(connection) == HEAD_REVISION
        diff = compare_metadata(MigrationContext.configure(connection), metadata)
    assert diff == []


def test_embedded_sqlite_is_migrated_on_open(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    ledger = Ledger.open(url)
    with ledger.engine.connect() as connection:
        assert current_revision(connection) == HEAD_REVISION


@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
def test_server_ledger_is_not_migrated_behind_its_owners_back(ledger_url):
    engine = create_ledger_engine(ledger_url)
    with pytest.raises(LedgerNeedsUpgrade, match="benchledger .*db upgrade"):
        ensure_current(engine)
    with engine.connect() as connection:
        assert current_revision(connection) is None
