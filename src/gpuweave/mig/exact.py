"""Exact optimum of the MIG moldable batch problem with CP-SAT (beyond the paper; spec §5.1 [R]).

Problem. The model FAR and the validator use (spec §1.1-1.4, operational form of §1.4): each task
picks an allowed instance placement (any size it can run on, any GPU) and a start; an instance
*lifetime* runs from its create start to its destroy end and hosts its tasks one at a time, after
the create ends and before the destroy starts; lifetimes whose occupancies (spec §1.1: 3@0 also
blocks S3) intersect never coexist, so live instances always form a valid partition; the create and
destroy operations of one GPU are pairwise disjoint, with Table 1 durations (spec §1.2). An
instance may be created any number of times. Minimise the last task end.

Formulation (one CP-SAT model, OR-Tools). Lifetimes are named by their lowest task index:
``y[j, r]`` says task j runs in the lifetime whose lowest-index task is r (r <= j; ``y[r, r]``: r
opens a lifetime). Every partition of the tasks into lifetimes has exactly one such encoding, so
there are at most n lifetimes and no interchangeable lifetime slots. A lifetime r takes r's
placement (``y[j, r]`` forces j onto it), has a create start ``a_r`` and a destroy start ``b_r``
and gives

* per task and eligible placement an optional interval; ``S_j >= a_r + create``, ``S_j + t_j <= b_r``;
* per occupied slice an optional interval ``[a_r, b_r + destroy)``; those of a slice never overlap
  (the partition rule, spec §1.4 bullet 5), and neither do tasks on a slice (redundant);
* a create and a destroy interval on its GPU's operation line (one no-overlap per GPU).

Every lifetime carries a destroy in the model: one that nothing needs (no later lifetime shares its
slices) can sit after every other operation and after the last task, so it costs nothing (the
objective is the last *task* end); it is dropped from the returned schedule and the instance simply
lives on (spec §1.4 [rev]). Redundant constraints, both valid for every schedule: a cumulative of
the tasks with demand = occupancy, and the energy cut sum_i |occ(p_i)| t_i + sum_lifetimes
|occ| create <= #slices * makespan (on a slice, lifetimes are disjoint and each holds its create and
its tasks before the makespan), which sharpens the paper's LB = sum_i min_s s t_i(s) / #slices.

Symmetry breaking (exact). Identical GPUs are ordered by their lowest task index. For every pair of
sibling subtrees of the repartitioning tree (spec §1.5) that are isomorphic (A100: 2@0|2@2 under
3@0, 1@0|1@1, 1@2|1@3, 1@4|1@5; A30: 2@0|2@2, ...), the map exchanging them keeps sizes and which
instances overlap (checked in code), hence maps schedules to schedules with the same makespan; the
model asks the left subtree to hold a lower lowest task index than the right one (when the right
one holds any task). Applying the exchanges top-down (a node's pair before its descendants', each
leaving the already-settled sets unchanged) turns any schedule into one that satisfies all of these,
so some optimum survives. No dominance on sizes is assumed (times need not be monotone, spec §1.3).

Solving (:func:`exact`): the general model, seeded with FAR's schedule (mapped by the symmetries
above) as hint and upper bound; if its proven optimum creates each instance at most once, it is
also optimal among those (``optimal_single``), otherwise the one-lifetime model (the same model
with at most one lifetime per placement, the class FAR's trees belong to) runs in the time left.
Times are integers of ``resolution`` seconds with durations rounded *up*, so the returned schedule
(true durations, validated) is feasible; proven bounds hold for the rounded durations, i.e. to
within n * resolution.

Complexity: NP-hard (strip packing with moldable widths). The model has O(n^2 + n P) Booleans for
P placements. On 2 shared cores, generated A100 batches (Mixed, WideTimes) prove optimal in ~1-8 s
at n = 10 and in tens of seconds at n = 12; the previous slot model (K_p interchangeable lifetimes
per placement) proved n = 10 in 1 of 5 seeds within 60 s.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from gpuweave.errors import InputError
from gpuweave.hardware.mig import Placement, TreeNode, repartition_tree
from gpuweave.mig.far import far
from gpuweave.mig.problem import MigProblem, lower_bound
from gpuweave.mig.registry import register_planner
from gpuweave.mig.schedule import Operation, Schedule, ScheduledTask


@dataclass(slots=True)
class ExactResult:
    schedule: Schedule
    optimal: bool  # proven optimal in the general model (any number of lifetimes per instance)
    optimal_single: bool  # proven optimal among schedules creating each instance at most once
    bound: float  # proven lower bound on the general (rounded-duration) optimum, seconds
    wall_s: float
    resolution: float
    status: str


def exact(
    problem: MigProblem,
    *,
    time_limit_s: float = 60.0,
    resolution: float | None = None,
    max_lifetimes: int | None = None,
    workers: int = 2,
    hint: Schedule | None = None,
    max_tasks: int = 14,
) -> ExactResult:
    """Exact optimum within ``time_limit_s`` (see the module docstring).

    Without ``max_lifetimes``: the general model (any number of lifetimes per instance); ``optimal``
    is True when it is proven, ``bound`` is its proven lower bound (at least LB). ``optimal_single``
    is True when the optimum is also proven among schedules creating each instance at most once
    (directly, or by a one-lifetime solve in the time left). With ``max_lifetimes`` = K: only the
    model with at most K lifetimes per instance; ``optimal`` stays False and ``optimal_single`` says
    whether that restricted model was proven.
    """
    if problem.n > max_tasks:
        raise InputError(f"the exact solver is for small batches (n <= {max_tasks}); this batch has {problem.n} tasks")
    t0 = time.perf_counter()
    if max_lifetimes is not None:
        only = _solve(
            problem,
            time_limit_s=time_limit_s,
            resolution=resolution,
            max_lifetimes=max_lifetimes,
            workers=workers,
            hint=hint,
        )
        best, general_optimal, single_optimal = only, False, only.optimal
        bound = lower_bound(problem)
    else:
        general = _solve(
            problem, time_limit_s=time_limit_s, resolution=resolution, max_lifetimes=None, workers=workers, hint=hint
        )
        best, general_optimal = general, general.optimal
        bound = max(lower_bound(problem), general.bound)
        # an optimum that creates every instance at most once is also optimal among such schedules
        single_optimal = general.optimal and _single_lifetime(general.schedule)
        left = time_limit_s - (time.perf_counter() - t0)
        if not single_optimal and left > 1.0:
            single = _solve(
                problem, time_limit_s=left, resolution=general.resolution, max_lifetimes=1, workers=workers, hint=hint
            )
            single_optimal = single.optimal
            if single.schedule.makespan < best.schedule.makespan - 1e-12:
                best = single
    wall = time.perf_counter() - t0
    sched = best.schedule
    sched.info.update(
        {"optimal": general_optimal, "optimal_single_lifetime": single_optimal, "bound_s": bound, "wall_s": wall}
    )
    return ExactResult(sched, general_optimal, single_optimal, bound, wall, best.resolution, best.status)


def _single_lifetime(schedule: Schedule) -> bool:
    creates = [(o.gpu_index, o.size, o.start_slice) for o in schedule.operations if o.op == "create"]
    return len(set(creates)) == len(creates)


def _units(x: float, res: float) -> int:
    return max(0, math.ceil(x / res - 1e-6))


def _shape(node: TreeNode) -> tuple:
    """Structure of a subtree up to slice positions: sizes, occupancy counts, children's shapes."""
    return (node.size, len(node.occupancy), tuple(_shape(c) for c in node.children))


