"""Co-scheduling parallel applications into packs (Aupy, Shantharam, Benoit, Robert, Raghavan 2013).

``n`` moldable tasks share ``p`` identical processors. Tasks are grouped into *packs* of at most ``k``
tasks and ``p`` processors; the packs run one after another and the cost of a co-schedule is the sum of
the pack makespans. The package holds the model (:mod:`.model`), one module per algorithm registered by
name (:mod:`.registry`), the workloads (:mod:`.workloads`), the metrics of the paper's Section 6
(:mod:`.metrics`), a Gantt chart (:mod:`.gantt`) and a real runner with CPU affinity (:mod:`.runner`).

Typical use::

    from gpuweave.packs import solve, syn_ref, evaluate
    prof = syn_ref(65, 16, seed=0)
    sched = solve("pack-by-pack-9", prof, k=16)
    print(sched.cost, evaluate(prof, sched))
"""

from __future__ import annotations

from gpuweave.packs.metrics import Metrics, evaluate
from gpuweave.packs.model import Pack, PackSchedule, Profile
from gpuweave.packs.registry import algorithm_names, get_algorithm, solve
from gpuweave.packs.workloads import load_profile_csv, syn_ref, workload

__all__ = [
    "Metrics",
    "Pack",
    "PackSchedule",
    "Profile",
    "algorithm_names",
    "evaluate",
    "get_algorithm",
    "load_profile_csv",
    "solve",
    "syn_ref",
    "workload",
]
