"""TEMPORARY adapter to the ClusterPolicy contract (cluster/contract.py); delete once every policy subclasses it.

On this branch the policies do not subclass ``ClusterPolicy`` yet: ``round_length`` is a class attribute, the
event opt-in is ``on_events`` and the seed goes through ``seed_rng``. The live runtime reads the contract's
members only through :func:`contract_members`, so after the merge this module shrinks to reading them directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuweave.cluster.policies import make_policy


@dataclass(frozen=True, slots=True)
class ContractMembers:
    round_length: float | None
    reacts_to_events: bool
    forks_jobs: bool


def build_policy(name: str, *, round_length: float | None, seed: int, options: dict):
    """``make_policy(name, round_length=..., seed=..., **options)`` as the contract will have it."""
    policy = make_policy(name, **options)
    if round_length is not None:
        policy.round_length = round_length
    if hasattr(policy, "seed_rng"):
        policy.seed_rng(seed)
    return policy


def contract_members(policy) -> ContractMembers:
    length = getattr(policy, "round_length", None)
    reacts = getattr(policy, "reacts_to_events", None)
    if reacts is None:
        reacts = length is None or bool(getattr(policy, "on_events", False))
    return ContractMembers(length, bool(reacts), bool(getattr(policy, "forks_jobs", False)))
