"""Helpers the tests share: run a command against a ledger URL, count its rows, draw JSON values."""

from __future__ import annotations

from click.testing import CliRunner
from hypothesis import strategies as st
from sqlalchemy import func, select

from benchledger.cli.main import cli
from benchledger.ledger.storage.schema import metadata
from benchledger.ledger.storage.store import Store


def invoke(url, *args, input=None, env=None):
    """``benchledger --database-url URL ARGS`` (with ``env`` set); an exception escaping the command fails the test."""
    return CliRunner().invoke(cli, ["--database-url", url, *args], input=input, env=env, catch_exceptions=False)


def row_counts(url) -> dict[str, int]:
    """Rows per table of the ledger at ``url`` (what "nothing written" is checked against)."""
    ledger = Store.open(url)
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

    from benchledger.ledger.service.ingest import ingest
    from benchledger.ledger.service.intake.artifacts import Artifact

    ledger = Store.open(url)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Store, "persistent", property(lambda self: False))
            ingest(ledger, goal, [Artifact(kind, payload) for kind, payload in artifacts], source=source)
    finally:
        ledger.close()


def json_values(texts, *, max_leaves):
    """Decoded JSON values (a hypothesis strategy) whose strings and keys are drawn from ``texts``."""
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
        max_leaves=max_leaves,
    )
