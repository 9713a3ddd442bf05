"""Run any registered cluster policy on an ANDREAS-style workload and charge ANDREAS' real cost.

Problem: the §7 simulation loop of the spec, expressed through the shared cluster simulator
(:class:`gpuweave.cluster.simulator.Simulator`): event-driven or periodic triggers are the policy's
``round_length``/``on_events``; progress is continuous (work in epochs, rate = 1/time per epoch, which is
the spec's proportional remaining-time update); migration and restart cost nothing by default
(``restart_delay = 0``, the paper's simulator ignores reconfiguration, A11); the real cost of §3
(energy at GPUs in use + weighted tardiness) is computed from the run's allocation records by
:func:`gpuweave.andreas.cost.real_cost`, the same way for every policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpuweave.andreas.catalog import CostCatalog, cost_catalog_for, load_profile_table
from gpuweave.andreas.cost import RealCost, real_cost


@dataclass(slots=True)
class RunResult:
    policy: str
    real: RealCost
    records: object
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


def gpu_power(nodes) -> dict[str, tuple[float, float]]:
    from gpuweave.hardware.catalog import get_gpu

    out = {}
    for nd in nodes:
        g = get_gpu(nd.gpu_model)
        out[nd.gpu_model] = (g.power_idle_w, g.power_max_w)
    return out


def run_policy(
    nodes,
    jobs,
    policy: str | object,
    *,
    profiles=None,
    costs: CostCatalog | None = None,
    restart_delay: float = 0.0,
    **options,
) -> RunResult:
    """Simulate ``jobs`` on ``nodes`` under ``policy`` (a registered name with ``options``, or an instance)."""
    from gpuweave.cluster.policies import make_policy
    from gpuweave.cluster.simulator import Simulator

    pol = make_policy(policy, **options) if isinstance(policy, str) else policy
    profiles = profiles if profiles is not None else load_profile_table().profile_store()
    sim = Simulator(nodes, jobs, pol, profiles, gpu_power(nodes), restart_delay=restart_delay, record_segments=False)
    rec = sim.run()
    costs = costs or cost_catalog_for(nodes)
    return RunResult(getattr(pol, "name", str(policy)), real_cost(rec, nodes, costs), rec, list(getattr(pol, "calls", [])), pol)
