"""Kernel traces: the canonical synthetic traces and the ``--trace`` reference resolver (spec §4.3, §6.3).

The trace type and its file format are in :mod:`gpuweave.kernel.trace_format`.

Canonical traces (spec §6.3, deterministic, ms):

- ``HI``: 200 kernels, id k = i mod 40, dur(k) = 0.05 + 0.95·((17k) mod 40)/39,
  cpu_before_0 = 0, cpu_before_i = 0.1 + 2.9·((23·((i−1) mod 40)) mod 40)/39, sync after each kernel
  (gappy, closed loop). Exclusive JCT 413.64 ms.
- ``LO``: 300 kernels, id k = i mod 60, dur(k) = 0.05 + 0.75·((7k) mod 60)/59, cpu_before 0.01,
  asynchronous (sync only at the end). Exclusive JCT 127.51 ms.
- ``LIGHT``: 160 kernels, k = i mod 32, dur = 0.02 + 0.04·((5k) mod 32)/31, gap 0.01, sync after each
  (a light high-priority model with many short kernels, AC-17).
"""

from __future__ import annotations

from pathlib import Path

from gpuweave.errors import InputError
from gpuweave.files import check_path
from gpuweave.kernel.ids import KernelId
from gpuweave.kernel.models import model_trace
from gpuweave.kernel.trace_format import Op, Trace


def _kid(prefix: str, k: int) -> str:
    return KernelId(f"{prefix}_k{k}", (128, 1, 1), (k + 1, 1, 1)).canonical()


def hi_trace() -> Trace:
    """Canonical gappy, closed-loop high-priority trace HI (spec §6.3)."""
    ops = []
    for i in range(200):
        k = i % 40
        dur = 0.05 + 0.95 * ((17 * k) % 40) / 39
        cpu = 0.0 if i == 0 else 0.1 + 2.9 * ((23 * ((i - 1) % 40)) % 40) / 39
        ops.append(Op(_kid("hi", k), dur, cpu, True))
    return Trace("HI", tuple(ops))


def lo_trace() -> Trace:
    """Canonical dense, asynchronous low-priority trace LO (spec §6.3)."""
    ops = []
    for i in range(300):
        k = i % 60
        dur = 0.05 + 0.75 * ((7 * k) % 60) / 59
        ops.append(Op(_kid("lo", k), dur, 0.01, False))
    return Trace("LO", tuple(ops))


def light_trace() -> Trace:
    """Light high-priority trace of AC-17: 160 short kernels, gap 0.01 ms, sync after each (spec §6.3)."""
    kernels = []
    for i in range(160):
        k = i % 32
        dur = 0.02 + 0.04 * ((5 * k) % 32) / 31
        kernels.append((_kid("light", k), dur, 0.01))
    t = Trace.from_gaps("LIGHT", kernels)
    return t


CANONICAL_TRACES = {"HI": hi_trace, "LO": lo_trace, "LIGHT": light_trace}


def resolve_trace(ref: str, *, base: Path | None = None) -> Trace:
    """``canonical:HI`` / ``model:resnet50`` / a path to a trace JSON file."""
    if ref.startswith("canonical:"):
        name = ref.split(":", 1)[1]
        if name not in CANONICAL_TRACES:
            raise InputError(f"unknown canonical trace {name!r} (known: {', '.join(CANONICAL_TRACES)})", field="trace")
        return CANONICAL_TRACES[name]()
    if ref.startswith("model:"):
        return model_trace(ref.split(":", 1)[1])
    p = Path(check_path(ref, field="trace"))
    if base is not None and not p.is_absolute():
        p = base / p
    return Trace.load(p)
