"""The event core: a heap of timestamped events, nothing policy-specific."""

from gpuweave.engine.events import EventQueue  # noqa: F401
