"""Guarantees that hold on every backend (SQLite and PostgreSQL): the store, migrations, projections equal to a replay, exchange, the library API."""
