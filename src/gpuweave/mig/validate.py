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


def _allowed_placement(geometry: MigGeometry, size: int, start: int) -> Placement:
    """The placement of an instance that rule 2 (checked first) has allowed."""
    p = _find_placement(geometry, size, start)
    assert p is not None, "rule 2 is checked before the lifetimes"
    return p


def _find_placement(geometry: MigGeometry, size: int, start: int) -> Placement | None:
    for p in geometry.placements:
        if p.size == size and p.start == start:
            return p
    return None


class _StopAtFirst(Exception):
    """Raised by :meth:`_Findings.add` once the first violation is recorded under ``stop_at_first``."""


@dataclass(slots=True)
class _Findings:
    """The violations found so far; ``add`` ends the validation early under ``stop_at_first``."""

    violations: list[Violation]
    stop_at_first: bool

    def add(self, rule: str, message: str, tasks: tuple[str, ...] = ()) -> None:
        self.violations.append(Violation(rule, message, tasks))
        if self.stop_at_first:
            raise _StopAtFirst


Key = tuple[int, int, int]  # (gpu_index, size, start_slice): one instance


def _check_gpu(schedule: Schedule, problem: MigProblem | None, geometry: MigGeometry, out: _Findings) -> None:
    """Rule 1: the tasks are for this GPU and every gpu_index is in range."""
    if problem is not None and problem.geometry.name != geometry.name:
        out.add("gpu", f"schedule is for {schedule.gpu} but the tasks are for {problem.gpu}")
    for t in schedule.tasks:
        if not (0 <= t.gpu_index < schedule.gpus):
            out.add("gpu", f"task on gpu_index {t.gpu_index}, schedule has {schedule.gpus} GPU(s)", (t.task,))
    for o in schedule.operations:
        if not (0 <= o.gpu_index < schedule.gpus):
            out.add("gpu", f"{o.op} on gpu_index {o.gpu_index}, schedule has {schedule.gpus} GPU(s)")


def _check_placements(schedule: Schedule, geometry: MigGeometry, out: _Findings) -> dict[int, Placement]:
    """Rule 2: tasks, operations and initial instances use allowed instances; returns each task's placement."""
    allowed = ", ".join(p.label for p in geometry.placements)
    task_pl: dict[int, Placement] = {}
    for idx, t in enumerate(schedule.tasks):
        p = _find_placement(geometry, t.size, t.start_slice)
        if p is None:
            out.add(
                "placement",
                f"{geometry.name} has no instance of size {t.size} at slice {t.start_slice} "
                f"(allowed size@slice: {allowed})",
                (t.task,),
            )
        else:
            task_pl[idx] = p
    for o in schedule.operations:
        if _find_placement(geometry, o.size, o.start_slice) is None:
            out.add("placement", f"{o.op} of an instance {o.size}@{o.start_slice} that {geometry.name} does not allow")
    for i in schedule.initial_instances:
        if _find_placement(geometry, i.size, i.start_slice) is None or not (0 <= i.gpu_index < schedule.gpus):
            out.add("placement", f"initial instance {i.size}@{i.start_slice} on GPU {i.gpu_index} is not allowed")
    return task_pl


def _check_tasks(schedule: Schedule, problem: MigProblem | None, out: _Findings) -> None:
    """Rule 3: each task once, ending after it starts; with a task table, all of them, at their profiled times."""
    seen: dict[str, int] = {}
    for t in schedule.tasks:
        seen[t.task] = seen.get(t.task, 0) + 1
        if not (t.end >= t.start - TOL):
            out.add("tasks", f"task ends ({t.end}) before it starts ({t.start})", (t.task,))
    dups = tuple(sorted(n for n, c in seen.items() if c > 1))
    if dups:
        out.add("tasks", "task scheduled more than once", dups)
    if problem is None:
        return
    missing = tuple(n for n in problem.names if n not in seen)
    if missing:
        out.add("tasks", f"{len(missing)} task(s) of the batch are not scheduled", missing[:5])
    index = {n: i for i, n in enumerate(problem.names)}
    extra = tuple(n for n in seen if n not in index)
    if extra:
        out.add("tasks", "task(s) not in the batch", extra[:5])
    for t in schedule.tasks:
        if t.task in index and t.size in problem.sizes:
            want = problem.time(index[t.task], t.size)
            if math.isinf(want) or abs((t.end - t.start) - want) > TOL * max(1.0, want) + TOL:
                out.add(
                    "tasks",
                    f"runs {t.end - t.start:.6g} s on size {t.size}, its profiled time is {want:.6g} s",
                    (t.task,),
                )


