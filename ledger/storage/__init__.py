"""The storage room: engine, schema, canonical JSON, event records, the guard, the append, the ``Store`` and migrations.

It knows nothing of reviews (those are ``benchledger.projections``) and
imports neither ``benchledger.ledger.service`` nor ``benchledger.ledger.read``.
"""
