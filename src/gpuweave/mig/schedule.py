"""The MIG schedule: plain data that every planner returns and the validator checks.

A :class:`Schedule` lists, per task, the GPU, the instance (size and first slice) and the start/end
times, plus the create/destroy operations of instances. It reads and writes the schedule JSON
documented in ``docs/schedule-json.md``::

    {"gpu": "A100", "gpus": 1, "makespan": s, "lower_bound": s,
     "tasks": [{"task": name, "gpu_index": 0, "size": k, "start_slice": j, "start": s, "end": s}],
     "operations": [{"op": "create"|"destroy", "gpu_index": 0, "size": k, "start_slice": j,
                     "start": s, "end": s}],
     "reconfiguration": "table" | "free",          # optional, default "table"
     "initial_instances": [{"gpu_index": 0, "size": k, "start_slice": j}],   # optional
     "algo": "far"}                                 # optional

``reconfiguration = "free"`` declares a zero-cost model (operations have zero duration; the paper's
MISO-opt); ``initial_instances`` exist from time 0 without a create (a static partition set up
before the batch, the paper's FixPart). Reading is strict: one InputError naming the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpuweave.checks import COUNT, SECONDS, number
from gpuweave.errors import InputError
from gpuweave.files import load_json, prepare_output_file
from gpuweave.limits import check_limit

RECONFIG_MODELS = ("table", "free")


@dataclass(frozen=True, slots=True)
class ScheduledTask:
    task: str
    gpu_index: int
    size: int
    start_slice: int
    start: float
    end: float
    command: str | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    op: str  # "create" | "destroy"
    gpu_index: int
    size: int
    start_slice: int
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class InitialInstance:
    gpu_index: int
    size: int
    start_slice: int


@dataclass(slots=True)
class Schedule:
    gpu: str
    gpus: int
    makespan: float
    lower_bound: float
    tasks: list[ScheduledTask]
    operations: list[Operation] = field(default_factory=list)
    reconfiguration: str = "table"
    initial_instances: list[InitialInstance] = field(default_factory=list)
    algo: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """makespan / lower bound (the paper's rho for FAR)."""
        return self.makespan / self.lower_bound if self.lower_bound > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "gpu": self.gpu,
            "gpus": self.gpus,
            "makespan": self.makespan,
            "lower_bound": self.lower_bound,
            "algo": self.algo,
            "reconfiguration": self.reconfiguration,
            "tasks": [],
            "operations": [asdict(o) for o in sorted(self.operations, key=lambda o: (o.start, o.gpu_index))],
        }
        for t in sorted(self.tasks, key=lambda t: (t.start, t.gpu_index, t.start_slice)):
            d = asdict(t)
            if d["command"] is None:
                del d["command"]
            out["tasks"].append(d)
        if self.initial_instances:
            out["initial_instances"] = [asdict(i) for i in self.initial_instances]
        if self.info:
            out["info"] = self.info
        return out

    def json_text(self) -> str:
        """The schedule JSON document (full precision), as ``write_json`` writes it and ``--json -`` prints it."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"

    def write_json(self, path: str | Path) -> Path:
        path = prepare_output_file(path, field="json")
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(self.json_text())
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return path


def _num(d: dict, key: str, where: str, file: str | None, *, integer: bool = False) -> Any:
    """``d[key]``: a time in seconds (:data:`~gpuweave.checks.SECONDS`) or, with ``integer``, an index or size
    (:data:`~gpuweave.checks.COUNT`, checked before conversion)."""
    if key not in d:
        raise InputError(f"missing key {key!r}", file=file, field=where)
    field_name = key if where == key else f"{where}.{key}"
    v = d[key]
    if integer and isinstance(v, float):
        raise InputError(f"expected an integer, got {v!r}", file=file, field=field_name)
    return number(v, COUNT if integer else SECONDS, file=file, field=field_name)


def _task_from_dict(t: dict, where: str, file: str | None) -> ScheduledTask:
    name = t.get("task")
    if not isinstance(name, (str, int)) or isinstance(name, bool) or str(name) == "":
        raise InputError("missing task name", file=file, field=f"{where}.task")
    cmd = t.get("command")
    if cmd is not None and not isinstance(cmd, str):
        raise InputError("command must be a string", file=file, field=f"{where}.command")
    return ScheduledTask(
        str(name),
        _num(t, "gpu_index", where, file, integer=True),
        _num(t, "size", where, file, integer=True),
        _num(t, "start_slice", where, file, integer=True),
        float(_num(t, "start", where, file)),
        float(_num(t, "end", where, file)),
        cmd,
    )


def _operation_from_dict(o: dict, where: str, file: str | None) -> Operation:
    kind = o.get("op")
    if kind not in ("create", "destroy"):
        raise InputError(f"op must be 'create' or 'destroy', got {kind!r}", file=file, field=f"{where}.op")
    return Operation(
        kind,
        _num(o, "gpu_index", where, file, integer=True),
        _num(o, "size", where, file, integer=True),
        _num(o, "start_slice", where, file, integer=True),
        float(_num(o, "start", where, file)),
        float(_num(o, "end", where, file)),
    )


def _initial_from_dict(o: dict, where: str, file: str | None) -> InitialInstance:
    return InitialInstance(
        _num(o, "gpu_index", where, file, integer=True),
        _num(o, "size", where, file, integer=True),
        _num(o, "start_slice", where, file, integer=True),
    )


def _parse_list(data: dict, key: str, file: str | None, parse, *, required: bool = False) -> list:
    """``data[key]`` as a list of objects, each parsed by ``parse(obj, where, file)`` (absent: [] unless required)."""
    raw = data.get(key) if required else data.get(key, [])
    if not isinstance(raw, list):
        raise InputError(f"'{key}' must be a list", file=file, field=key)
    out = []
    for i, obj in enumerate(raw):
        where = f"{key}[{i}]"
        if not isinstance(obj, dict):
            raise InputError("expected an object", file=file, field=where)
        out.append(parse(obj, where, file))
    return out


def schedule_from_dict(data: Any, file: str | None = None) -> Schedule:
    """Parse the schedule JSON object; structural errors raise InputError naming the field."""
    if not isinstance(data, dict):
        raise InputError("schedule JSON must be an object", file=file)
    gpu = data.get("gpu")
    if not isinstance(gpu, str) or not gpu:
        raise InputError("missing or empty 'gpu'", file=file, field="gpu")
    gpus = _num(data, "gpus", "gpus", file, integer=True) if "gpus" in data else 1
    if gpus < 1:
        raise InputError("gpus must be >= 1", file=file, field="gpus")
    check_limit("mig_gpus", gpus, "GPUs of the schedule", file=file, field="gpus")
    for key, per_task in (("tasks", 1), ("operations", 2), ("initial_instances", 1)):
        if isinstance(data.get(key), list):  # a create and a destroy per task at most; read and checked in O(n log n)
            count = -(-len(data[key]) // per_task)
            what = f"entries in '{key}'" + (" / 2" if per_task == 2 else "")
            check_limit("mig_tasks", count, what, file=file, field=key)
    makespan = _num(data, "makespan", "makespan", file)
    lb = _num(data, "lower_bound", "lower_bound", file) if "lower_bound" in data else 0.0
    recon = data.get("reconfiguration", "table")
    if recon not in RECONFIG_MODELS:
        raise InputError(
            f"reconfiguration must be one of {RECONFIG_MODELS}, got {recon!r}", file=file, field="reconfiguration"
        )
    tasks = _parse_list(data, "tasks", file, _task_from_dict, required=True)
    ops = _parse_list(data, "operations", file, _operation_from_dict)
    init = _parse_list(data, "initial_instances", file, _initial_from_dict)
    algo = data.get("algo", "")
    return Schedule(
        gpu, gpus, float(makespan), float(lb), tasks, ops, recon, init, str(algo or ""), dict(data.get("info") or {})
    )


def read_schedule_json(path: str | Path) -> Schedule:
    path = Path(path)
    return schedule_from_dict(load_json(path, what="schedule file"), file=str(path))
