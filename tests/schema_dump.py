"""A stable text dump of a ledger database's schema (tables, columns, constraints, indexes,
triggers, functions), compared with the checked-in references in tests/schema/.

Regenerate a reference when a new revision changes the schema on purpose (and
review the diff: it is exactly what the revision does to users' databases):

    .venv/bin/python -m tests.schema_dump sqlite > tests/schema/sqlite.sql
    BENCHLEDGER_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test \\
        .venv/bin/python -m tests.schema_dump postgresql > tests/schema/postgresql.sql
"""

from __future__ import annotations

import re
import sys

from sqlalchemy import Connection, text

# alembic's bookkeeping is not the ledger's schema (and `metadata.create_all` has none).
IGNORED_TABLES = ("alembic_version",)


def _one_line(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).replace("( ", "(").replace(" )", ")").strip()


def _sqlite(connection: Connection) -> list[str]:
    rows = connection.execute(
        text(
            "SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type, name"
        )
    )
    return [
        f"-- {kind} {name}\n{_one_line(sql)};" for kind, name, table, sql in rows if table not in IGNORED_TABLES
    ]


_POSTGRES_QUERIES = {
    "column": """
        SELECT table_name || '.' || column_name,
               data_type || coalesce('(' || character_maximum_length || ')', '')
               || CASE WHEN is_nullable = 'NO' THEN ' NOT NULL' ELSE '' END
               || coalesce(' DEFAULT ' || column_default, '')
        FROM information_schema.columns WHERE table_schema = current_schema()
    """,
    "constraint": """
        SELECT rel.relname || '.' || con.conname, pg_get_constraintdef(con.oid)
        FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid
        WHERE rel.relnamespace = current_schema()::regnamespace
    """,
    "index": """
        SELECT tablename || '.' || indexname, indexdef
        FROM pg_indexes WHERE schemaname = current_schema()
    """,
    "trigger": """
        SELECT rel.relname || '.' || tg.tgname, pg_get_triggerdef(tg.oid)
        FROM pg_trigger tg JOIN pg_class rel ON rel.oid = tg.tgrelid
        WHERE rel.relnamespace = current_schema()::regnamespace AND NOT tg.tgisinternal
    """,
    "function": """
        SELECT p.proname, pg_get_functiondef(p.oid)
        FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
    """,
}


def _postgresql(connection: Connection) -> list[str]:
    schema = connection.execute(text("SELECT current_schema()")).scalar()
    lines = []
    for kind, query in _POSTGRES_QUERIES.items():
        for name, definition in sorted(connection.execute(text(query))):
            if name.split(".")[0] in IGNORED_TABLES:
                continue
            # Tests run each in their own schema: the dump must not name it.
            definition = _one_line(definition).replace(f"{schema}.", "")
            lines.append(f"-- {kind} {name}\n{definition};")
    return lines


def dump(connection: Connection) -> str:
    dumpers = {"sqlite": _sqlite, "postgresql": _postgresql}
    return "\n".join(dumpers[connection.dialect.name](connection)) + "\n"


def _fresh_migrated_dump(dialect: str) -> str:
    import os
    import tempfile
    import uuid

    from sqlalchemy import create_engine

    from benchledger.ledger.storage.engine import create_ledger_engine, normalize_url
    from benchledger.ledger.storage.migrate import upgrade
    from tests.conftest import _postgres_schema_url

    if dialect == "sqlite":
        with tempfile.TemporaryDirectory() as directory:
            engine = create_ledger_engine(f"sqlite:///{directory}/ledger.sqlite")
            upgrade(engine)
            with engine.connect() as connection:
                return dump(connection)
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(normalize_url(os.environ["BENCHLEDGER_TEST_POSTGRES_URL"]))
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        engine = create_ledger_engine(_postgres_schema_url(schema))
        upgrade(engine)
        with engine.connect() as connection:
            return dump(connection)
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


if __name__ == "__main__":
    sys.stdout.write(_fresh_migrated_dump(sys.argv[1]))
