"""Backend fixtures: the same tests run on SQLite and on PostgreSQL (contract-suite style).

PostgreSQL tests use ``BENCHLEDGER_TEST_POSTGRES_URL`` (CI sets it). When it is
unset they are skipped; when it is set and the server cannot be reached they
fail. Every test gets its own PostgreSQL schema, dropped afterwards.

The ``loopx`` fixture is LoopX 0.4.8's executable (``tests/loopx.py``), for
the tests that compare with it live: they skip, saying how to provide it,
when there is none.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import quote

import pytest
from hypothesis import settings
from sqlalchemy import create_engine, text

from benchledger.ledger.storage.engine import normalize_url
from benchledger.ledger.storage.store import Store
from tests.loopx import MISSING, loopx_executable

# No example has a deadline: a test asserts what the code does, never how long it took (a loaded CI
# machine made a 7 ms example take 261 ms and failed it as "flaky"); speed is measured in benchmarks/.
settings.register_profile("benchledger", deadline=None)
settings.load_profile("benchledger")

POSTGRES_URL = os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL")
# A bug must fail its test with its traceback, not become the CLI's one-line "internal error" (exit 70).
os.environ.setdefault("BENCHLEDGER_DEBUG", "1")
BACKENDS = ["sqlite", "postgresql"]


def _postgres_schema_url(schema: str) -> str:
    base = normalize_url(POSTGRES_URL)
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options={quote(f'-csearch_path={schema}')}"


@pytest.fixture(params=BACKENDS)
def ledger_url(request, tmp_path):
    """A URL of an empty ledger database on each backend."""
    if request.param == "sqlite":
        # An empty file, as the PostgreSQL database below is empty: a command that only reads refuses it (as it refuses
        # a file that does not exist), and one that writes makes it a ledger, saying it created it (docs/configuration.md).
        (tmp_path / "ledger.sqlite").touch()
        yield f"sqlite:///{tmp_path / 'ledger.sqlite'}"
        return
    if not POSTGRES_URL:
        pytest.skip("BENCHLEDGER_TEST_POSTGRES_URL is not set")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(normalize_url(POSTGRES_URL))
    with admin.begin() as connection:  # fails loudly when the server is unreachable
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield _postgres_schema_url(schema)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def migrated_url(ledger_url):
    """The URL of a migrated, empty ledger on each backend (what `benchledger db upgrade` leaves)."""
    from benchledger.ledger.storage.engine import create_ledger_engine
    from benchledger.ledger.storage.migrate import upgrade

    engine = create_ledger_engine(ledger_url)
    upgrade(engine)
    engine.dispose()
    return ledger_url


@pytest.fixture
def ledger(migrated_url):
    """A migrated, empty :class:`Store` on each backend."""
    opened = Store.open(migrated_url)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def loopx() -> str:
    """LoopX 0.4.8's executable; the test skips, naming BENCHLEDGER_LOOPX, when there is none."""
    found = loopx_executable()
    if found is None:
        pytest.skip(MISSING)
    return found