def _swap_pairs(geom) -> list[tuple[frozenset[Placement], frozenset[Placement], dict[Placement, Placement]]]:
    """Sibling subtrees of the repartitioning tree that an automorphism of the GPU exchanges.

    Two consecutive isomorphic children A, B of one tree node: the map that swaps A's subtree with
    B's (placement by placement, in tree order) and fixes every other placement keeps sizes and
    "occupancies intersect" (checked here, not assumed), so it maps every feasible schedule to a
    feasible schedule with the same makespan (task, create and destroy times depend only on the
    size, spec §1.1-1.2; feasibility only on which instances overlap, spec §1.4). Returned
    top-down (a node's pairs before its descendants'), the order the symmetry argument needs.
    """
    try:
        root = repartition_tree(geom)
    except ValueError:
        return []
    out = []
    queue = [root]
    allp = geom.placements
    while queue:
        node = queue.pop(0)
        kids = node.children
        for a, b in zip(kids, kids[1:]):
            if _shape(a) != _shape(b):
                continue
            pa, pb = [x.placement for x in a.walk()], [x.placement for x in b.walk()]
            sigma = {**dict(zip(pa, pb)), **dict(zip(pb, pa))}
            ok = all(p.size == sigma.get(p, p).size for p in allp) and all(
                p.overlaps(q) == sigma.get(p, p).overlaps(sigma.get(q, q)) for p in allp for q in allp
            )
            if ok:
                out.append((frozenset(pa), frozenset(pb), sigma))
        queue.extend(kids)
    return out


