"""Helpers the tests share: run a command against a ledger URL, count its rows, draw JSON values, read text as a reader does."""

from __future__ import annotations

import unicodedata
import urllib.parse

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

    The store's guard is switched off for this one store (``Store.guarded``, off for a stateless review's throwaway
    ledger): it writes exactly what such a build wrote (hash chain and projections included).
    """
    from benchledger.ledger.service.ingest import ingest
    from benchledger.ledger.service.intake.artifacts import Artifact

    ledger = Store.open(url)
    ledger.guarded = False
    try:
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


# Default_Ignorable_Code_Point of Unicode 14 (DerivedCoreProperties.txt), written out here.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


def invisible(character: str) -> bool:
    """A format character (category Cf) or a default-ignorable code point: what the guard removes before it looks again."""
    point = ord(character)
    return unicodedata.category(character) == "Cf" or any(low <= point <= high for low, high in DEFAULT_IGNORABLE)


def as_a_reader_sees_it(text: str) -> str:
    """NFKC-folded, invisible characters removed, percent-decoded, until nothing changes (three decodings at most)."""
    for _ in range(3):
        folded = "".join(c for c in unicodedata.normalize("NFKC", text) if not invisible(c))
        decoded = urllib.parse.unquote(folded)
        if decoded == text:
            return text
        text = decoded
    return "".join(c for c in unicodedata.normalize("NFKC", text) if not invisible(c))


def edit_in_sql(url: str, statement: str) -> None:
    """Change the ledger as someone with database access would, behind benchledger's back."""
    from sqlalchemy import create_engine, text

    from benchledger.ledger.storage.engine import normalize_url

    engine = create_engine(normalize_url(url))
    with engine.begin() as connection:
        connection.execute(text(statement))
    engine.dispose()
