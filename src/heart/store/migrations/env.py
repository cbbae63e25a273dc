"""Alembic environment: heart-bench runs migrations on a connection it passes in."""

from alembic import context

from heart.store._tables import Base

connection = context.config.attributes.get("connection")
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,
)
with context.begin_transaction():
    context.run_migrations()