def _canonical(schedule: Schedule, problem: MigProblem) -> Schedule:
    """The image of ``schedule`` under the GPU/placement symmetries that satisfies the symmetry
    breaking of the model (same makespan, still feasible); used to seed the solver."""
    geom = problem.geometry
    index = {name: i for i, name in enumerate(problem.names)}
    tasks, ops, init = list(schedule.tasks), list(schedule.operations), list(schedule.initial_instances)
    first = {
        g: min((index[t.task] for t in tasks if t.gpu_index == g), default=problem.n + g) for g in range(problem.gpus)
    }
    order = sorted(range(problem.gpus), key=lambda g: first[g])
    new_g = {g: k for k, g in enumerate(order)}
    tasks = [replace(t, gpu_index=new_g[t.gpu_index]) for t in tasks]
    ops = [replace(o, gpu_index=new_g[o.gpu_index]) for o in ops]
    init = [replace(x, gpu_index=new_g[x.gpu_index]) for x in init]
    for left, right, sigma in _swap_pairs(geom):
        by_key = {(p.size, p.start): p for p in geom.placements}
        for g in range(problem.gpus):

            def low(side):
                return min(
                    (index[t.task] for t in tasks if t.gpu_index == g and by_key[t.size, t.start_slice] in side),
                    default=problem.n,
                )

            if low(right) < low(left):

                def move(x):
                    if x.gpu_index != g:
                        return x
                    q = sigma.get(by_key[x.size, x.start_slice])
                    return x if q is None else replace(x, start_slice=q.start)

                tasks = [move(t) for t in tasks]
                ops = [move(o) for o in ops]
                init = [move(x) for x in init]
    return Schedule(
        schedule.gpu,
        schedule.gpus,
        schedule.makespan,
        schedule.lower_bound,
        tasks,
        ops,
        schedule.reconfiguration,
        init,
        schedule.algo,
        dict(schedule.info),
    )


@dataclass(slots=True)
class _Grid:
    """The problem on the integer time grid: durations in units of ``res`` (rounded up), placements, horizons."""

    res: float
    kidx: dict[int, int]  # size -> column of problem.times
    dur: list[list[int | None]]  # dur[i][k]: task i on size k (None: cannot run)
    cu: dict[int, int]  # create duration per size
    du: dict[int, int]  # destroy duration per size
    places: list[tuple[int, Placement]]  # (gpu, placement), index pi
    elig: list[list[int]]  # elig[i]: the pi task i can run on
    horizon: int
    op_horizon: int

    def task_units(self, i: int, pi: int) -> int:
        return self.dur[i][self.kidx[self.places[pi][1].size]]  # type: ignore[return-value]  # pi in elig[i]

    def size(self, pi: int) -> int:
        return self.places[pi][1].size


