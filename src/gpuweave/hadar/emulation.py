"""Physical-cluster emulation: HadarE vs Hadar vs Gavel on 5 single-GPU nodes (spec hadar.md §3.7, §6).

Problem (paper §VII): train a batch of jobs (a mix M-1...M-12 of Table III models, all at t = 0) on the
AWS (V100, 2 K80, 2 T4) or lab (Titan RTX, T4, T400, RTX 3090, RTX A2000) cluster in fixed slots of
``T_S`` seconds, and measure CRU, TTD and JCT. Round model of spec §3.7, for every scheduler:

1. Assignment. HadarE: every job is forked into n copies (copy ids ``max_job_count * i + parent``,
   :mod:`gpuweave.hadar.forking`) and Hadar's DP (:mod:`gpuweave.hadar.dp`) puts at most one copy on
   each node (single-GPU nodes; a node is its own GPU "type"), scored with the current estimates
   ``X_hat``. Hadar: the same DP over unforked ``W = 1`` jobs. Gavel: the LAS LP over (job, node) and its
   priority mechanism (:mod:`gpuweave.baselines.gavel`), nodes visited fastest-estimate first.
2. Split (HadarE): a job's remaining steps are split over its assigned nodes in proportion to ``X_hat``,
   summing exactly (remainder to the fastest node).
3. Execution: node i runs ``min(s_i, X_i (T_S - o_i))`` steps at its true rate ``X_i``; ``o_i`` = 17 s for
   HadarE (10 load + 5 tracker + 2 consolidation, every round), 15 s for Hadar/Gavel when the node's job
   changes and 5 s when it stays.
4. Busy time = executed steps / ``X_i`` (overhead counts as idle; the overhead-as-busy variant is
   reported too). A node that finishes its share early idles until the slot ends.
5. Aggregation: remaining steps drop by the executed total; ``X_hat <- X`` for each observed pair.
6. A job completes at the instant its last share finishes (not at the slot end).

Variants (``variant``): ``spec`` (default; the round model above, spec §3.7), ``beta`` (the paper's last-round
rule, §VI-A: "the last round may involve beta nodes ... those beta fastest nodes": after the DP, each HadarE
job keeps only its fastest assigned nodes, by the estimate, until their slot capacity covers its remaining
steps, and the freed nodes go to copies of jobs not yet covered; under the spec model the DP spreads a small
remainder over all n nodes, which then idle most of the slot) and ``beta-backfill`` (``beta`` plus
:meth:`gpuweave.hadar.dp.HadarDP.backfill` for Hadar and HadarE: jobs the DP skipped get free nodes when their
payoff is positive; otherwise Hadar leaves a K80 idle while a job waits because a later job was worth more on
the T4 the earlier one wanted). ``hadar_variant``: ``replan`` (default) or ``sticky`` (paper §IV-B: running
jobs keep their node; Fig. 6(a)'s Hadar keeps J3 on one node for four rounds while faster ones idle). With
``beta`` a node can idle before the last round when the estimates say the assigned nodes suffice, so spec
A9's corollary is tested on ``spec``. ``utility``: ``raw`` (default, spec A8) or ``normalized`` for the DP's
payoffs (raw iterations/s make a high-step-rate model's copies outbid every other job's, so HadarE runs jobs
one after another). :func:`forking_speedup_bound` says how much any forking can gain on an instance.

Throughputs: ``X_hat`` from Eq. 10 with the A13 constants (``pmi`` form selectable), true ``X`` = Eq. 10 x
U[0.7, 1.3] per (model, node), seeded. Jobs are sized by a V100 reference duration (data/physical.toml).
CRU = busy / (rounds x T_S x n) over full slots (and to the TTD instant as a variant).

Driver: one ROUND event per slot on :class:`gpuweave.engine.loop.EventLoop`; the schedulers are a table
(:data:`SCHEDULERS`: name -> assignment and whether it forks). Complexity: per round one DP over <= n x jobs
copies (HadarE) and O(n) bookkeeping.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable

import numpy as np

from gpuweave.baselines.gavel import gavel_priorities, gavel_round, max_min_fairness_lp
from gpuweave.engine.loop import EventLoop
from gpuweave.errors import InputError
from gpuweave.hadar.dp import hadar_round
from gpuweave.hadar.forking import copy_count, copy_id, parent_of, split_steps
from gpuweave.hadar.problem import QueuedJob, RoundProblem
from gpuweave.highs_models import solve_lp

VARIANTS = ("spec", "beta", "beta-backfill")
HADAR_VARIANTS = ("replan", "sticky")
PMI_FORMS = ("tflops_over_sqrt_vram", "sqrt_tflops_over_vram", "sqrt_tflops_times_vram")


def load_physical() -> dict:
    return tomllib.loads(resources.files("gpuweave.hadar").joinpath("data", "physical.toml").read_text())


def pmi(tflops: float, vram: float, form: str = "tflops_over_sqrt_vram") -> float:
    if form == "tflops_over_sqrt_vram":
        return tflops / math.sqrt(vram)
    if form == "sqrt_tflops_over_vram":
        return math.sqrt(tflops / vram)
    if form == "sqrt_tflops_times_vram":
        return math.sqrt(tflops * vram)
    raise InputError(f"unknown PMI form '{form}' (known: {', '.join(PMI_FORMS)})", field="pmi")


def eq10(data: dict, model: str, node: dict, form: str) -> float:
    """Eq. 10: PMI x batch x pcie_scaling / (model_weight x dataset_size) (relative units)."""
    gpus = data["gpu"]
    if node["gpu"] not in gpus:
        raise InputError(
            f"GPU '{node['gpu']}' of node '{node['name']}' has no entry in the throughput table", field="gpu"
        )
    g = gpus[node["gpu"]]
    m = data["model"][model]
    c = data["eq10"]
    return (
        pmi(g["tflops"], g["vram_gb"], form)
        * m["batch"]
        * c["pcie_scaling"][node["pcie"]]
        / (c["model_weight"][m["model_weight"]] * c["dataset_size"][m["dataset_size"]])
    )


@dataclass
class EmulationResult:
    scheduler: str
    ttd: float
    jct: list[float]
    cru: float  # full slots
    cru_to_ttd: float
    cru_overhead_busy: float
    round_cru: list[float]
    rounds: int
    assignments: list[dict[int, int]] = field(default_factory=list)  # per round: node -> parent job index

    @property
    def mean_jct(self) -> float:
        return float(np.mean(self.jct))


def rate_tables(data: dict, cluster: str, mix: list[str], seed: int, form: str):
    if cluster not in data["cluster"]:
        raise InputError(f"unknown emulated cluster '{cluster}' (known: {', '.join(data['cluster'])})", field="cluster")
    nodes = data["cluster"][cluster]["nodes"]
    for m in mix:
        if m not in data["model"]:
            raise InputError(f"model '{m}' has no throughput entry (known: {', '.join(data['model'])})", field="mix")
    rng = np.random.default_rng(seed)
    lo, hi = data["eq10"]["noise"]
    models = sorted(set(mix))
    est = {m: np.array([eq10(data, m, nd, form) for nd in nodes]) for m in models}
    true = {m: est[m] * rng.uniform(lo, hi, size=len(nodes)) for m in models}
    # Size: steps = reference seconds x true rate on the reference V100 of the AWS cluster (same draw order).
    aws = data["cluster"]["aws"]["nodes"]
    ref = next(nd for nd in aws if nd["gpu"] == "V100")
    rng_ref = np.random.default_rng(seed + 7919)
    steps = {
        m: int(round(data["model"][m]["reference_s"] * eq10(data, m, ref, form) * rng_ref.uniform(lo, hi)))
        for m in models
    }
    return nodes, est, true, steps


@dataclass
class RoundInputs:
    """What an emulated scheduler sees at the start of round ``k``: the active jobs, the estimates ``Xhat``
    (J x n), remaining and total steps, the previous round's job per node (-1 = idle) and the options."""

    active: list[int]
    n: int
    Xhat: np.ndarray
    rem: np.ndarray
    total: np.ndarray
    slot: float
    k: int
    last_job: list[int]
    ov: dict
    max_job_count: int
    gavel_state: dict | None = None
    variant: str = "spec"
    hadar_variant: str = "replan"
    utility: str = "raw"


