"""Run any registered cluster policy on an ANDREAS-style workload and charge ANDREAS' real cost.

Problem: the §7 simulation loop of the spec, expressed through the shared cluster simulator
(:class:`gpuweave.cluster.simulator.Simulator`): event-driven or periodic triggers are the policy's
``round_length``/``reacts_to_events``; progress is continuous (work in epochs, rate = 1/time per epoch, which is
the spec's proportional remaining-time update); migration and restart cost nothing by default
(``restart_delay = 0``, the paper's simulator ignores reconfiguration, A11); the real cost of §3
(energy at GPUs in use + weighted tardiness) is computed from the run's allocation records by
:func:`real_cost`, the same way for every policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpuweave.andreas.catalog import CostCatalog, cost_catalog_for, load_profile_table
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.policies.andreas_instance import AndreasPolicyBase
from gpuweave.cluster.run import gpu_power
from gpuweave.cluster.simulator import SimulationRecords, Simulator


# ----------------------------------------------------------------------------------------------- real cost
@dataclass(slots=True)
class RealCost:
    """Ex-post cost of a simulated run (spec §3), in EUR; times in seconds."""

    energy: float
    tardiness: float
    late_jobs: int
    makespan: float  # "simulation time": clock when the last job completes
    job_energy: dict[str, float] = field(default_factory=dict)
    node_energy: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.energy + self.tardiness


def real_cost(records, nodes, costs: CostCatalog) -> RealCost:
    """Energy (node cost at GPUs in use, idle nodes free) and weighted tardiness of a simulator run.

    ``records`` are the simulator's :class:`~gpuweave.cluster.simulator.SimulationRecords`; ``nodes`` the
    expanded nodes.
    Jobs without a deadline contribute no tardiness; ``Job.priority`` is the weight ω_j [€/s].
    """
    N = len(nodes)
    tables = [costs.table(nd.gpu_model, nd.num_gpus) for nd in nodes]
    holding: list[dict[str, int]] = [dict() for _ in range(N)]
    used = [0] * N
    last = [records.start_time] * N
    node_energy = [0.0] * N
    job_energy: dict[str, float] = {}

    def close(node: int, now: float) -> None:
        dt = now - last[node]
        if dt > 0 and used[node] > 0:
            e = tables[node][used[node]] * dt / 3600.0
            node_energy[node] += e
            u = used[node]
            for jid, g in holding[node].items():
                job_energy[jid] = job_energy.get(jid, 0.0) + e * g / u
        last[node] = now

    for ch in records.allocations:
        close(ch.node, ch.time)
        old = holding[ch.node].pop(ch.job_id, 0)
        if ch.gpus > 0:
            holding[ch.node][ch.job_id] = ch.gpus
        used[ch.node] += ch.gpus - old
    for node in range(N):
        close(node, records.end_time)
    tard = 0.0
    late = 0
    ends = []
    for js in records.jobs:
        if js.end is None:
            continue
        ends.append(js.end)
        d = js.job.deadline
        if d is not None and js.end > d + 1e-7:
            tard += float(js.job.priority) * (js.end - d)
            late += 1
    return RealCost(
        energy=float(sum(node_energy)),
        tardiness=tard,
        late_jobs=late,
        makespan=max(ends) if ends else 0.0,
        job_energy=job_energy,
        node_energy={nd.name: e for nd, e in zip(nodes, node_energy)},
    )


@dataclass(slots=True)
class RunResult:
    policy: str
    real: RealCost
    records: SimulationRecords
    calls: list = field(default_factory=list)
    policy_obj: object = None

    @property
    def opt_times(self) -> np.ndarray:
        return np.array([c.opt_seconds for c in self.calls], dtype=float)

    def row(self) -> dict[str, object]:
        t = self.opt_times
        return {
            "policy": self.policy,
            "energy_eur": self.real.energy,
            "tardiness_eur": self.real.tardiness,
            "total_eur": self.real.total,
            "late_jobs": self.real.late_jobs,
            "makespan_h": self.real.makespan / 3600.0,
            "calls": len(self.calls),
            "opt_ms_mean": float(t.mean() * 1e3) if t.size else float("nan"),
        }


def run_policy(
    nodes,
    jobs,
    policy: str | ClusterPolicy,
    *,
    profiles=None,
    costs: CostCatalog | None = None,
    restart_delay: float = 0.0,
    **options,
) -> RunResult:
    """Simulate ``jobs`` on ``nodes`` under ``policy`` (a registered name with ``options``, or an instance).

    An ANDREAS policy built here from its name records every call (``RunResult.calls``: the optimizer time per
    call, the ARMIDA trace); an instance passed in records only if it was made with ``record=True``."""
    if isinstance(policy, str):
        pol = make_policy(policy, **options)
        if isinstance(pol, AndreasPolicyBase):
            pol.record = True
    else:
        pol = policy
    profiles = profiles if profiles is not None else load_profile_table().profile_store()
    sim = Simulator(nodes, jobs, pol, profiles, gpu_power(nodes), restart_delay=restart_delay, record_segments=False)
    rec = sim.run()
    costs = costs or cost_catalog_for(nodes)
    calls = list(pol.calls) if isinstance(pol, AndreasPolicyBase) else []
    return RunResult(pol.name or str(policy), real_cost(rec, nodes, costs), rec, calls, pol)
