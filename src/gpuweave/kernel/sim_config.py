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


def load_config(path: Path) -> dict:
    """The config file at ``path`` as a mapping (YAML, or JSON by suffix); InputError if it does not parse."""
    from gpuweave.errors import InputError
    from gpuweave.files import read_input_text

    text = read_input_text(path, what="config file")
    try:
        if path.suffix.lower() == ".json":
            import json

            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # yaml/json parse errors → one line
        detail = " ".join(str(exc).split())[:200]
        raise InputError(f"cannot parse config ({type(exc).__name__}: {detail})", file=path) from None
    if not isinstance(data, dict):
        raise InputError("config must be a mapping", file=path)
    return data


def build_simulation(data: dict, base: Path | None = None, file: str | None = None):
    """(services, SimConfig) from a parsed config mapping; InputError naming the field on bad input."""
    from gpuweave.errors import InputError
    from gpuweave.kernel.sched import preset
    from gpuweave.kernel.sim import Service, SimConfig, Workload
    from gpuweave.kernel.traces import resolve_trace

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
        raise InputError(f"unknown config keys: {', '.join(sorted(extra))}", file=file)
    svcs = data.get("services")
    if not isinstance(svcs, list) or not svcs:
        raise InputError("config needs a non-empty list 'services'", file=file, field="services")
    services = []
    for row, s in enumerate(svcs, 1):
        if not isinstance(s, dict):
            raise InputError("service must be a mapping", file=file, row=row)
        for req in ("name", "trace", "priority"):
            if req not in s:
                raise InputError(f"service needs '{req}'", file=file, row=row, field=req)
        wl = s.get("workload", {"kind": "back_to_back", "n": 1})
        if not isinstance(wl, dict):
            raise InputError("workload must be a mapping", file=file, row=row, field="workload")
        try:
            kind = wl.get("kind", "back_to_back")
            if kind == "times":
                workload = Workload.at_times([float(x) for x in wl.get("times", [])])
            else:
                workload = Workload(
                    kind, wl.get("n", 1), float(wl.get("period_ms", 0.0)), float(wl.get("start_ms", 0.0))
                )
            services.append(Service(str(s["name"]), resolve_trace(str(s["trace"]), base=base), s["priority"], workload))
        except InputError as exc:
            if exc.file:
                raise
            raise InputError(exc.message, file=file, row=row, field=exc.field) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad workload ({exc})", file=file, row=row, field="workload") from None
    try:
        over = {}
        if "holder_grace_ms" in data:
            over["holder_grace"] = float(data["holder_grace_ms"])
        cfg = SimConfig(
            mode=data.get("mode", "fikit"),
            quantum=float(data.get("quantum_ms", 2.0)),
            device=data.get("device", "share_timeslice"),
            scheduler=preset(data.get("preset", "recommended"), **over),
            jitter=float(data.get("jitter", 0.05)),
            ipc_rtt=float(data.get("ipc_rtt_ms", 0.0)),
            launch_overhead=float(data.get("launch_overhead_ms", 0.005)),
            seed=int(data.get("seed", 0)),
            profiling_runs=int(data.get("profiling_runs", 20)),
            horizon=float(data.get("horizon_ms", float("inf"))),
            stop_when=tuple(data["stop_when"]) if data.get("stop_when") else None,
        )
    except InputError as exc:
        raise InputError(exc.message, file=file, field=exc.field) from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad config value ({exc})", file=file) from None
    return services, cfg