@dataclass(frozen=True)
class EmulatedScheduler:
    """One scheduler of the emulation: its round assignment (node -> parent job) and whether it forks."""

    assign: Callable[[RoundInputs], dict[int, int]]
    forks: bool


@dataclass
class _Run:
    """The emulation's state across rounds."""

    X: np.ndarray  # J x n true steps/s
    Xhat: np.ndarray  # estimates, replaced once observed
    total: np.ndarray
    rem: np.ndarray
    done_at: np.ndarray
    last_job: list[int]
    gavel_state: dict
    busy_total: float = 0.0
    busy_overhead: float = 0.0
    round_cru: list[float] = field(default_factory=list)
    assignments: list[dict[int, int]] = field(default_factory=list)
    rounds: int = 0


ROUND = 0  # the emulation's one event kind: the start of a slot


def emulate(
    scheduler: str,
    cluster: str = "aws",
    mix: str | list[str] = "M-5",
    slot: float = 360.0,
    seed: int = 0,
    pmi_form: str = "tflops_over_sqrt_vram",
    max_rounds: int = 100_000,
    variant: str = "spec",
    hadar_variant: str = "replan",
    utility: str = "raw",
) -> EmulationResult:
    _check_options(scheduler, variant, hadar_variant, utility)
    sched = SCHEDULERS[scheduler]
    data = load_physical()
    if isinstance(mix, str):
        if mix not in data["mix"]:
            raise InputError(f"unknown mix '{mix}' (known: {', '.join(data['mix'])})", field="mix")
        mix = list(data["mix"][mix])
    nodes, est, true, steps = rate_tables(data, cluster, mix, seed, pmi_form)
    n = len(nodes)
    J = len(mix)
    total = np.array([steps[m] for m in mix], dtype=float)
    run = _Run(
        X=np.array([true[m] for m in mix]),
        Xhat=np.array([est[m] for m in mix]),
        total=total,
        rem=total.copy(),
        done_at=np.full(J, np.nan),
        last_job=[-1] * n,
        gavel_state={"received": np.zeros((J, n)), "type_total": np.zeros(n), "alloc": None, "key": None},
    )
    ov = data["overheads"]

    def on_round(t: float, k: int) -> None:
        if k >= max_rounds:
            raise RuntimeError("emulation did not finish")
        active = [j for j in range(J) if np.isnan(run.done_at[j])]
        inputs = RoundInputs(
            active,
            n,
            run.Xhat,
            run.rem,
            run.total,
            slot,
            k,
            run.last_job,
            ov,
            max(J, 1),
            run.gavel_state,
            variant,
            hadar_variant,
            utility,
        )
        _execute_round(run, sched.forks, sched.assign(inputs), t, slot, ov)
        run.rounds = k + 1
        if np.isnan(run.done_at).any():
            loop.push((k + 1) * slot, ROUND, k + 1)

    loop = EventLoop()
    loop.on(ROUND, on_round)
    if J:
        loop.push(0.0, ROUND, 0)
    loop.run()
    k = run.rounds
    ttd = float(np.nanmax(run.done_at))
    return EmulationResult(
        scheduler=scheduler,
        ttd=ttd,
        jct=[float(x) for x in run.done_at],
        cru=run.busy_total / (k * slot * n),
        cru_to_ttd=run.busy_total / (ttd * n),
        cru_overhead_busy=run.busy_overhead / (k * slot * n),
        round_cru=run.round_cru,
        rounds=k,
        assignments=run.assignments,
    )


