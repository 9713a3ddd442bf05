"""Kernel traces: the format, its reader/writer, and the canonical synthetic traces (spec §4.3, §6.3).

A trace is one task (one inference) of a service: an ordered list of kernel launches

    Op(kid, dur, cpu_before, sync_after)

``kid`` is the canonical kernel ID string (:mod:`gpuweave.kernel.ids`), ``dur`` the kernel's device
time (ms), ``cpu_before`` the host time spent before the launch (ms), ``sync_after`` whether the host
waits for the stream to drain after the launch. The task ends with an implicit synchronisation.

File format (JSON, ``format: gpuweave.kernel.trace``, ``version: 1``)::

    {"format": "gpuweave.kernel.trace", "version": 1, "name": "HI",
     "kernels": [{"id": "k0|b1,1,1|g1,1,1", "dur": 0.05, "cpu_before": 0.0, "sync_after": true}, ...]}

Instead of ``cpu_before``/``sync_after`` a kernel may give ``gap_after`` (a kernel-gap trace); such a
trace is converted to closed-loop ops (``cpu_before_i = gap_{i−1}``, ``sync_after = true``), which
reproduces its exclusive timeline exactly (spec §4.3). Mixing the two styles in one file is an error.

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

import json
import math
from dataclasses import dataclass
from pathlib import Path

from gpuweave.errors import InputError
from gpuweave.kernel.ids import KernelId

TRACE_FORMAT = "gpuweave.kernel.trace"
TRACE_VERSION = 1
MAX_TRACE_KERNELS = 1_000_000


@dataclass(frozen=True, slots=True)
class Op:
    kid: str
    dur: float
    cpu_before: float
    sync_after: bool


@dataclass(frozen=True, slots=True)
class Trace:
    """One task of a service as a sequence of kernel launches."""

    name: str
    ops: tuple[Op, ...]

    def __post_init__(self) -> None:
        if not self.ops:
            raise InputError(f"trace {self.name!r} has no kernels", field="kernels")

    @property
    def n(self) -> int:
        return len(self.ops)

    def total_dur(self) -> float:
        return sum(o.dur for o in self.ops)

    def total_cpu(self) -> float:
        return sum(o.cpu_before for o in self.ops)

    def to_dict(self) -> dict:
        return {
            "format": TRACE_FORMAT,
            "version": TRACE_VERSION,
            "name": self.name,
            "kernels": [
                {"id": o.kid, "dur": o.dur, "cpu_before": o.cpu_before, "sync_after": o.sync_after} for o in self.ops
            ],
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def from_gaps(cls, name: str, kernels: list[tuple[str, float, float]]) -> "Trace":
        """Kernel-gap trace ``[(kid, dur, gap_after), ...]`` → closed-loop ops (spec §4.3)."""
        ops = []
        prev_gap = 0.0
        for kid, dur, gap in kernels:
            ops.append(Op(kid, dur, prev_gap, True))
            prev_gap = gap
        return cls(name, tuple(ops))

    @classmethod
    def from_dict(cls, data: object, *, file: str | None = None) -> "Trace":
        if not isinstance(data, dict):
            raise InputError("trace must be a JSON object", file=file)
        if data.get("format") != TRACE_FORMAT:
            raise InputError(f"not a kernel trace (expected format {TRACE_FORMAT!r})", file=file, field="format")
        if data.get("version") != TRACE_VERSION:
            raise InputError(f"unsupported trace version {data.get('version')!r}", file=file, field="version")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise InputError("trace needs a non-empty 'name'", file=file, field="name")
        kernels = data.get("kernels")
        if not isinstance(kernels, list) or not kernels:
            raise InputError("trace needs a non-empty list 'kernels'", file=file, field="kernels")
        if len(kernels) > MAX_TRACE_KERNELS:
            raise InputError(f"trace has more than {MAX_TRACE_KERNELS} kernels", file=file, field="kernels")
        gap_style = isinstance(kernels[0], dict) and "gap_after" in kernels[0]
        rows: list[tuple[str, float, float, bool]] = []
        for row, k in enumerate(kernels, 1):
            if not isinstance(k, dict):
                raise InputError("kernel entry must be an object", file=file, row=row)
            kid = k.get("id")
            if not isinstance(kid, str) or not kid:
                raise InputError("missing or empty kernel 'id'", file=file, row=row, field="id")
            if "|" in kid:
                try:
                    KernelId.parse(kid)
                except InputError as exc:
                    raise InputError(exc.message, file=file, row=row, field="id") from None
            dur = _num(k, "dur", file, row)
            if gap_style:
                if "cpu_before" in k or "sync_after" in k:
                    raise InputError("mixes 'gap_after' with 'cpu_before'/'sync_after'", file=file, row=row)
                gap = _num(k, "gap_after", file, row)
                rows.append((kid, dur, gap, True))
            else:
                if "gap_after" in k:
                    raise InputError("mixes 'gap_after' with 'cpu_before'/'sync_after'", file=file, row=row)
                cpu = _num(k, "cpu_before", file, row)
                sync = k.get("sync_after")
                if not isinstance(sync, bool):
                    raise InputError(
                        f"'sync_after' must be true or false, got {sync!r}", file=file, row=row, field="sync_after"
                    )
                rows.append((kid, dur, cpu, sync))
        if gap_style:
            return cls.from_gaps(name, [(kid, dur, gap) for kid, dur, gap, _ in rows])
        return cls(name, tuple(Op(kid, dur, cpu, sync) for kid, dur, cpu, sync in rows))

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        from gpuweave.files import load_json

        p = Path(path)
        return cls.from_dict(load_json(p, what="trace file"), file=str(p))


def _num(k: dict, name: str, file: str | None, row: int) -> float:
    if name not in k:
        raise InputError(f"missing field '{name}'", file=file, row=row, field=name)
    v = k[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(f"'{name}' must be a finite number (ms), got {v!r}", file=file, row=row, field=name)
    if v < 0:
        raise InputError(f"'{name}' must be >= 0 ms, got {v!r}", file=file, row=row, field=name)
    return float(v)


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
        from gpuweave.kernel.models import model_trace

        return model_trace(ref.split(":", 1)[1])
    p = Path(ref)
    if base is not None and not p.is_absolute():
        p = base / p
    return Trace.load(p)
