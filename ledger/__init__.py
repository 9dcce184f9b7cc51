"""benchledger's event store: schema, append, read, hashing and artifact intake.

Importing this package is cheap on purpose: the review commands import
``ledger.intake`` on every call, so SQLAlchemy is only imported by the
modules that talk to a database.
"""