def _check_options(scheduler: str, variant: str, hadar_variant: str, utility: str) -> None:
    if variant not in VARIANTS:
        raise InputError(f"unknown emulation variant '{variant}' (known: {', '.join(VARIANTS)})", field="variant")
    if hadar_variant not in HADAR_VARIANTS:
        raise InputError(
            f"unknown Hadar variant '{hadar_variant}' (known: {', '.join(HADAR_VARIANTS)})", field="hadar_variant"
        )
    if utility not in ("raw", "normalized"):
        raise InputError(f"unknown utility '{utility}' (known: raw, normalized)", field="utility")
    if scheduler not in SCHEDULERS:
        raise InputError(f"unknown scheduler '{scheduler}' (known: {', '.join(SCHEDULERS)})", field="scheduler")


def _execute_round(run: _Run, forks: bool, assign: dict[int, int], t: float, slot: float, ov: dict) -> None:
    """Steps 2-6 of the round model: split, execute at the true rates, aggregate, complete."""
    X, Xhat, rem, last_job = run.X, run.Xhat, run.rem, run.last_job
    run.assignments.append(dict(assign))
    busy_round = 0.0
    by_job: dict[int, list[int]] = {}
    for i, j in assign.items():
        by_job.setdefault(j, []).append(i)
    for j, where in by_job.items():
        if forks:
            share = split_steps(int(math.ceil(rem[j] - 1e-9)), {i: float(Xhat[j, i]) for i in where})
            o = ov["load"] + ov["comm"] + ov["consolidate"]
            overhead = {i: o for i in where}
        else:
            share = {where[0]: rem[j]}
            i = where[0]
            overhead = {i: ov["load"] + ov["comm"] if last_job[i] != j else ov["comm"]}
        executed = {}
        finish = 0.0
        for i in where:
            cap_steps = X[j, i] * max(slot - overhead[i], 0.0)
            e = min(share[i], math.floor(cap_steps) if forks else cap_steps)
            executed[i] = e
            busy = e / X[j, i]
            busy_round += busy
            run.busy_overhead += min(slot, busy + overhead[i])
            finish = max(finish, overhead[i] + busy)
            Xhat[j, i] = X[j, i]
        rem[j] -= sum(executed.values())
        if rem[j] < 1.0 if forks else rem[j] <= 1e-6 * run.total[j]:
            rem[j] = 0.0
            run.done_at[j] = t + finish
    for i in range(len(last_job)):
        last_job[i] = assign.get(i, -1)
    run.busy_total += busy_round
    run.round_cru.append(busy_round / (slot * len(last_job)))