def _check_slice_overlap(
    schedule: Schedule, geometry: MigGeometry, task_pl: dict[int, Placement], out: _Findings
) -> None:
    """Rule 4: no two tasks overlap in time on a slice (by occupancy)."""
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
                out.add(
                    "slice-overlap",
                    f"tasks overlap on GPU {g} slice S{s} ({a[0]:.6g}-{a[1]:.6g} and {b[0]:.6g}-{b[1]:.6g})",
                    (a[2], b[2]),
                )


def _check_op_durations(schedule: Schedule, geometry: MigGeometry, out: _Findings) -> None:
    """Rule 5: each create/destroy lasts the table's time for its size (zero when reconfiguration is free)."""
    free = schedule.reconfiguration == "free"
    for o in schedule.operations:
        want = 0.0 if free else (geometry.create_s if o.op == "create" else geometry.destroy_s)[o.size]
        if abs((o.end - o.start) - want) > TOL:
            out.add(
                "op-duration",
                f"{o.op} of {o.size}@S{o.start_slice} on GPU {o.gpu_index} lasts {o.end - o.start:.6g} s, "
                f"the table says {want:.6g} s",
            )


def _check_op_sequential(schedule: Schedule, out: _Findings) -> None:
    """Rule 6: the operations of one GPU are pairwise disjoint in time."""
    for g in range(schedule.gpus):
        ops = sorted((o for o in schedule.operations if o.gpu_index == g), key=lambda o: (o.start, o.end))
        for a, b in zip(ops, ops[1:]):
            if b.start < a.end - TOL:
                out.add(
                    "op-sequential",
                    f"GPU {g}: {a.op} {a.size}@S{a.start_slice} ({a.start:.6g}-{a.end:.6g}) overlaps "
                    f"{b.op} {b.size}@S{b.start_slice} ({b.start:.6g}-{b.end:.6g}); "
                    "the driver runs them one at a time",
                )


def _instance_lifetimes(schedule: Schedule, geometry: MigGeometry, out: _Findings) -> dict[Key, list[_Life]]:
    """Rule 7: per instance, operations alternate create, destroy, ...; returns the lifetimes they define."""
    lives: dict[Key, list[_Life]] = {}
    open_life: dict[Key, _Life] = {}
    for i in schedule.initial_instances:
        key = (i.gpu_index, i.size, i.start_slice)
        if key in open_life:
            out.add("op-order", f"initial instance {i.size}@S{i.start_slice} on GPU {i.gpu_index} listed twice")
            continue
        life = _Life(i.gpu_index, _allowed_placement(geometry, i.size, i.start_slice), 0.0, 0.0, math.inf, math.inf)
        open_life[key] = life
        lives.setdefault(key, []).append(life)
    for o in sorted(schedule.operations, key=lambda o: (o.start, o.end, o.op != "destroy")):
        key = (o.gpu_index, o.size, o.start_slice)
        where = f"{o.size}@S{o.start_slice} on GPU {o.gpu_index} at {o.start:.6g} s"
        if o.op == "create":
            if key in open_life:
                out.add("op-order", f"create of {where} while that instance already exists")
                continue
            life = _Life(
                o.gpu_index, _allowed_placement(geometry, o.size, o.start_slice), o.start, o.end, math.inf, math.inf
            )
            open_life[key] = life
            lives.setdefault(key, []).append(life)
        else:
            ended = open_life.pop(key, None)
            if ended is None:
                out.add("op-order", f"destroy of {where} without a live instance")
                continue
            ended.release, ended.until = o.start, o.end
    return lives


