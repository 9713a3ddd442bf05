"""Alembic migrations of the service's database (applied by :func:`gpuweave.service.db.migrate`)."""
