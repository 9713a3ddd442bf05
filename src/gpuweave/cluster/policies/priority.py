"""Priority Scheduling (PS): highest tardiness weight first, non-preemptive (spec andreas.md §8).

Waiting jobs by ``Job.priority`` (ANDREAS' tardiness weight ω) descending (ties: arrival, id); the same
configuration rule (cheapest on-time, else fastest), best-fit placement and skipping as ANDREAS' FIFO and
EDF. Started jobs keep their node and GPUs. See :mod:`gpuweave.andreas.fpm`.
"""

from __future__ import annotations

from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.policies.fixed_priority import FpmPolicy


@register_policy("priority")
class PriorityPolicy(FpmPolicy):
    method = "priority"
