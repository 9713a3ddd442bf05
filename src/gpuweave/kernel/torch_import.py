"""Import a ``torch.profiler`` Chrome trace as a kernel trace (spec §4.3 "Trace import").

Problem: users with a GPU record one inference with ``torch.profiler`` and
``prof.export_chrome_trace(path)``; we turn it into a :class:`~gpuweave.kernel.traces.Trace` so the
simulator can replay their own model. Chrome-trace events used (``traceEvents``, complete events
``ph == "X"``, times in µs):

- ``cat == "kernel"``: ``name``, ``ts``, ``dur`` and ``args.grid``, ``args.block`` (3-vectors),
  ``args.correlation`` → kernel ID ``name|b…|g…`` (the demangled name through
  :func:`~gpuweave.kernel.ids.clean_kernel_name`, as the C shim writes it) and duration;
- ``cat == "cuda_runtime"`` (or ``cuda_driver``) launch events (``cudaLaunchKernel``,
  ``cuLaunchKernel``, … with the same ``args.correlation``) → host launch times, hence the host time
  before each launch: ``cpu_before_i = launch_ts_i − host_free``, where the host became free at the
  end of the previous launch call, or at the end of a synchronising runtime call
  (``…Synchronize``, a non-async ``cudaMemcpy``) that lies between the two launches, which also sets
  ``sync_after`` on the previous kernel.

Without runtime launch events the kernels are treated as a kernel-gap trace (gap = next start − end,
clamped at 0; closed loop). A kernel event without grid/block gets (1,1,1) and is reported in
``ImportReport.missing_dims``. Missing ``name``/``ts``/``dur`` or negative durations are InputErrors.
Complexity O(E log E) for E events.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path

from gpuweave.checks import Range, number
from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.kernel.ids import KernelId, clean_kernel_name
from gpuweave.kernel.trace_format import Op, Trace
from gpuweave.limits import check_limit

#: Chrome-trace times in µs: timestamps may count from the Unix epoch (about 1.7e15 µs), durations are at most
#: about 11 days (a kernel or a runtime call)
TIMESTAMP_US = Range("µs", -1e17, 1e17)
DURATION_US = Range("µs", 0.0, 1e12)
#: CUDA's largest grid dimension is 2**31 - 1
GRID_DIM = Range("", 1, 2**31 - 1, integer=True)


@dataclass(frozen=True, slots=True)
class ImportReport:
    kernels: int
    with_launch_events: int
    syncs: int
    missing_dims: int


def _dims(v: object, what: str, file: str | None, row: int) -> tuple[int, int, int] | None:
    if v is None:
        return None
    if (
        not isinstance(v, list)
        or not 1 <= len(v) <= 3
        or any(isinstance(x, bool) or not isinstance(x, int) or not GRID_DIM.lo <= x <= GRID_DIM.hi for x in v)
    ):
        shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
        raise InputError(
            f"'{what}' must be a list of 1-3 integers from 1 to {GRID_DIM.hi}, got {shown}",
            file=file,
            row=row,
            field=what,
        )
    return tuple(list(v) + [1] * (3 - len(v)))


def _time(e: dict, name: str, file: str | None, row: int) -> float:
    """An event's ``ts`` or ``dur`` (µs): finite, a duration >= 0 and neither beyond :data:`TIMESTAMP_US`,
    :data:`DURATION_US`."""
    if name not in e:
        raise InputError(f"event needs a numeric '{name}' (µs)", file=file, row=row, field=name)
    return number(e[name], DURATION_US if name == "dur" else TIMESTAMP_US, file=file, row=row, field=name)


def import_chrome_trace(source: str | Path | dict | list, name: str | None = None) -> tuple[Trace, ImportReport]:
    """Build a trace from a Chrome trace file (path) or an already-parsed JSON object.

    With a launch event for every kernel, host time and synchronisations come from the launches
    (:func:`_closed_loop_trace`); otherwise the kernels' gaps on the device stand for host time (a kernel-gap
    trace, :meth:`Trace.from_gaps`).
    """
    file = None
    if isinstance(source, (str, Path)):
        file = str(source)
        data = _read_json(Path(source))
        name = name or Path(source).stem
    else:
        data = source
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise InputError("expected a Chrome trace with a 'traceEvents' list", file=file, field="traceEvents")
    kernels, launches, syncs = _sort_events(events, file)
    check_limit("trace_kernels", len(kernels), "kernel events in the trace", file=file, field="traceEvents")
    if not kernels:
        raise InputError("no kernel events (cat 'kernel') in the trace: was it recorded with CUDA activity?", file=file)
    rows, missing = _kernel_rows(kernels, launches, file)
    rows.sort(key=lambda r: (r[0], r[1]))
    with_launch = sum(1 for r in rows if r[4] is not None)
    if with_launch == len(rows):
        trace, n_sync = _closed_loop_trace(name or "imported", rows, sorted(syncs))
    else:
        gaps = []
        by_start = sorted(rows, key=lambda r: r[1])
        for i, r in enumerate(by_start):
            gap = max(0.0, by_start[i + 1][1] - (r[1] + r[2])) if i + 1 < len(by_start) else 0.0
            gaps.append((r[3], r[2] / 1000.0, gap / 1000.0))
        trace = Trace.from_gaps(name or "imported", gaps)
        n_sync = len(rows) - 1
    return trace, ImportReport(len(rows), with_launch, n_sync, missing)


def _read_json(p: Path) -> object:
    """A profile file's JSON (:func:`gpuweave.files.load_json`: size and nesting limits, strict numbers)."""
    return load_json(p, what="torch.profiler trace")