def _gavel_assign(r: RoundInputs) -> dict[int, int]:
    """Gavel: the LAS LP over (job, node), re-solved when the active set changes, and its priority pass."""
    active, Xhat, n, slot, st = r.active, r.Xhat, r.n, r.slot, r.gavel_state
    assert st is not None, "a Gavel round needs the Gavel state"
    # Account the previous round's time.
    for i, j in enumerate(r.last_job):
        if j >= 0:
            st["received"][j, i] += slot
            st["type_total"][i] += slot
    key = tuple(active)
    if key != st["key"]:
        T = Xhat[active]
        st["alloc"] = max_min_fairness_lp(T, np.ones(len(active)), np.ones(n))
        st["key"] = key
    alloc = st["alloc"]
    received = st["received"][active]
    feasible = Xhat[active] > 0
    prio = gavel_priorities(alloc, received, st["type_total"], feasible)
    tot = st["type_total"].sum()
    deficit = alloc - (received / tot if tot > 0 else 0.0)
    order = list(np.argsort(-Xhat[active].mean(axis=0), kind="stable"))
    chosen = gavel_round(prio, alloc, deficit, [1] * len(active), [1] * n, [int(r) for r in order])
    return {r: active[m] for m, r in chosen.items()}


def _hadar_assign(r: RoundInputs) -> dict[int, int]:
    """Hadar: the DP over unforked single-GPU jobs (``sticky``: running jobs keep their node)."""
    prev_node = {j: i for i, j in enumerate(r.last_job) if j >= 0}
    running = [j for j in r.active if j in prev_node]
    waiting = [j for j in r.active if j not in prev_node]
    backfill = r.variant == "beta-backfill"
    if r.hadar_variant == "sticky":
        # Paper §IV-B incremental mode (spec §2.11): running jobs keep their nodes; only waiting jobs are placed.
        kept = {prev_node[j]: j for j in running}
        free = np.array([0 if i in kept else 1 for i in range(r.n)], dtype=np.int64)
        placed = (
            _dp_assign(r, False, waiting, {j: 1 for j in waiting}, free, prev_node, backfill)
            if free.any() and waiting
            else {}
        )
        return {**kept, **placed}
    order = running + waiting
    return _dp_assign(r, False, order, {j: 1 for j in order}, np.ones(r.n, dtype=np.int64), prev_node, backfill)


