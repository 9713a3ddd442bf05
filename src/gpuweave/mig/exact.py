"""Exact optimum of the MIG moldable batch problem with CP-SAT (beyond the paper; spec §5.1 [R]).

Problem. The same model FAR and the validator use (spec §1.4, operational form): each task picks an
instance placement (any size it can run on, any GPU) and a start; an instance *lifetime* runs from
its create start to its destroy end, hosts its tasks back to back or with gaps after the create;
lifetimes whose occupancies overlap never coexist (valid partitions at every moment); create and
destroy operations of one GPU are sequential with Table 1 durations. Minimise the last task end.

Model (CP-SAT, OR-Tools): per placement p and GPU, K_p optional lifetime slots (ordered, each used by
at least one task, symmetric ones broken by order); per task a placement choice, a start, an optional
interval per placement (no-overlap per placement) and a slot choice that keeps it inside the slot's
lifetime; no-overlap of lifetimes per slice (occupancy), of create/destroy intervals per GPU; a
redundant cumulative over task intervals (demand = occupancy). Every lifetime carries a destroy; a
destroy that nothing needs (no later lifetime shares its slices) costs nothing here because the
objective is the last *task* end, and is dropped from the returned schedule (the instance simply
lives on, spec §1.4 [rev]).

Exactness. K_p = min(#tasks that can run on p, floor((n+1)/2)): two lifetimes of p with no
overlapping lifetime between them can be merged (dropping a destroy and a create never hurts), so
some optimal schedule has L_p - 1 other lifetimes between its L_p ones. Solving runs in two stages
(:func:`exact`): one lifetime per instance first (the class FAR's trees belong to; small, proven
fast), then the general model seeded with it. Times are integers of ``resolution`` seconds with
durations rounded *up*, so the returned schedule (true durations, validated) is feasible; proven
bounds hold for the rounded durations, i.e. to within n * resolution.

Complexity: NP-hard. On 2 shared cores the one-lifetime stage proves n = 10 on A100 in ~10-30 s;
the general stage closes n <= 8 but often not n = 10 within 60 s (then ``optimal`` is False and
``bound`` is the proven general lower bound).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from gpuweave.errors import InputError
from gpuweave.hardware.mig import Placement
from gpuweave.mig.problem import MigProblem, lower_bound
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
    """Exact optimum in two stages sharing ``time_limit_s``.

    Stage 1 solves the model with one lifetime per instance (each placement created at most once, as
    in every FAR tree schedule): small, usually proven fast. Stage 2 (unless ``max_lifetimes`` is
    given) solves the general model seeded with stage 1's schedule; ``optimal`` is True only when
    stage 2 proves it. ``bound`` is stage 2's proven bound (or the lower bound LB).
    """
    if problem.n > max_tasks:
        raise InputError(f"the exact solver is for small batches (n <= {max_tasks}); this batch has {problem.n} tasks")
    t0 = time.perf_counter()
    cap1 = 1 if max_lifetimes is None else max_lifetimes
    first = _solve(problem, time_limit_s=time_limit_s, resolution=resolution, max_lifetimes=cap1, workers=workers, hint=hint)
    best = first
    general_optimal = False
    bound = lower_bound(problem)
    if max_lifetimes is None:
        left = time_limit_s - (time.perf_counter() - t0)
        if left > 1.0:
            second = _solve(problem, time_limit_s=left, resolution=first.resolution, max_lifetimes=None, workers=workers, hint=first.schedule)
            bound = max(bound, second.bound)
            general_optimal = second.optimal
            if second.schedule.makespan < best.schedule.makespan - 1e-12:
                best = second
    wall = time.perf_counter() - t0
    sched = best.schedule
    sched.info.update({"optimal": general_optimal, "optimal_single_lifetime": first.optimal, "bound_s": bound, "wall_s": wall})
    return ExactResult(sched, general_optimal, first.optimal, bound, wall, first.resolution, best.status)


def _units(x: float, res: float) -> int:
    return max(0, math.ceil(x / res - 1e-6))


def _solve(
    problem: MigProblem,
    *,
    time_limit_s: float,
    resolution: float | None,
    max_lifetimes: int | None,
    workers: int,
    hint: Schedule | None,
) -> ExactResult:
    """One CP-SAT solve of the model with at most ``max_lifetimes`` lifetimes per instance."""
    from ortools.sat.python import cp_model

    geom = problem.geometry
    sizes = problem.sizes
    finite = [t for row in problem.times for t in row if not math.isinf(t)]
    if resolution is None:
        resolution = min(1e-3, min(finite) / 100.0, min(min(geom.create_s.values()), min(geom.destroy_s.values())) / 100.0)
    res = resolution
    if hint is None:
        from gpuweave.mig.far import far

        hint = far(problem).schedule
    n_ops = len(hint.operations)
    horizon = _units(hint.makespan, res) + 2 * (problem.n + n_ops) + 10 + _units(max(geom.destroy_s.values()), res) * (n_ops + problem.n + 2)

    m = cp_model.CpModel()
    places: list[tuple[int, Placement]] = [(g, p) for g in range(problem.gpus) for p in geom.placements]
    kidx = {s: k for k, s in enumerate(sizes)}
    dur = [[_units(t, res) if not math.isinf(t) else None for t in row] for row in problem.times]
    cu = {s: _units(geom.create_s[s], res) for s in sizes}
    du = {s: _units(geom.destroy_s[s], res) for s in sizes}

    eligible = {pi: [i for i in range(problem.n) if dur[i][kidx[p.size]] is not None] for pi, (g, p) in enumerate(places)}
    slots: dict[int, list[tuple]] = {}
    ops_by_gpu: dict[int, list] = {g: [] for g in range(problem.gpus)}
    life_by_slice: dict[tuple[int, int], list] = {}
    for pi, (g, p) in enumerate(places):
        k_p = min(len(eligible[pi]), (problem.n + 1) // 2)  # L lifetimes need L-1 others in between
        if max_lifetimes is not None:
            k_p = min(k_p, max_lifetimes)
        lst = []
        for k in range(k_p):
            pres = m.NewBoolVar(f"pres_{pi}_{k}")
            a = m.NewIntVar(0, horizon, f"a_{pi}_{k}")
            b = m.NewIntVar(0, horizon, f"b_{pi}_{k}")
            c_iv = m.NewOptionalFixedSizeIntervalVar(a, cu[p.size], pres, f"c_{pi}_{k}")
            d_iv = m.NewOptionalFixedSizeIntervalVar(b, du[p.size], pres, f"d_{pi}_{k}")
            life_end = m.NewIntVar(0, horizon + du[p.size], f"le_{pi}_{k}")
            m.Add(life_end == b + du[p.size])
            life = m.NewOptionalIntervalVar(a, m.NewIntVar(0, horizon + du[p.size], f"ls_{pi}_{k}"), life_end, pres, f"life_{pi}_{k}")
            m.Add(b >= a + cu[p.size]).OnlyEnforceIf(pres)
            ops_by_gpu[g] += [c_iv, d_iv]
            for s in p.occupancy:
                life_by_slice.setdefault((g, s), []).append(life)
            if lst:
                prev = lst[-1]
                m.AddImplication(pres, prev[0])
                m.Add(a >= prev[2] + du[p.size]).OnlyEnforceIf(pres)
            lst.append((pres, a, b))
        slots[pi] = lst
    for key, lives in life_by_slice.items():
        m.AddNoOverlap(lives)
    for g, ivs in ops_by_gpu.items():
        m.AddNoOverlap(ivs)

    makespan = m.NewIntVar(0, horizon, "makespan")
    task_ivs_by_place: dict[int, list] = {pi: [] for pi in range(len(places))}
    cumul: dict[int, tuple[list, list]] = {g: ([], []) for g in range(problem.gpus)}
    slot_users: dict[tuple[int, int], list] = {}
    z_vars: dict[tuple[int, int], object] = {}
    start_vars = []
    slot_x: dict[tuple[int, int, int], object] = {}
    for i in range(problem.n):
        start = m.NewIntVar(0, horizon, f"S_{i}")
        start_vars.append(start)
        zs = []
        for pi, (g, p) in enumerate(places):
            d = dur[i][kidx[p.size]]
            if d is None:
                continue
            z = m.NewBoolVar(f"z_{i}_{pi}")
            z_vars[(i, pi)] = z
            zs.append(z)
            iv = m.NewOptionalIntervalVar(start, d, start + d, z, f"t_{i}_{pi}")
            task_ivs_by_place[pi].append(iv)
            cumul[g][0].append(iv)
            cumul[g][1].append(len(p.occupancy))
            m.Add(makespan >= start + d).OnlyEnforceIf(z)
            xs = []
            for k, (pres, a, b) in enumerate(slots[pi]):
                x = m.NewBoolVar(f"x_{i}_{pi}_{k}")
                xs.append(x)
                slot_x[(i, pi, k)] = x
                m.AddImplication(x, pres)
                m.Add(start >= a + cu[p.size]).OnlyEnforceIf(x)
                m.Add(start + d <= b).OnlyEnforceIf(x)
                slot_users.setdefault((pi, k), []).append(x)
            m.Add(sum(xs) == z)
        if not zs:
            raise InputError(f"task {problem.names[i]!r} fits no instance")
        m.AddExactlyOne(zs)
    for (pi, k), xs in slot_users.items():
        m.Add(sum(xs) >= 1).OnlyEnforceIf(slots[pi][k][0])
    for pi, lst in slots.items():
        for k, (pres, _, _) in enumerate(lst):
            if (pi, k) not in slot_users:
                m.Add(pres == 0)
    for pi, ivs in task_ivs_by_place.items():
        if len(ivs) > 1:
            m.AddNoOverlap(ivs)
    for g, (ivs, dem) in cumul.items():
        m.AddCumulative(ivs, dem, geom.num_slices)
    m.Add(makespan * problem.num_slices >= sum(_units(problem.min_work(i), res) for i in range(problem.n)) - problem.n)
    m.Minimize(makespan)

    _add_hint(m, hint, problem, places, slots, z_vars, start_vars, slot_x, res)
    m.AddHint(makespan, _units(hint.makespan, res))

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = 0
    t0 = time.perf_counter()
    status = solver.Solve(m)
    wall = time.perf_counter() - t0
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise InputError(f"exact solver found no schedule within {time_limit_s} s (status {solver.StatusName(status)})")

    out_tasks: list[ScheduledTask] = []
    for i in range(problem.n):
        g, p = next(places[pi] for (ii, pi), z in z_vars.items() if ii == i and solver.Value(z))
        st = solver.Value(start_vars[i]) * res
        true = problem.times[i][kidx[p.size]]
        cmd = problem.commands[i] if problem.commands else None
        out_tasks.append(ScheduledTask(problem.names[i], g, p.size, p.start, st, st + true, cmd))
    lives = []
    for pi, lst in slots.items():
        g, p = places[pi]
        for pres, a, b in lst:
            if solver.Value(pres):
                lives.append((g, p, solver.Value(a) * res, solver.Value(b) * res))
    ops: list[Operation] = []
    for g, p, a, b in lives:
        ops.append(Operation("create", g, p.size, p.start, a, a + geom.create_s[p.size]))
        needed = any(g2 == g and a2 > a and p2.overlaps(p) for g2, p2, a2, _ in lives)
        if needed:
            ops.append(Operation("destroy", g, p.size, p.start, b, b + geom.destroy_s[p.size]))
    ms = max(t.end for t in out_tasks)
    optimal = status == cp_model.OPTIMAL
    info = {
        "optimal": optimal,
        "status": solver.StatusName(status),
        "bound_s": solver.BestObjectiveBound() * res,
        "resolution_s": res,
        "wall_s": wall,
    }
    sched = Schedule(problem.gpu, problem.gpus, ms, lower_bound(problem), out_tasks, ops, "table", [], "exact", info)
    return ExactResult(sched, optimal, optimal, solver.BestObjectiveBound() * res, wall, res, solver.StatusName(status))


def _add_hint(m, hint: Schedule, problem: MigProblem, places, slots, z_vars, start_vars, slot_x, res: float) -> None:
    """Hint every variable from a feasible schedule (its lifetimes read from its operations)."""
    index = {n: i for i, n in enumerate(problem.names)}
    place_index = {(g, p.size, p.start): pi for pi, (g, p) in enumerate(places)}
    creates: dict[int, list[tuple[float, float]]] = {}
    destroys: dict[int, list[float]] = {}
    for o in sorted(hint.operations, key=lambda o: o.start):
        pi = place_index[(o.gpu_index, o.size, o.start_slice)]
        if o.op == "create":
            creates.setdefault(pi, []).append((o.start, o.end))
        else:
            destroys.setdefault(pi, []).append(o.start)
    for init in hint.initial_instances:
        creates.setdefault(place_index[(init.gpu_index, init.size, init.start_slice)], []).insert(0, (0.0, 0.0))
    chosen: dict[int, tuple[int, int]] = {}
    for t in hint.tasks:
        i = index[t.task]
        pi = place_index[(t.gpu_index, t.size, t.start_slice)]
        k = sum(1 for c0, _ in creates.get(pi, []) if c0 <= t.start + 1e-9) - 1
        chosen[i] = (pi, max(k, 0))
        m.AddHint(start_vars[i], _units(t.start, res))
    for (i, pi), z in z_vars.items():
        m.AddHint(z, 1 if chosen[i][0] == pi else 0)
    for (i, pi, k), x in slot_x.items():
        m.AddHint(x, 1 if chosen[i] == (pi, k) else 0)
    used = {v for v in chosen.values()}
    for pi, lst in slots.items():
        cs = creates.get(pi, [])
        ds = destroys.get(pi, [])
        for k, (pres, a, b) in enumerate(lst):
            on = (pi, k) in used
            m.AddHint(pres, 1 if on else 0)
            if on and k < len(cs):
                m.AddHint(a, _units(cs[k][0], res))
                if k < len(ds):
                    m.AddHint(b, _units(ds[k], res))
