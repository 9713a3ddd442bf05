"""The kernel simulation config (``gpuweave kernel simulate CONFIG``): parsed into services and a SimConfig.

Simulation config (YAML or JSON)::

    mode: fikit                 # exclusive | share_timeslice | share_fifo | share_rr_kernel | fikit
    quantum_ms: 2.0             # time slice of the default-sharing model
    device: share_timeslice     # arbitration under fikit
    preset: recommended         # recommended | paper_literal | no_feedback
    jitter: 0.05
    ipc_rtt_ms: 0.0
    seed: 0
    services:
      - {name: A, trace: canonical:HI, priority: 0, workload: {kind: back_to_back, n: 20}}
      - {name: B, trace: canonical:LO, priority: 1, workload: {kind: back_to_back, n: null}}

``trace`` is ``canonical:HI|LO|LIGHT``, ``model:<Table 1 model>`` (synthetic) or a trace JSON path
(relative to the config file). Checking is O(services); bad input raises InputError naming the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuweave.checks import FRACTION, KERNEL_MS, MILLISECONDS, POSITIVE_COUNT, number, seed
from gpuweave.errors import InputError
from gpuweave.files import load_json, load_yaml
from gpuweave.kernel.sched import preset
from gpuweave.limits import check_limit


def load_config(path: Path) -> dict:
    """The config file at ``path`` as a mapping (YAML, or JSON by suffix); InputError if it does not parse."""
    path = Path(path)
    data = (
        load_json(path, what="config file") if path.suffix.lower() == ".json" else load_yaml(path, what="config file")
    )
    if not isinstance(data, dict):
        raise InputError("config must be a mapping", file=path)
    return data


def _ms(data: dict, key: str, default: float, rng=None) -> float:
    """``data[key]`` (or the default) as milliseconds in ``rng`` (:data:`gpuweave.checks.MILLISECONDS`)."""
    return default if key not in data else number(data[key], rng or MILLISECONDS, field=key)


def _workload(wl: dict):
    """A service's ``workload`` mapping as a :class:`~gpuweave.kernel.sim.Workload`, every number checked."""
    # imported here: importing gpuweave.kernel.sim_config does without numpy
    from gpuweave.kernel.sim import Workload

    kind = wl.get("kind", "back_to_back")
    if kind == "times":
        times = wl.get("times", [])
        if not isinstance(times, list):
            raise InputError("'times' must be a list of submission times (ms)", field="times")
        check_limit("kernel_launches", len(times), "submission times", field="times")
        return Workload.at_times([number(x, MILLISECONDS, field="times") for x in times])
    n = wl.get("n", 1)
    if n is not None:
        if isinstance(n, float):
            raise InputError(f"task count n must be a positive integer, got {n!r}", field="n")
        n = number(n, POSITIVE_COUNT, field="n")
    return Workload(kind, n, _ms(wl, "period_ms", 0.0), _ms(wl, "start_ms", 0.0))


def _name(data: dict, key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise InputError(f"{key} must be a name, got {value!r}"[:120], field=key)
    return value


def _service(s: Any, row: int, base: Path | None, file: str | None):
    """One entry of ``services`` (its 1-based ``row``) as a Service; InputError naming the row and field."""
    # imported here: importing gpuweave.kernel.sim_config does without numpy
    from gpuweave.kernel.sim import Service
    from gpuweave.kernel.traces import resolve_trace

    if not isinstance(s, dict):
        raise InputError("service must be a mapping", file=file, row=row)
    for req in ("name", "trace", "priority"):
        if req not in s:
            raise InputError(f"service needs '{req}'", file=file, row=row, field=req)
    name = s["name"]
    if isinstance(name, bool) or not isinstance(name, (str, int)):  # YAML reads .nan, yes, null as not text
        raise InputError(
            f"service name must be text, got {name!r}; quote it in YAML"[:160], file=file, row=row, field="name"
        )
    wl = s.get("workload", {"kind": "back_to_back", "n": 1})
    if not isinstance(wl, dict):
        raise InputError("workload must be a mapping", file=file, row=row, field="workload")
    try:
        return Service(str(name), resolve_trace(str(s["trace"]), base=base), s["priority"], _workload(wl))
    except InputError as exc:
        if exc.file:
            raise
        raise InputError(exc.message, file=file, row=row, field=exc.field) from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad workload ({exc})", file=file, row=row, field="workload") from None


def build_simulation(data: dict, base: Path | None = None, file: str | None = None):
    """(services, SimConfig) from a parsed config mapping; InputError naming the field on bad input."""
    # imported here: importing gpuweave.kernel.sim_config does without numpy
    from gpuweave.kernel.sim import SimConfig

    known = {
        "mode",
        "quantum_ms",
        "device",
        "preset",
        "jitter",
        "ipc_rtt_ms",
        "seed",
        "services",
        "launch_overhead_ms",
        "profiling_runs",
        "horizon_ms",
        "stop_when",
        "holder_grace_ms",
    }
    extra = set(data) - known
    if extra:
        raise InputError(f"unknown config keys: {', '.join(sorted(map(str, extra)))}"[:300], file=file)
    svcs = data.get("services")
    if not isinstance(svcs, list) or not svcs:
        raise InputError("config needs a non-empty list 'services'", file=file, field="services")
    services = [_service(s, row, base, file) for row, s in enumerate(svcs, 1)]
    try:
        over = {}
        if "holder_grace_ms" in data:
            over["holder_grace"] = _ms(data, "holder_grace_ms", 0.0)
        stop_when = data.get("stop_when")
        if stop_when is not None and (
            not isinstance(stop_when, list) or not all(isinstance(name, str) for name in stop_when)
        ):
            raise InputError("stop_when must be a list of service names", field="stop_when")
        cfg = SimConfig(
            mode=_name(data, "mode", "fikit"),
            quantum=_ms(data, "quantum_ms", 2.0, KERNEL_MS),
            device=_name(data, "device", "share_timeslice"),
            scheduler=preset(_name(data, "preset", "recommended"), **over),
            jitter=number(data.get("jitter", 0.05), FRACTION, field="jitter"),
            ipc_rtt=_ms(data, "ipc_rtt_ms", 0.0, KERNEL_MS),
            launch_overhead=_ms(data, "launch_overhead_ms", 0.005, KERNEL_MS),
            seed=seed(data.get("seed", 0)),
            profiling_runs=number(data.get("profiling_runs", 20), POSITIVE_COUNT, field="profiling_runs"),
            horizon=_ms(data, "horizon_ms", float("inf")),
            stop_when=tuple(stop_when) if stop_when else None,
        )
    except InputError as exc:
        raise InputError(exc.message, file=file, field=exc.field) from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad config value ({exc})", file=file) from None
    finite = sum(s.workload.n * s.trace.n for s in services if s.workload.n is not None)
    check_limit("kernel_launches", finite, "kernel launches of the services' tasks", file=file, field="services")
    return services, cfg