def _hadare_assign(r: RoundInputs) -> dict[int, int]:
    """HadarE: the DP over n copies of every job (one per node), then ``beta``'s last-round rule."""
    n, Xhat, rem = r.n, r.Xhat, r.rem
    prev_node = {j: i for i, j in enumerate(r.last_job) if j >= 0}
    order = [j for j in r.active if j in prev_node] + [j for j in r.active if j not in prev_node]
    copies = copy_count(1, 1, n)  # single-GPU nodes: one copy per node
    backfill = r.variant == "beta-backfill"
    out = _dp_assign(r, True, order, {j: copies for j in order}, np.ones(n, dtype=np.int64), prev_node, backfill)
    if not r.variant.startswith("beta"):
        return out
    # The paper's last-round rule (§VI-A, spec §3.1): a job whose remaining steps fit in fewer nodes runs on
    # "those beta fastest nodes" only. Keep, per job, the fastest assigned nodes (by the estimate) until their
    # slot capacity covers the remaining steps, free the others, and give the freed nodes to copies of jobs
    # that are not yet covered (the same DP on the freed nodes); repeat until nothing changes.
    usable = r.slot - (r.ov["load"] + r.ov["comm"] + r.ov["consolidate"])
    for _ in range(n):
        by_job: dict[int, list[int]] = {}
        for i, j in out.items():
            by_job.setdefault(j, []).append(i)
        covered = set()
        released = []
        for j, where in by_job.items():
            where.sort(key=lambda i: -Xhat[j, i])
            cap = 0.0
            for pos, i in enumerate(where):
                cap += Xhat[j, i] * usable
                if cap >= rem[j]:
                    covered.add(j)
                    released += where[pos + 1 :]
                    break
        for i in released:
            del out[i]
        free = np.array([0 if i in out else 1 for i in range(n)], dtype=np.int64)
        want = [j for j in order if j not in covered]
        if not released or not free.any() or not want:
            break
        extra = _dp_assign(r, True, want, {j: int(free.sum()) for j in want}, free, prev_node, backfill)
        if not extra:
            break
        out.update(extra)
    return out


