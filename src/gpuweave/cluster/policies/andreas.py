"""ANDREAS (Filippini et al.): energy- and deadline-aware Randomized Greedy, and its FIFO baseline.

``andreas``: RG (spec andreas.md §6; :mod:`gpuweave.andreas.randomized_greedy`) re-plans every waiting and running job
at each trigger (preemption, migration and resizing allowed; GPU count chosen per job for jobs with
``attrs["moldable"]``). Options: ``seed``, ``max_it`` (1000), ``cap_iterations`` (True), ``pi_swap``,
``alpha_cfg``, ``swap_rule``, ``config_rule``, ``node_rule`` ("best_fit" | "random_beta"), ``postprocessing``
(False), ``proxy_variant`` ("code" | "paper"), ``period`` (s; None = event-driven), ``periodic_only``,
``cost_model`` ("auto" | "andreas" | "power"), ``rho`` (100).
On other papers' traces (fixed GPU counts, no deadlines, jobs larger than a node, free energy) every job
keeps its ``num_gpus``, rates come from the run's profile store, oversized jobs span nodes of one model
and zero-cost ties go to the fastest configuration (see :mod:`gpuweave.cluster.policies.andreas_adapter`).

``andreas-fifo``: the paper's FIFO baseline (spec §8). The foundation ``fifo`` policy differs from it
(fastest GPU model instead of the cheapest on-time configuration, several nodes allowed, fixed GPU count,
head-of-line blocking), so ANDREAS' FIFO is registered separately. EDF and PS are ``edf`` and ``priority``.
"""

from __future__ import annotations

from gpuweave.cluster.policies import register_policy
from gpuweave.cluster.policies.andreas_adapter import RGPolicy
from gpuweave.cluster.policies.fixed_priority import FpmPolicy


@register_policy("andreas")
class AndreasPolicy(RGPolicy):
    """ANDREAS: energy- and deadline-aware Randomized Greedy, preemptive, at arrivals/completions (or periodic)."""


@register_policy("andreas-fifo")
class AndreasFifoPolicy(FpmPolicy):
    """FIFO as ANDREAS' baseline (spec andreas.md §8): same configuration and placement rules, non-preemptive."""

    method = "fifo"
