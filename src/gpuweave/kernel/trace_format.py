"""The kernel trace type and its JSON file format (spec §4.3).

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
Reading is O(kernels). The trace sources (canonical, model-shaped, imported) live in
:mod:`gpuweave.kernel.traces`, :mod:`gpuweave.kernel.models` and :mod:`gpuweave.kernel.torch_import`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpuweave.checks import KERNEL_MS, number
from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.kernel.ids import KernelId
from gpuweave.limits import check_limit

TRACE_FORMAT = "gpuweave.kernel.trace"
TRACE_VERSION = 1


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
        """A trace from its JSON form (module docstring); malformed input raises InputError naming the row."""
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
        check_limit("trace_kernels", len(kernels), "kernels in the trace", file=file, field="kernels")
        gap_style = isinstance(kernels[0], dict) and "gap_after" in kernels[0]
        rows = [_parse_kernel(k, row, gap_style, file) for row, k in enumerate(kernels, 1)]
        if gap_style:
            return cls.from_gaps(name, [(kid, dur, gap) for kid, dur, gap, _ in rows])
        return cls(name, tuple(Op(kid, dur, cpu, sync) for kid, dur, cpu, sync in rows))

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        p = Path(path)
        return cls.from_dict(load_json(p, what="trace file"), file=str(p))


def _num(k: dict, name: str, file: str | None, row: int) -> float:
    if name not in k:
        raise InputError(f"missing field '{name}'", file=file, row=row, field=name)
    return number(k[name], KERNEL_MS, file=file, row=row, field=name)


def _parse_kernel(k: object, row: int, gap_style: bool, file: str | None) -> tuple[str, float, float, bool]:
    """One ``kernels`` entry as ``(kid, dur, cpu_before or gap_after, sync_after)``; both styles, never mixed."""
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
        return kid, dur, _num(k, "gap_after", file, row), True
    if "gap_after" in k:
        raise InputError("mixes 'gap_after' with 'cpu_before'/'sync_after'", file=file, row=row)
    cpu = _num(k, "cpu_before", file, row)
    sync = k.get("sync_after")
    if not isinstance(sync, bool):
        raise InputError(f"'sync_after' must be true or false, got {sync!r}", file=file, row=row, field="sync_after")
    return kid, dur, cpu, sync