def _dp_assign(r: RoundInputs, forked: bool, order, copies, free, prev_node, backfill: bool) -> dict[int, int]:
    """One Hadar DP over copies of the jobs in ``order`` on the nodes with ``free == 1``: node -> parent.
    Forked copies each carry 1/n of the job's steps; an unforked job may keep its previous node."""
    n = len(free)
    Xhat, max_job_count = r.Xhat, r.max_job_count
    share = n if forked else 1
    queued = []
    # Q order: running jobs first, then waiting ones (spec A5); copies ordered by copy id, i.e. every job's
    # first copy before any second copy (ids max_job_count * i + parent grow with i).
    for c in range(1, max(copies.values(), default=0) + 1):
        for j in order:
            if c > copies[j]:
                continue
            prev = None
            if not forked and j in prev_node and free[prev_node[j]]:
                prev = ((prev_node[j], 1),)
            queued.append(
                QueuedJob(
                    key=copy_id(j, c, max_job_count),
                    num_gpus=1,
                    cons=Xhat[j].copy(),
                    uncons=Xhat[j].copy(),
                    remaining=r.rem[j] / share,
                    total_work=r.total[j] / share,
                    arrival_slot=0,
                    prev=prev,
                    started=True,
                    packed_only=True,
                )
            )
    if not queued:
        return {}
    problem = RoundProblem(
        server_type=np.arange(n),
        capacity=np.ones(n, dtype=np.int64),
        free=free,
        num_types=n,
        jobs=queued,
        round_length=r.slot,
        now_slot=r.k,
        restart_delay=r.ov["load"],
        utility=r.utility,
    )
    plan = hadar_round(problem, backfill=backfill).plan
    return {alloc[0][0]: parent_of(cid, max_job_count)[0] for cid, alloc in plan.items()}


# The emulated schedulers by name (``emulate(scheduler=...)``); HadarE forks, the others do not.
SCHEDULERS: dict[str, EmulatedScheduler] = {
    "hadare": EmulatedScheduler(_hadare_assign, forks=True),
    "hadar": EmulatedScheduler(_hadar_assign, forks=False),
    "gavel": EmulatedScheduler(_gavel_assign, forks=False),
}


def fluid_makespan(rates: np.ndarray, work: np.ndarray, forked: bool) -> float:
    """Shortest makespan of jobs with ``work`` steps on single-GPU nodes (``rates[j, i]`` steps/s of job j on node
    i), preemption and migration free, overheads and slot boundaries ignored (an LP, Lawler-Labetoulle style):
    ``t_ji`` seconds of job j on node i, ``sum_i t_ji X_ji = work_j``, every node busy at most C, and unforked
    (``forked=False``) every job at most C in total, since one copy runs on one node at a time."""
    J, n = rates.shape
    C = J * n  # column of the makespan
    ri, rc, rv, lo, hi = [], [], [], [], []
    row = 0
    for j in range(J):  # work
        for i in range(n):
            ri.append(row)
            rc.append(j * n + i)
            rv.append(float(rates[j, i]))
        lo.append(float(work[j]))
        hi.append(float(work[j]))
        row += 1
    groups = [[j * n + i for j in range(J)] for i in range(n)]
    if not forked:
        groups += [[j * n + i for i in range(n)] for j in range(J)]
    for cols in groups:  # node time (and job time) <= C
        for c in cols:
            ri.append(row)
            rc.append(c)
            rv.append(1.0)
        ri.append(row)
        rc.append(C)
        rv.append(-1.0)
        lo.append(-np.inf)
        hi.append(0.0)
        row += 1
    cost = np.zeros(C + 1)
    cost[C] = 1.0
    sol = solve_lp(cost, np.array(ri), np.array(rc), np.array(rv), lo, hi)
    if sol is None:
        raise InputError("a job has no node with a positive rate", field="mix")
    return sol[0]


def forking_speedup_bound(cluster: str, mix: str, seed: int = 0, pmi_form: str = "tflops_over_sqrt_vram") -> float:
    """The most any forking scheduler can gain in TTD over the best unforked one on this instance (true rates):
    ``fluid_makespan(unforked) / fluid_makespan(forked)``. Spec §8 C3 asks HadarE/Hadar >= 1.30; where this
    bound is lower, only a Hadar far from the unforked optimum can show it."""
    data = load_physical()
    if mix not in data["mix"]:
        raise InputError(f"unknown mix '{mix}' (known: {', '.join(data['mix'])})", field="mix")
    names = list(data["mix"][mix])
    _nodes, _est, true, steps = rate_tables(data, cluster, names, seed, pmi_form)
    rates = np.array([true[m] for m in names])
    work = np.array([steps[m] for m in names], dtype=float)
    return fluid_makespan(rates, work, forked=False) / fluid_makespan(rates, work, forked=True)
