"""Alembic environment: migrations run on the connection benchledger hands over."""

from alembic import context

from benchledger.ledger.schema import metadata

config = context.config
connection = config.attributes.get("connection")

if connection is None:  # alembic's own command line
    from sqlalchemy import create_engine

    with create_engine(config.get_main_option("sqlalchemy.url")).connect() as connection:
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
