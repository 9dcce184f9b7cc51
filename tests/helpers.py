"""Helpers the CLI-level tests share: run a command against a ledger URL, count its rows."""

from __future__ import annotations

from click.testing import CliRunner
from sqlalchemy import func, select

from benchledger.cli.main import cli
from benchledger.ledger.schema import metadata
from benchledger.ledger.store import Ledger


def invoke(url, *args, input=None, env=None):
    """``benchledger --database-url URL ARGS`` (with ``env`` set); an exception escaping the command fails the test."""
    return CliRunner().invoke(cli, ["--database-url", url, *args], input=input, env=env, catch_exceptions=False)


def row_counts(url) -> dict[str, int]:
    """Rows per table of the ledger at ``url`` (what "nothing written" is checked against)."""
    ledger = Ledger.open(url)
    try:
        with ledger.engine.connect() as connection:
            return {t.name: connection.execute(select(func.count()).select_from(t)).scalar_one() for t in metadata.sorted_tables}
    finally:
        ledger.close()


def ingest_unguarded(url, goal, artifacts, *, source):
    """``artifacts`` (``(kind, payload)`` pairs) appended as a build before the storage guard kept them (NaN, NUL, surrogates).

    The store skips its guard only for a throwaway ledger; pretending to be one
    writes exactly what such a build wrote (hash chain and projections included).
    """
    import pytest

    from benchledger.ledger.application import ingest
    from benchledger.ledger.intake.artifacts import Artifact

    ledger = Ledger.open(url)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Ledger, "persistent", property(lambda self: False))
            ingest(ledger, goal, [Artifact(kind, payload) for kind, payload in artifacts], source=source)
    finally:
        ledger.close()
