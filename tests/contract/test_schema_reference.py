"""The schema a fresh migration leaves is the checked-in reference, on every backend.

Revisions carry their own frozen DDL, so a schema change must come as a new
revision; this test notices any other change (an edited old revision, an
edited ``ledger/storage/schema.py`` that the migrations do not follow). When a new
revision changes the schema on purpose, regenerate the references as
tests/schema_dump.py says and review the diff.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine

from benchledger.ledger.storage.engine import create_ledger_engine
from benchledger.ledger.storage.migrate import upgrade, upgrade_sql
from benchledger.ledger.storage.schema import metadata
from tests.schema_dump import dump

REFERENCES = Path(__file__).parents[1] / "schema"
REGENERATE = "schema differs from tests/schema/: see tests/schema_dump.py for how to regenerate after a new revision"


def reference(dialect: str) -> str:
    return (REFERENCES / f"{dialect}.sql").read_text(encoding="utf-8")


def test_migrated_schema_is_the_reference(ledger_url):
    engine = create_ledger_engine(ledger_url)
    upgrade(engine)
    with engine.connect() as connection:
        assert dump(connection) == reference(engine.dialect.name), REGENERATE
    engine.dispose()


def test_models_create_the_reference_schema(ledger_url):
    """``metadata.create_all`` (in-memory ledgers) installs what the frozen migrations install."""
    engine = create_engine(ledger_url.replace("postgresql://", "postgresql+psycopg2://", 1))
    with engine.begin() as connection:
        metadata.create_all(connection)
    with engine.connect() as connection:
        assert dump(connection) == reference(engine.dialect.name), REGENERATE
    engine.dispose()


def test_offline_sql_creates_the_reference_schema(ledger_url):
    """What `benchledger db upgrade --sql` prints, run by an operator, gives the same schema."""
    engine = create_ledger_engine(ledger_url)
    script = upgrade_sql(ledger_url)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        if engine.dialect.name == "sqlite":
            cursor.executescript(script)
        else:
            cursor.execute(script)
        raw.commit()
    finally:
        raw.close()
    with engine.connect() as connection:
        assert dump(connection) == reference(engine.dialect.name), REGENERATE
    engine.dispose()