def _grid(problem: MigProblem, resolution: float | None, hint: Schedule) -> _Grid:
    """Discretise ``problem``; the horizon is the hint re-timed on the grid plus the rounding slack."""
    geom = problem.geometry
    sizes = problem.sizes
    finite = [t for row in problem.times for t in row if not math.isinf(t)]
    if resolution is None:
        resolution = min(
            1e-3, min(finite) / 100.0, min(min(geom.create_s.values()), min(geom.destroy_s.values())) / 100.0
        )
    res = resolution
    kidx = {s: k for k, s in enumerate(sizes)}
    dur = [[_units(t, res) if not math.isinf(t) else None for t in row] for row in problem.times]
    cu = {s: _units(geom.create_s[s], res) for s in sizes}
    du = {s: _units(geom.destroy_s[s], res) for s in sizes}
    places: list[tuple[int, Placement]] = [(g, p) for g in range(problem.gpus) for p in geom.placements]
    elig = [[pi for pi, (g, p) in enumerate(places) if dur[i][kidx[p.size]] is not None] for i in range(problem.n)]
    for i in range(problem.n):
        if not elig[i]:
            raise InputError(f"task {problem.names[i]!r} fits no instance")
    # Upper bound: the hint re-timed with rounded-up durations is late by < 1 unit per element of a
    # chain of tasks and operations; the slack below covers every chain.
    horizon = _units(hint.makespan, res) + problem.n + len(hint.operations) + 2
    op_horizon = horizon + problem.n * max(du.values()) + 1  # a final destroy may come after the last task
    return _Grid(res, kidx, dur, cu, du, places, elig, horizon, op_horizon)


@dataclass(slots=True)
class _LifetimeModel:
    """The CP-SAT model and the variables read back (names as in the module docstring)."""

    # cp_model.CpModel and its variables: typed Any, as ortools' stubs lack the CamelCase API used here
    m: Any
    makespan: Any
    z: dict[tuple[int, int], Any] = field(default_factory=dict)  # task i on placement pi
    y: dict[tuple[int, int], Any] = field(default_factory=dict)  # task j in the lifetime opened by r
    w: dict[tuple[int, int], Any] = field(default_factory=dict)  # lifetime r on placement pi
    start: list = field(default_factory=list)
    dvar: list = field(default_factory=list)
    a_var: list = field(default_factory=list)  # create starts
    b_var: list = field(default_factory=list)  # destroy starts
    ce_var: list = field(default_factory=list)  # create ends
    task_ivs_by_key: dict[tuple[int, int], list] = field(default_factory=dict)  # (gpu, slice) -> task intervals
    cumul: dict[int, tuple[list, list]] = field(default_factory=dict)  # gpu -> (task intervals, demands)
    life_ivs_by_key: dict[tuple[int, int], list] = field(default_factory=dict)  # (gpu, slice) -> lifetimes
    ops_by_gpu: dict[int, list] = field(default_factory=dict)  # gpu -> create/destroy intervals


def _add_tasks(mdl: _LifetimeModel, grid: _Grid, problem: MigProblem) -> None:
    """Per task: a start, a duration and one optional interval per eligible placement (exactly one chosen)."""
    m, z = mdl.m, mdl.z
    mdl.cumul = {g: ([], []) for g in range(problem.gpus)}
    for i in range(problem.n):
        dmin = min(grid.task_units(i, pi) for pi in grid.elig[i])
        dmax = max(grid.task_units(i, pi) for pi in grid.elig[i])
        s_i = m.NewIntVar(0, max(0, grid.horizon - dmin), f"S_{i}")
        d_i = m.NewIntVar(dmin, dmax, f"D_{i}")
        mdl.start.append(s_i)
        mdl.dvar.append(d_i)
        for pi in grid.elig[i]:
            g, p = grid.places[pi]
            z[i, pi] = m.NewBoolVar(f"z_{i}_{pi}")
            iv = m.NewOptionalFixedSizeIntervalVar(s_i, grid.task_units(i, pi), z[i, pi], f"t_{i}_{pi}")
            for s in p.occupancy:
                mdl.task_ivs_by_key.setdefault((g, s), []).append(iv)
            mdl.cumul[g][0].append(iv)
            mdl.cumul[g][1].append(len(p.occupancy))
        m.AddExactlyOne(z[i, pi] for pi in grid.elig[i])
        m.Add(d_i == sum(grid.task_units(i, pi) * z[i, pi] for pi in grid.elig[i]))
        m.Add(mdl.makespan >= s_i + d_i)


def _presence(m, lits: list, name: str):
    """One literal true iff one of ``lits`` (at most one can be) is true."""
    if len(lits) == 1:
        return lits[0]
    pres = m.NewBoolVar(name)
    m.Add(pres == sum(lits))
    return pres


