"""Cluster policies, registered by name on a :class:`~gpuweave.registry.Registry`.

A policy subclasses :class:`~gpuweave.cluster.contract.ClusterPolicy`. Register it with
``@register_policy("name")``; ``make_policy(name, round_length=..., seed=..., **options)`` builds one for a run.
Modules listed in :data:`POLICY_MODULES` are imported on first lookup. Each entry's meta holds its
``trigger`` (``event-driven`` or ``round <L> s``) for ``gpuweave policies``.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.errors import InputError
from gpuweave.registry import Registry, first_line

POLICY_MODULES = [
    "gpuweave.cluster.policies.fifo",
    "gpuweave.cluster.policies.sjf",
    "gpuweave.cluster.policies.yarn_cs",
    "gpuweave.cluster.policies.tiresias",
    "gpuweave.cluster.policies.optimus",
    "gpuweave.cluster.policies.pollux",
    "gpuweave.cluster.policies.gavel",
    "gpuweave.cluster.policies.gavel_sia",
    "gpuweave.cluster.policies.sia",
    "gpuweave.cluster.policies.hadar",
    "gpuweave.cluster.policies.hadare",
    "gpuweave.cluster.policies.andreas",
    "gpuweave.cluster.policies.edf",
    "gpuweave.cluster.policies.priority",
]

# round_length and seed come from the run config, not from policy_options: they are not listed as options.
POLICIES: Registry[type[ClusterPolicy]] = Registry("cluster policy", POLICY_MODULES, field="policy")


def trigger_of(cls: type[ClusterPolicy]) -> str:
    """How the simulator calls a policy by default: on events, or on a round grid."""
    length = cls.default_round_length
    return "event-driven" if length is None else f"round {length:g} s"


def register_policy(name: str) -> Callable[[type], type]:
    """Class decorator: set ``cls.name`` and register it (its trigger in the entry's meta)."""

    def deco(cls: type[ClusterPolicy]) -> type[ClusterPolicy]:
        if not (isinstance(cls, type) and issubclass(cls, ClusterPolicy)):
            raise TypeError(f"cluster policy {name!r} must subclass ClusterPolicy")
        cls.name = name
        help_text = first_line(cls.__doc__) or first_line(sys.modules[cls.__module__].__doc__)
        needs: dict[str, Any] = {"needs": cls.needs} if cls.needs else {}
        return POLICIES.register(
            name,
            help=help_text,
            skip_options=("round_length", "seed", "reacts_to_events"),
            trigger=trigger_of(cls),
            **needs,
        )(cls)

    return deco


def policy_names() -> list[str]:
    """The policies that run on any trace and profile store (every one but those with ``needs``: see
    :attr:`~gpuweave.cluster.contract.ClusterPolicy.needs`); ``POLICIES.names()`` lists them all."""
    return [name for name in POLICIES.names() if not POLICIES.get(name).meta.get("needs")]


NEEDS_TEXT = {
    "pollux": "Pollux's job model and elastic jobs (a simulation of Pollux's workloads: crosscheck pollux; live, "
    "every job adaptive: trace columns batch_size, max_batch_size, min_local_bsz, max_local_bsz)"
}


def check_runs_anywhere(name: str, where: str, adaptive: bool = False) -> None:
    """InputError naming the policy when it has ``needs`` (it runs only in simulations that give it them) and
    ``where`` (the live runtime, the service) cannot. ``adaptive``: every job there is adaptive, its agent measured
    live (gpuweave.live.agents), so a policy that decides on the jobs' agents alone (pollux, sia) runs."""
    if adaptive and POLICIES.get(name).impl.decides_on_agents:
        return
    needs = POLICIES.get(name).meta.get("needs")
    if needs:
        raise InputError(
            f"policy '{name}' needs {NEEDS_TEXT.get(needs, needs)}; {where} cannot give it", field="policy"
        )


def policy_class(name: str) -> type[ClusterPolicy]:
    return POLICIES.get(name).impl


def make_policy(name: str, *, round_length: float | None = None, seed: int = 0, **options: Any) -> ClusterPolicy:
    """Build policy ``name``: ``round_length`` (None = the policy's default) and ``seed`` fixed for its life."""
    cls = policy_class(name)
    try:
        return cls(round_length=round_length, seed=seed, **options)
    except (TypeError, ValueError) as exc:  # unknown keyword, or a value the policy refuses
        raise InputError(f"bad options for policy '{name}': {exc}", field="policy_options") from None
