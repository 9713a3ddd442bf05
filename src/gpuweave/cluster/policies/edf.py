"""EDF: earliest due date first, non-preemptive, as ANDREAS' baseline (spec andreas.md §8).

Waiting jobs by due date ascending (ties: arrival, id; jobs without a deadline last); each gets the
cheapest configuration that meets its due date, else the fastest, on the best-fit node; a job that does
not fit is skipped. Started jobs keep their node and GPUs. Event-driven (``period`` adds ticks).
See :mod:`gpuweave.andreas.fpm`. O(W log W + W·K·N) per call for W waiting jobs.
"""

from __future__ import annotations

from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.policies.fixed_priority import FpmPolicy


@register_policy("edf")
class EdfPolicy(FpmPolicy):
    method = "edf"