def _add_lifetime(mdl: _LifetimeModel, grid: _Grid, problem: MigProblem, r: int) -> None:
    """Lifetime r (opened by task r): its placement, create and destroy, and its intervals per GPU and slice."""
    m, w, rep = mdl.m, mdl.w, mdl.y[r, r]
    elig, places = grid.elig[r], grid.places
    max_cu, max_du = max(grid.cu.values()), max(grid.du.values())
    for pi in elig:
        w[r, pi] = m.NewBoolVar(f"w_{r}_{pi}")
        m.AddImplication(w[r, pi], rep)
        m.AddImplication(w[r, pi], mdl.z[r, pi])
        m.AddBoolOr([rep.Not(), mdl.z[r, pi].Not(), w[r, pi]])
    a = m.NewIntVar(0, grid.horizon, f"a_{r}")
    b = m.NewIntVar(0, grid.op_horizon, f"b_{r}")
    cs = m.NewIntVar(0, max_cu, f"cs_{r}")
    ds = m.NewIntVar(0, max_du, f"ds_{r}")
    m.Add(cs == sum(grid.cu[grid.size(pi)] * w[r, pi] for pi in elig))
    m.Add(ds == sum(grid.du[grid.size(pi)] * w[r, pi] for pi in elig))
    m.Add(a == 0).OnlyEnforceIf(rep.Not())
    m.Add(b == 0).OnlyEnforceIf(rep.Not())
    le = m.NewIntVar(0, grid.op_horizon + max_du, f"le_{r}")
    m.Add(le == b + ds)
    ce = m.NewIntVar(0, grid.horizon + max_cu, f"ce_{r}")
    m.Add(ce == a + cs)
    lsz = m.NewIntVar(0, grid.op_horizon + max_du, f"lsz_{r}")
    mdl.a_var.append(a)
    mdl.b_var.append(b)
    mdl.ce_var.append(ce)
    for g in range(problem.gpus):
        on_g = [w[r, pi] for pi in elig if places[pi][0] == g]
        if not on_g:
            continue
        pres_g = _presence(m, on_g, f"og_{r}_{g}")
        mdl.ops_by_gpu[g].append(m.NewOptionalIntervalVar(a, cs, ce, pres_g, f"c_{r}_{g}"))
        mdl.ops_by_gpu[g].append(m.NewOptionalIntervalVar(b, ds, le, pres_g, f"d_{r}_{g}"))
        for s in range(problem.geometry.num_slices):
            on_s = [w[r, pi] for pi in elig if places[pi][0] == g and s in places[pi][1].occupancy]
            if not on_s:
                continue
            pres_s = _presence(m, on_s, f"os_{r}_{g}_{s}")
            mdl.life_ivs_by_key.setdefault((g, s), []).append(
                m.NewOptionalIntervalVar(a, lsz, le, pres_s, f"l_{r}_{g}_{s}")
            )


def _add_lifetimes(mdl: _LifetimeModel, grid: _Grid, problem: MigProblem) -> None:
    """y[j, r] (task j in the lifetime opened by r), the lifetimes, and tasks inside their lifetime."""
    m, y, n, elig = mdl.m, mdl.y, problem.n, grid.elig
    for j in range(n):
        for r in range(j + 1):
            if set(elig[j]) & set(elig[r]):
                y[j, r] = m.NewBoolVar(f"y_{j}_{r}")
        m.AddExactlyOne(y[j, r] for r in range(j + 1) if (j, r) in y)
    mdl.ops_by_gpu = {g: [] for g in range(problem.gpus)}
    for r in range(n):
        _add_lifetime(mdl, grid, problem, r)
    for j, r in sorted(y):
        lit = y[j, r]
        if r < j:
            m.AddImplication(lit, y[r, r])
            for pi in set(elig[j]) | set(elig[r]):
                m.Add(mdl.z.get((j, pi), 0) == mdl.z.get((r, pi), 0)).OnlyEnforceIf(lit)
        m.Add(mdl.start[j] >= mdl.ce_var[r]).OnlyEnforceIf(lit)
        m.Add(mdl.start[j] + mdl.dvar[j] <= mdl.b_var[r]).OnlyEnforceIf(lit)


