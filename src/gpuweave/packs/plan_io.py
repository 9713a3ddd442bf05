"""The plan JSON written by ``gpuweave plan packs --json`` and read by ``gpuweave run packs``.

Format::

    {"procs": P, "k": K, "algo": name, "cost": c,
     "packs": [{"cost": c, "start": s,
                "tasks": [{"task": name, "procs": j, "time": t, "command": "..."}]}],
     "metrics": {"relative_cost": ..., "packing_ratio": ..., "relative_response_time": ..., "runtime_ms": ...}}

``command`` is present when the profile had a ``command`` column; ``seed`` and ``version`` (the package
version) are recorded too. :func:`read_plan` checks a file a user
may have written by hand and raises :class:`~gpuweave.errors.InputError` with the field at fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuweave import __version__
from gpuweave.checks import DURATION, POSITIVE_COUNT, number
from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.limits import check_limit
from gpuweave.packs.metrics import Metrics
from gpuweave.packs.model import PackSchedule, Profile


def plan_to_dict(
    profile: Profile, schedule: PackSchedule, k: int, metrics: Metrics, *, seed: int | None = None
) -> dict[str, Any]:
    """The plan as JSON-ready data; ``seed`` and the package ``version`` are recorded beside the format's keys."""
    packs = []
    for pk in schedule.packs:
        tasks = []
        for i, j, t in zip(pk.tasks, pk.procs, pk.times):
            entry: dict[str, Any] = {"task": profile.names[i], "procs": j, "time": t}
            if profile.commands:
                entry["command"] = profile.commands[i]
            tasks.append(entry)
        packs.append({"cost": pk.cost, "start": pk.start, "tasks": tasks})
    m = metrics.as_dict()
    m.pop("cost")
    return {
        "procs": schedule.p,
        "k": k,
        "algo": schedule.algo,
        "cost": schedule.cost,
        "packs": packs,
        "metrics": m,
        "seed": seed,
        "version": __version__,
    }


@dataclass(frozen=True, slots=True)
class PlannedTask:
    name: str
    procs: int
    time: float
    command: str | None


@dataclass(frozen=True, slots=True)
class PlannedPack:
    cost: float
    tasks: tuple[PlannedTask, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    procs: int
    packs: tuple[PlannedPack, ...]
    algo: str = ""

    @property
    def cost(self) -> float:
        return sum(pk.cost for pk in self.packs)


def read_plan(path: str | Path) -> Plan:
    """Read and check a plan JSON: processors and task counts within the limits, times positive seconds."""
    path = Path(path)
    data = load_json(path, what="schedule file")
    if not isinstance(data, dict):
        raise InputError("the schedule must be a JSON object with 'procs' and 'packs'", file=path)
    procs = number(data.get("procs"), POSITIVE_COUNT, file=path, field="procs")
    check_limit("packs_procs", procs, "processors of the plan", file=path, field="procs")
    raw_packs = data.get("packs")
    if not isinstance(raw_packs, list) or not raw_packs:
        raise InputError("expected a non-empty list of packs", file=path, field="packs")
    check_limit("packs_tasks", len(raw_packs), "packs in the plan", file=path, field="packs")
    packs = []
    seen: set[str] = set()
    for b, rp in enumerate(raw_packs):
        where = f"packs[{b}]"
        if not isinstance(rp, dict) or not isinstance(rp.get("tasks"), list) or not rp["tasks"]:
            raise InputError("a pack needs a non-empty 'tasks' list", file=path, field=where)
        tasks = []
        for r, rt in enumerate(rp["tasks"]):
            tw = f"{where}.tasks[{r}]"
            if not isinstance(rt, dict) or not isinstance(rt.get("task"), str) or not rt["task"]:
                raise InputError("a task needs a 'task' name", file=path, field=tw)
            name = rt["task"]
            if name in seen:
                raise InputError(f"task '{name}' appears twice", file=path, field=tw)
            seen.add(name)
            check_limit("packs_tasks", len(seen), "tasks in the plan", file=path, field=tw)
            j = number(rt.get("procs"), POSITIVE_COUNT, file=path, field=f"{tw}.procs")
            t = number(rt.get("time"), DURATION, file=path, field=f"{tw}.time")
            cmd = rt.get("command")
            if cmd is not None and (not isinstance(cmd, str) or not cmd.strip()):
                raise InputError("'command' must be a non-empty string", file=path, field=f"{tw}.command")
            tasks.append(PlannedTask(name, j, t, cmd))
        used = sum(pt.procs for pt in tasks)
        if used > procs:
            raise InputError(f"pack uses {used} processors, the schedule has {procs}", file=path, field=where)
        packs.append(PlannedPack(max(pt.time for pt in tasks), tuple(tasks)))
    return Plan(procs, tuple(packs), str(data.get("algo", "")))
