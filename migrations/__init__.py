"""The alembic migrations of the ledger's schema (``benchledger db upgrade``)."""

from benchledger._layers import refuse_bare_name

refuse_bare_name(__name__)