def _add_resources(mdl: _LifetimeModel, grid: _Grid, problem: MigProblem, max_lifetimes: int | None) -> None:
    """No overlaps (lifetimes and tasks per slice, operations per GPU), the cumulative, the lifetime cap, energy."""
    m, places = mdl.m, grid.places
    for ivs in mdl.life_ivs_by_key.values():
        m.AddNoOverlap(ivs)
    for ivs in mdl.task_ivs_by_key.values():
        if len(ivs) > 1:
            m.AddNoOverlap(ivs)
    for ivs in mdl.ops_by_gpu.values():
        m.AddNoOverlap(ivs)
    for ivs, dem in mdl.cumul.values():
        m.AddCumulative(ivs, dem, problem.geometry.num_slices)
    if max_lifetimes is not None:
        for pi in range(len(places)):
            ws = [mdl.w[r, pi] for r in range(problem.n) if (r, pi) in mdl.w]
            if len(ws) > max_lifetimes:
                m.Add(sum(ws) <= max_lifetimes)
    # energy: on every slice, lifetimes are disjoint and each holds its create and its tasks
    # before the makespan
    m.Add(
        sum(len(places[pi][1].occupancy) * grid.task_units(i, pi) * mdl.z[i, pi] for (i, pi) in mdl.z)
        + sum(len(places[pi][1].occupancy) * grid.cu[grid.size(pi)] * mdl.w[r, pi] for (r, pi) in mdl.w)
        <= problem.num_slices * mdl.makespan
    )


def _add_symmetry_breaking(mdl: _LifetimeModel, grid: _Grid, problem: MigProblem) -> None:
    """GPUs in order of their lowest task index; then for every pair of exchangeable sibling subtrees, the
    left one holds the lower lowest task index (module docstring)."""
    places = grid.places
    groups: list[tuple[list[int], list[int]]] = []
    for g in range(problem.gpus - 1):
        groups.append(
            (
                [pi for pi, (gg, _) in enumerate(places) if gg == g],
                [pi for pi, (gg, _) in enumerate(places) if gg == g + 1],
            )
        )
    for left_set, right_set, _ in _swap_pairs(problem.geometry):
        for g in range(problem.gpus):
            groups.append(
                (
                    [pi for pi, (gg, p) in enumerate(places) if gg == g and p in left_set],
                    [pi for pi, (gg, p) in enumerate(places) if gg == g and p in right_set],
                )
            )
    for left, right in groups:
        u_left: list[Any] = []
        for i in range(problem.n):
            ls = [mdl.z[i, pi] for pi in left if (i, pi) in mdl.z]
            rs = [mdl.z[i, pi] for pi in right if (i, pi) in mdl.z]
            # task i on the right side needs a lower-index task on the left side
            for x in rs:
                mdl.m.AddBoolOr(u_left + [x.Not()])
            u_left.extend(ls)


def _decode(solver, mdl: _LifetimeModel, grid: _Grid, problem: MigProblem) -> tuple[list, list]:
    """Tasks at their true durations, and the operations (a destroy only where a later lifetime needs it)."""
    geom, res, places = problem.geometry, grid.res, grid.places
    out_tasks: list[ScheduledTask] = []
    for i in range(problem.n):
        g, p = places[next(pi for pi in grid.elig[i] if solver.Value(mdl.z[i, pi]))]
        st = solver.Value(mdl.start[i]) * res
        true = problem.times[i][grid.kidx[p.size]]
        cmd = problem.commands[i] if problem.commands else None
        out_tasks.append(ScheduledTask(problem.names[i], g, p.size, p.start, st, st + true, cmd))
    lives = []
    for r in range(problem.n):
        if solver.Value(mdl.y[r, r]):
            g, p = places[next(pi for pi in grid.elig[r] if solver.Value(mdl.w[r, pi]))]
            lives.append((g, p, solver.Value(mdl.a_var[r]) * res, solver.Value(mdl.b_var[r]) * res))
    ops: list[Operation] = []
    for g, p, a, b in lives:
        ops.append(Operation("create", g, p.size, p.start, a, a + geom.create_s[p.size]))
        if any(g2 == g and a2 > a and p2.overlaps(p) for g2, p2, a2, _ in lives):
            ops.append(Operation("destroy", g, p.size, p.start, b, b + geom.destroy_s[p.size]))
    return out_tasks, ops