def _check_task_lifetimes(schedule: Schedule, lives: dict[Key, list[_Life]], out: _Findings) -> None:
    """Rule 8: each task lies after its instance's create ends and before its destroy starts."""
    for t in schedule.tasks:
        near = lives.get((t.gpu_index, t.size, t.start_slice), [])
        if any(life.ready - TOL <= t.start and t.end <= life.release + TOL for life in near):
            continue
        if not near:
            msg = f"runs on {t.size}@S{t.start_slice} of GPU {t.gpu_index}, which is never created"
        else:
            msg = (
                f"runs {t.start:.6g}-{t.end:.6g} s on {t.size}@S{t.start_slice} of GPU {t.gpu_index} "
                "outside its lifetimes "
                + ", ".join(f"[ready {life.ready:.6g}, destroy {life.release:.6g}]" for life in near)
            )
        out.add("instance-lifetime", msg, (t.task,))


def _check_partition(schedule: Schedule, lives: dict[Key, list[_Life]], out: _Findings) -> None:
    """Rule 9: instances alive at the same moment have disjoint occupancy."""
    for g in range(schedule.gpus):
        gl = sorted((life for ls in lives.values() for life in ls if life.gpu == g), key=lambda life: life.begin)
        for i, a in enumerate(gl):
            for b in gl[i + 1 :]:
                if b.begin >= a.until - TOL:
                    continue
                if a.placement.overlaps(b.placement) and b.begin < a.until - TOL and a.begin < b.until - TOL:
                    pair = ((a.placement.size, a.placement.start), (b.placement.size, b.placement.start))
                    users = tuple(
                        t.task for t in schedule.tasks if t.gpu_index == g and (t.size, t.start_slice) in pair
                    )[:4]
                    out.add(
                        "partition",
                        f"GPU {g}: instances {a.placement.label} (alive {a.begin:.6g}-{a.until:.6g} s) and "
                        f"{b.placement.label} (from {b.begin:.6g} s) "
                        "coexist but share slices, so they are not a valid partition",
                        users,
                    )


def _check_makespan(schedule: Schedule, out: _Findings) -> None:
    """Rule 10: the stated makespan equals the last task end."""
    last = max((t.end for t in schedule.tasks), default=0.0)
    if abs(schedule.makespan - last) > TOL * max(1.0, last):
        out.add("makespan", f"stated makespan {schedule.makespan:.6g} s, last task ends at {last:.6g} s")


def validate_schedule(
    schedule: Schedule,
    problem: MigProblem | None = None,
    *,
    stop_at_first: bool = False,
) -> ValidationReport:
    """Check ``schedule``; with ``problem`` also task completeness and durations. Never raises on a bad schedule.

    Rules 1 and 2 stop the check when violated (later rules need a known GPU and allowed instances).
    """
    report = ValidationReport(checked_tasks=len(schedule.tasks), checked_operations=len(schedule.operations))
    out = _Findings(report.violations, stop_at_first)
    try:
        geometry = get_mig_geometry(schedule.gpu)
    except InputError as exc:
        report.violations.append(Violation("gpu", exc.message))
        return report
    try:
        _check_gpu(schedule, problem, geometry, out)
        if report.violations:
            return report
        task_pl = _check_placements(schedule, geometry, out)
        if report.violations:
            return report
        _check_tasks(schedule, problem, out)
        _check_slice_overlap(schedule, geometry, task_pl, out)
        _check_op_durations(schedule, geometry, out)
        _check_op_sequential(schedule, out)
        lives = _instance_lifetimes(schedule, geometry, out)
        _check_task_lifetimes(schedule, lives, out)
        _check_partition(schedule, lives, out)
        _check_makespan(schedule, out)
    except _StopAtFirst:
        pass
    return report


def check_schedule(schedule: Schedule, problem: MigProblem | None = None, file: str | None = None) -> ValidationReport:
    """Validate and raise one InputError naming the first violated rule and the tasks involved."""
    report = validate_schedule(schedule, problem, stop_at_first=True)
    if report.first is not None:  # not ok
        raise InputError(report.first.one_line(), file=file)
    return report
