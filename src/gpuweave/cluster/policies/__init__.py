"""Cluster policies, registered by name.

A policy is a class with a ``name``, an optional ``round_length`` (seconds; None = event-driven) and
``schedule(view) -> Decision``. Register it with ``@register_policy("name")``; ``make_policy(name, **options)``
builds one for a run. Modules listed in :data:`POLICY_MODULES` are imported on first lookup.
"""

from __future__ import annotations

from typing import Callable

from gpuweave.errors import InputError
from gpuweave.plugins import import_if_present

POLICY_MODULES = [
    "gpuweave.cluster.policies.fifo",
    "gpuweave.cluster.policies.sjf",
    "gpuweave.cluster.policies.yarn_cs",
    "gpuweave.cluster.policies.tiresias",
    "gpuweave.cluster.policies.gavel",
    "gpuweave.cluster.policies.hadar",
    "gpuweave.cluster.policies.hadare",
    "gpuweave.cluster.policies.andreas",
    "gpuweave.cluster.policies.edf", "gpuweave.cluster.policies.priority",
]

_REGISTRY: dict[str, type] = {}


def register_policy(name: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise RuntimeError(f"cluster policy {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def _load() -> None:
    for module in POLICY_MODULES:
        import_if_present(module)


def policy_names() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def policy_class(name: str) -> type:
    _load()
    if name not in _REGISTRY:
        raise InputError(f"unknown cluster policy '{name}' (known: {', '.join(sorted(_REGISTRY))})", field="policy")
    return _REGISTRY[name]


def make_policy(name: str, **options):
    cls = policy_class(name)
    try:
        return cls(**options)
    except (TypeError, ValueError) as exc:  # unknown keyword, or a value the policy refuses
        raise InputError(f"bad options for policy '{name}': {exc}", field="policy_options") from None