def _solve(
    problem: MigProblem,
    *,
    time_limit_s: float,
    resolution: float | None,
    max_lifetimes: int | None,
    workers: int,
    hint: Schedule | None,
) -> ExactResult:
    """One CP-SAT solve of the lifetime model with at most ``max_lifetimes`` lifetimes per instance."""
    from ortools.sat.python import cp_model

    if hint is None:
        hint = far(problem).schedule
    grid = _grid(problem, resolution, hint)
    m: Any = cp_model.CpModel()  # its CamelCase API is not in ortools' stubs
    mdl = _LifetimeModel(m, m.NewIntVar(0, grid.horizon, "makespan"))
    _add_tasks(mdl, grid, problem)
    _add_lifetimes(mdl, grid, problem)
    _add_resources(mdl, grid, problem, max_lifetimes)
    _add_symmetry_breaking(mdl, grid, problem)
    m.Minimize(mdl.makespan)
    _add_hint(
        m, _canonical(hint, problem), problem, grid.places, mdl.z, mdl.y, mdl.w, mdl.start, mdl.a_var, mdl.b_var,
        grid.res, grid.horizon,
    )  # fmt: skip

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = 0
    t0 = time.perf_counter()
    status = solver.Solve(m)
    wall = time.perf_counter() - t0
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise InputError(f"exact solver found no schedule within {time_limit_s} s (status {solver.StatusName(status)})")
    out_tasks, ops = _decode(solver, mdl, grid, problem)
    optimal = status == cp_model.OPTIMAL
    bound = solver.BestObjectiveBound() * grid.res
    info = {
        "optimal": optimal,
        "status": solver.StatusName(status),
        "bound_s": bound,
        "resolution_s": grid.res,
        "wall_s": wall,
    }
    ms = max(t.end for t in out_tasks)
    sched = Schedule(problem.gpu, problem.gpus, ms, lower_bound(problem), out_tasks, ops, "table", [], "exact", info)
    return ExactResult(sched, optimal, optimal, bound, wall, grid.res, solver.StatusName(status))


def _add_hint(
    m, hint: Schedule, problem: MigProblem, places, z, y, w, start, a_var, b_var, res: float, horizon: int
) -> None:
    """Hint every variable from a feasible schedule (its lifetimes read from its operations)."""
    index = {n: i for i, n in enumerate(problem.names)}
    place_index = {(g, p.size, p.start): pi for pi, (g, p) in enumerate(places)}
    creates: dict[int, list[float]] = {}
    destroys: dict[int, list[float]] = {}
    for o in sorted(hint.operations, key=lambda o: o.start):
        pi = place_index[(o.gpu_index, o.size, o.start_slice)]
        (creates if o.op == "create" else destroys).setdefault(pi, []).append(o.start)
    for init in hint.initial_instances:
        creates.setdefault(place_index[(init.gpu_index, init.size, init.start_slice)], []).insert(0, 0.0)
    life_of: dict[int, tuple[int, int]] = {}
    for t in hint.tasks:
        i = index[t.task]
        pi = place_index[(t.gpu_index, t.size, t.start_slice)]
        k = max(0, sum(1 for c0 in creates.get(pi, []) if c0 <= t.start + 1e-9) - 1)
        life_of[i] = (pi, k)
        m.AddHint(start[i], _units(t.start, res))
    rep_of: dict[tuple[int, int], int] = {}
    for i in sorted(life_of):
        rep_of.setdefault(life_of[i], i)
    for (i, pi), var in z.items():
        m.AddHint(var, 1 if life_of[i][0] == pi else 0)
    for (j, r), var in y.items():
        m.AddHint(var, 1 if rep_of[life_of[j]] == r else 0)
    for (r, pi), var in w.items():
        m.AddHint(var, 1 if rep_of[life_of[r]] == r and life_of[r][0] == pi else 0)
    end_ops = max((o.end for o in hint.operations), default=0.0)
    for (pi, k), r in rep_of.items():
        cs = creates.get(pi, [])
        ds = destroys.get(pi, [])
        m.AddHint(a_var[r], _units(cs[k], res) if k < len(cs) else 0)
        m.AddHint(b_var[r], _units(ds[k], res) if k < len(ds) else max(horizon, _units(end_ops, res)) + 1)


@register_planner("exact", help="exact optimum with CP-SAT (small batches, n <= 14; 60 s limit)")
def exact_planner(problem: MigProblem, arg: str | None) -> Schedule:
    return exact(problem).schedule
