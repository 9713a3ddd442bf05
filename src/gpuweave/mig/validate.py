"""Independent validator of MIG schedules against the model (FAR paper Sec. 2.2; spec §1.4).

Problem. Decide whether a schedule (plain data, :class:`~gpuweave.mig.schedule.Schedule`) is
feasible, and if not, name the first violated rule and the tasks involved. It shares no code with the
planners: it rebuilds instance lifetimes from the operations and checks, in this order,

1. ``gpu``: the GPU is known and MIG-capable; ``gpu_index`` is in range.
2. ``placement``: every task, operation and initial instance uses an allowed instance (size and first
   slice) of the GPU (occupancy per spec §1.1: the 3-slice instance at S0 also blocks S3).
3. ``tasks``: with a task table, every task appears exactly once and runs for its profiled time
   on its size (``end - start = t_i(size)``); without one, names are unique and end >= start.
4. ``slice-overlap``: no two tasks overlap in time on a slice (by occupancy).
5. ``op-duration``: each create/destroy lasts the table's time for its size (zero under the
   declared ``"free"`` reconfiguration model).
6. ``op-sequential``: operations of one GPU are pairwise disjoint in time (the driver serialises).
7. ``op-order``: per instance, operations alternate create, destroy, create, ...; an initial
   instance starts alive.
8. ``instance-lifetime``: each task lies inside a lifetime of its instance: after its create ends
   and before its destroy starts. An instance never destroyed lives to the end of the schedule.
9. ``partition``: instances alive at the same moment (from create start to destroy end) have
   disjoint occupancy, i.e. form a valid partition; equivalently destroy(N) ends before create(M)
   starts when N and M overlap and N comes first.
10. ``makespan``: the stated makespan equals the last task end.

Times compare with an absolute tolerance of 1e-6 s (JSON round-trips floats exactly). Complexity:
O((n + #ops) log(n + #ops)) plus O(L^2) per GPU over instance lifetimes L.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.hardware.mig import MigGeometry, Placement
from gpuweave.mig.problem import MigProblem
from gpuweave.mig.schedule import Schedule

TOL = 1e-6


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    message: str
    tasks: tuple[str, ...] = ()

    def one_line(self) -> str:
        who = f" (tasks: {', '.join(self.tasks)})" if self.tasks else ""
        return f"rule '{self.rule}' violated: {self.message}{who}"


@dataclass(slots=True)
class ValidationReport:
    violations: list[Violation] = field(default_factory=list)
    checked_tasks: int = 0
    checked_operations: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def first(self) -> Violation | None:
        return self.violations[0] if self.violations else None


@dataclass(slots=True)
class _Life:
    """One lifetime of an instance: [begin, until) with its create end and destroy start."""

    gpu: int
    placement: Placement
    begin: float  # create start (or 0 for an initial instance)
    ready: float  # create end
    release: float  # destroy start (inf if never destroyed)
    until: float  # destroy end (inf if never destroyed)


def _find_placement(geometry: MigGeometry, size: int, start: int) -> Placement | None:
    for p in geometry.placements:
        if p.size == size and p.start == start:
            return p
    return None


def validate_schedule(
    schedule: Schedule,
    problem: MigProblem | None = None,
    *,
    stop_at_first: bool = False,
) -> ValidationReport:
    """Check ``schedule``; with ``problem`` also task completeness and durations. Never raises on a bad schedule."""
    report = ValidationReport(checked_tasks=len(schedule.tasks), checked_operations=len(schedule.operations))
    v = report.violations

    def add(rule: str, message: str, tasks: tuple[str, ...] = ()) -> bool:
        v.append(Violation(rule, message, tasks))
        return stop_at_first

    # 1. gpu
    try:
        geometry = get_mig_geometry(schedule.gpu)
    except InputError as exc:
        add("gpu", exc.message)
        return report
    if problem is not None and problem.geometry.name != geometry.name:
        if add("gpu", f"schedule is for {schedule.gpu} but the tasks are for {problem.gpu}"):
            return report
    for t in schedule.tasks:
        if not (0 <= t.gpu_index < schedule.gpus):
            if add("gpu", f"task on gpu_index {t.gpu_index}, schedule has {schedule.gpus} GPU(s)", (t.task,)):
                return report
    for o in schedule.operations:
        if not (0 <= o.gpu_index < schedule.gpus):
            if add("gpu", f"{o.op} on gpu_index {o.gpu_index}, schedule has {schedule.gpus} GPU(s)"):
                return report
    if v:
        return report

    # 2. placements
    allowed = ", ".join(p.label for p in geometry.placements)
    task_pl: dict[int, Placement] = {}
    for idx, t in enumerate(schedule.tasks):
        p = _find_placement(geometry, t.size, t.start_slice)
        if p is None:
            if add(
                "placement",
                f"{geometry.name} has no instance of size {t.size} at slice {t.start_slice} (allowed size@slice: {allowed})",
                (t.task,),
            ):
                return report
        else:
            task_pl[idx] = p
    for o in schedule.operations:
        if _find_placement(geometry, o.size, o.start_slice) is None:
            if add("placement", f"{o.op} of an instance {o.size}@{o.start_slice} that {geometry.name} does not allow"):
                return report
    for i in schedule.initial_instances:
        if _find_placement(geometry, i.size, i.start_slice) is None or not (0 <= i.gpu_index < schedule.gpus):
            if add("placement", f"initial instance {i.size}@{i.start_slice} on GPU {i.gpu_index} is not allowed"):
                return report
    if v:
        return report

    # 3. tasks
    seen: dict[str, int] = {}
    for t in schedule.tasks:
        seen[t.task] = seen.get(t.task, 0) + 1
        if not (t.end >= t.start - TOL):
            if add("tasks", f"task ends ({t.end}) before it starts ({t.start})", (t.task,)):
                return report
    dups = tuple(sorted(n for n, c in seen.items() if c > 1))
    if dups and add("tasks", "task scheduled more than once", dups):
        return report
    if problem is not None:
        missing = tuple(n for n in problem.names if n not in seen)
        if missing and add("tasks", f"{len(missing)} task(s) of the batch are not scheduled", missing[:5]):
            return report
        index = {n: i for i, n in enumerate(problem.names)}
        extra = tuple(n for n in seen if n not in index)
        if extra and add("tasks", "task(s) not in the batch", extra[:5]):
            return report
        for t in schedule.tasks:
            if t.task in index and t.size in problem.sizes:
                want = problem.time(index[t.task], t.size)
                if math.isinf(want) or abs((t.end - t.start) - want) > TOL * max(1.0, want) + TOL:
                    if add(
                        "tasks",
                        f"runs {t.end - t.start:.6g} s on size {t.size}, its profiled time is {want:.6g} s",
                        (t.task,),
                    ):
                        return report

    # 4. no two tasks overlap on a slice
    per = geometry.num_slices
    by_slice: dict[int, list[tuple[float, float, str]]] = {}
    for idx, t in enumerate(schedule.tasks):
        for s in task_pl[idx].occupancy:
            by_slice.setdefault(t.gpu_index * per + s, []).append((t.start, t.end, t.task))
    for key in sorted(by_slice):
        items = sorted(by_slice[key])
        for a, b in zip(items, items[1:]):
            if b[0] < a[1] - TOL:
                g, s = divmod(key, per)
                if add(
                    "slice-overlap",
                    f"tasks overlap on GPU {g} slice S{s} ({a[0]:.6g}-{a[1]:.6g} and {b[0]:.6g}-{b[1]:.6g})",
                    (a[2], b[2]),
                ):
                    return report

    # 5. durations of operations
    free = schedule.reconfiguration == "free"
    for o in schedule.operations:
        want = 0.0 if free else (geometry.create_s if o.op == "create" else geometry.destroy_s)[o.size]
        if abs((o.end - o.start) - want) > TOL:
            if add(
                "op-duration",
                f"{o.op} of {o.size}@S{o.start_slice} on GPU {o.gpu_index} lasts {o.end - o.start:.6g} s, the table says {want:.6g} s",
            ):
                return report

    # 6. operations sequential per GPU
    for g in range(schedule.gpus):
        ops = sorted((o for o in schedule.operations if o.gpu_index == g), key=lambda o: (o.start, o.end))
        for a, b in zip(ops, ops[1:]):
            if b.start < a.end - TOL:
                if add(
                    "op-sequential",
                    f"GPU {g}: {a.op} {a.size}@S{a.start_slice} ({a.start:.6g}-{a.end:.6g}) overlaps {b.op} {b.size}@S{b.start_slice} ({b.start:.6g}-{b.end:.6g}); the driver runs them one at a time",
                ):
                    return report

    # 7. per-instance op order -> lifetimes
    lives: dict[tuple[int, int, int], list[_Life]] = {}
    open_life: dict[tuple[int, int, int], _Life] = {}
    for i in schedule.initial_instances:
        key = (i.gpu_index, i.size, i.start_slice)
        if key in open_life:
            if add("op-order", f"initial instance {i.size}@S{i.start_slice} on GPU {i.gpu_index} listed twice"):
                return report
            continue
        life = _Life(i.gpu_index, _find_placement(geometry, i.size, i.start_slice), 0.0, 0.0, math.inf, math.inf)
        open_life[key] = life
        lives.setdefault(key, []).append(life)
    for o in sorted(schedule.operations, key=lambda o: (o.start, o.end, o.op != "destroy")):
        key = (o.gpu_index, o.size, o.start_slice)
        pl = _find_placement(geometry, o.size, o.start_slice)
        if o.op == "create":
            if key in open_life:
                if add(
                    "op-order",
                    f"create of {o.size}@S{o.start_slice} on GPU {o.gpu_index} at {o.start:.6g} s while that instance already exists",
                ):
                    return report
                continue
            life = _Life(o.gpu_index, pl, o.start, o.end, math.inf, math.inf)
            open_life[key] = life
            lives.setdefault(key, []).append(life)
        else:
            life = open_life.pop(key, None)
            if life is None:
                if add(
                    "op-order",
                    f"destroy of {o.size}@S{o.start_slice} on GPU {o.gpu_index} at {o.start:.6g} s without a live instance",
                ):
                    return report
                continue
            life.release, life.until = o.start, o.end

    # 8. tasks inside a lifetime of their instance
    for t in schedule.tasks:
        key = (t.gpu_index, t.size, t.start_slice)
        inside = any(l.ready - TOL <= t.start and t.end <= l.release + TOL for l in lives.get(key, []))
        if not inside:
            near = lives.get(key, [])
            if not near:
                msg = f"runs on {t.size}@S{t.start_slice} of GPU {t.gpu_index}, which is never created"
            else:
                msg = (
                    f"runs {t.start:.6g}-{t.end:.6g} s on {t.size}@S{t.start_slice} of GPU {t.gpu_index} outside its lifetimes "
                    + ", ".join(f"[ready {l.ready:.6g}, destroy {l.release:.6g}]" for l in near)
                )
            if add("instance-lifetime", msg, (t.task,)):
                return report

    # 9. coexisting instances form a valid partition
    for g in range(schedule.gpus):
        gl = sorted((l for ls in lives.values() for l in ls if l.gpu == g), key=lambda l: l.begin)
        for i, a in enumerate(gl):
            for b in gl[i + 1 :]:
                if b.begin >= a.until - TOL:
                    continue
                if a.placement.overlaps(b.placement) and b.begin < a.until - TOL and a.begin < b.until - TOL:
                    users = tuple(
                        t.task
                        for t in schedule.tasks
                        if t.gpu_index == g
                        and (t.size, t.start_slice)
                        in ((a.placement.size, a.placement.start), (b.placement.size, b.placement.start))
                    )[:4]
                    if add(
                        "partition",
                        f"GPU {g}: instances {a.placement.label} (alive {a.begin:.6g}-{a.until:.6g} s) and {b.placement.label} (from {b.begin:.6g} s) "
                        "coexist but share slices, so they are not a valid partition",
                        users,
                    ):
                        return report

    # 10. makespan
    last = max((t.end for t in schedule.tasks), default=0.0)
    if abs(schedule.makespan - last) > TOL * max(1.0, last):
        add("makespan", f"stated makespan {schedule.makespan:.6g} s, last task ends at {last:.6g} s")
    return report


def check_schedule(schedule: Schedule, problem: MigProblem | None = None, file: str | None = None) -> ValidationReport:
    """Validate and raise one InputError naming the first violated rule and the tasks involved."""
    report = validate_schedule(schedule, problem, stop_at_first=True)
    if not report.ok:
        raise InputError(report.first.one_line(), file=file)
    return report
