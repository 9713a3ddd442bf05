"""Alembic's entry point: migrate the connection :func:`gpuweave.service.db.migrate` hands over."""

from alembic import context

from gpuweave.service.db import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
