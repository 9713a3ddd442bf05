"""Cluster traces: one schema (:mod:`.schema`), readers for public formats, a Philly-like generator.

The names below are imported lazily so that ``import gpuweave.workload.traces`` (done by the CLI at start
up) stays cheap; pandas is only imported when a trace is read or written.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "read_trace": "schema",
    "write_trace": "schema",
    "validate_frame": "schema",
    "fill_work": "schema",
    "frame_to_jobs": "schema",
    "jobs_to_frame": "schema",
    "TRACE_COLUMNS": "schema",
    "TraceColumn": "schema",
    "read_gavel_trace": "gavel",
    "read_openb_pods": "alibaba",
    "read_openb_nodes": "alibaba",
    "read_spot_nodes": "alibaba",
    "read_spot_jobs": "alibaba",
    "read_tiresias_trace": "tiresias",
    "read_philly_jobs": "philly",
    "read_helios_jobs": "helios",
    "read_pai_tasks": "pai",
    "read_pai_machines": "pai",
    "generate_philly_like": "generate",
    "load_trace_frame": "formats",
    "detect_format": "formats",
    "FORMATS": "formats",
    "canonical_gpu_model": "gpu_names",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
