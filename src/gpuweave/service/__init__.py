"""The scheduling service (``gpuweave serve``): a REST API, a database, tokens, a dashboard and metrics around the
live runtime.

Layout: :mod:`config` (the command's settings), :mod:`db` (tables, engines, Alembic migrations in ``migrations/``),
:mod:`auth` (users and token hashes), :mod:`store` (what the API reads and writes), :mod:`ledger` (the runtime's
journal on the database: each transition committed before it is acted on; restart after ``kill -9``),
:mod:`scheduler` (the live runtime's loop fed from the database, in a thread), :mod:`jobs` (submission to
runtime job), :mod:`app` (FastAPI routes, errors, limits), :mod:`metrics` (Prometheus), :mod:`logs` (JSON lines),
:mod:`server` (checks, then uvicorn), :mod:`client` (the CLI's HTTP client), ``static/`` (the dashboard).
Depends on :mod:`gpuweave.live` and below; only :mod:`gpuweave.cli` imports it.
"""
