"""Alembic environment: migrations run on the connection benchledger hands over.

Offline mode (``benchledger db upgrade --sql``, or alembic's own ``--sql``)
connects to nothing: it renders the SQL for the dialect named by the URL so a
server operator can review it before applying it.
"""

from alembic import context

from benchledger.ledger.storage.schema import metadata

config = context.config

if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
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
