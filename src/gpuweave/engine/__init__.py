"""The event core: a heap of timestamped events with one handler per event kind, nothing model-specific."""

from gpuweave.engine.loop import EventLoop  # noqa: F401