def _sort_events(events: list, file: str | None) -> tuple[list[tuple[int, dict]], dict, list[tuple[float, float]]]:
    """Complete events ("X") split into kernels (with their row), launches by correlation id, and host
    synchronisations (Synchronize calls and blocking memcpys) as (start, end) in µs."""
    kernels: list[tuple[int, dict]] = []
    launches: dict[object, dict] = {}
    syncs: list[tuple[float, float]] = []
    for row, e in enumerate(events, 1):
        if not isinstance(e, dict) or e.get("ph", "X") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        ename = e.get("name")
        if cat == "kernel":
            kernels.append((row, e))
        elif cat in ("cuda_runtime", "cuda_driver") and isinstance(ename, str):
            args = e.get("args") or {}
            if "Launch" in ename and isinstance(args, dict) and _correlation(args) is not None:
                launches[_correlation(args)] = e
            elif "Synchronize" in ename or (ename.startswith("cudaMemcpy") and "Async" not in ename):
                ts = _time(e, "ts", file, row)
                syncs.append((ts, ts + _time(e, "dur", file, row)))
    return kernels, launches, syncs


def _correlation(args: dict) -> int | str | None:
    """``args.correlation`` when it is an id (an integer or a string), else None."""
    value = args.get("correlation")
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _kernel_rows(kernels: list[tuple[int, dict]], launches: dict, file: str | None) -> tuple[list[tuple], int]:
    """Per kernel ``(order key, ts, dur, kid, launch start, launch end)`` (µs; launch None when unmatched), and
    how many kernels lack grid or block dimensions."""
    rows = []
    missing = 0
    for row, e in kernels:
        kname = e.get("name")
        if not isinstance(kname, str) or not kname:
            raise InputError("kernel event needs a 'name'", file=file, row=row, field="name")
        ts, dur = _time(e, "ts", file, row), _time(e, "dur", file, row)
        raw_args = e.get("args")
        args = raw_args if isinstance(raw_args, dict) else {}
        grid, block = _dims(args.get("grid"), "grid", file, row), _dims(args.get("block"), "block", file, row)
        if grid is None or block is None:
            missing += 1
        kid = KernelId(clean_kernel_name(kname), block or (1, 1, 1), grid or (1, 1, 1)).canonical()
        launch = launches.get(_correlation(args))
        lts: float | None = None
        lend: float | None = None
        if launch:
            lts = _time(launch, "ts", file, row)
            lend = lts + _time(launch, "dur", file, row)
        rows.append((lts if lts is not None else ts, ts, dur, kid, lts, lend))
    return rows, missing


def _closed_loop_trace(name: str, rows: list[tuple], syncs: list[tuple[float, float]]) -> tuple[Trace, int]:
    """Ops from launch-ordered rows: a kernel syncs after if a host sync starts between its launch's end and the
    next launch; host time before a launch is the time since the previous launch ended (or its sync returned)."""
    sync_starts = [s for s, _ in syncs]
    ops: list[Op] = []
    for i, (_, _, dur, kid, _lts, lend) in enumerate(rows):
        sync_after = False
        if i + 1 < len(rows):
            nxt = rows[i + 1][4]
            lo, hi = bisect_left(sync_starts, lend), bisect_right(sync_starts, nxt)
            sync_after = hi > lo
        ops.append(Op(kid, dur / 1000.0, 0.0, sync_after))
    n_sync = 0
    fixed = []
    for i, op in enumerate(ops):
        if i == 0:
            fixed.append(op)
            continue
        prev_end = rows[i - 1][5]
        free = prev_end
        if ops[i - 1].sync_after:
            lo, hi = bisect_left(sync_starts, prev_end), bisect_right(sync_starts, rows[i][4])
            free = max([prev_end] + [syncs[k][1] for k in range(lo, hi)])
            n_sync += 1
        fixed.append(Op(op.kid, op.dur, max(0.0, (rows[i][4] - free) / 1000.0), op.sync_after))
    return Trace(name, tuple(fixed)), n_sync
