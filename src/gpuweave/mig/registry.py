"""Registry of MIG batch planners by name: ``far``, ``miso-opt``, ``fixpart-best``, ``fixpart:LABEL``, ``exact``.

The contract is :class:`MigPlanner`: ``planner(problem, arg) -> Schedule``; ``arg`` is the text after ``:`` in
the name (e.g. the partition of ``fixpart:4-2-1``) or None. Each algorithm module registers its planner with
``@register_planner`` on the shared :class:`~gpuweave.registry.Registry` :data:`PLANNERS`; the CLI lists it and
looks names up with :func:`get_planner` -- no if/elif chains on names. Lookup is O(1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gpuweave.errors import InputError
from gpuweave.mig.problem import MigProblem
from gpuweave.mig.schedule import Schedule
from gpuweave.registry import Entry, Registry


class MigPlanner(Protocol):
    """What every MIG planner is: a batch problem (and the name's argument, if it takes one) in, a schedule out."""

    def __call__(self, problem: MigProblem, arg: str | None) -> Schedule: ...


PLANNERS: Registry[MigPlanner] = Registry(
    "MIG algorithm",
    ["gpuweave.mig.far", "gpuweave.mig.miso", "gpuweave.mig.fixpart", "gpuweave.mig.exact"],
    field="algo",
)


@dataclass(frozen=True, slots=True)
class Planner:
    """A registered planner as the callers see it."""

    name: str
    fn: MigPlanner
    help: str
    takes_arg: bool = False

    @classmethod
    def of(cls, entry: Entry[MigPlanner]) -> Planner:
        return cls(entry.name, entry.impl, entry.help, bool(entry.meta.get("takes_arg")))


def register_planner(name: str, *, help: str, takes_arg: bool = False) -> Callable[[MigPlanner], MigPlanner]:
    """Decorator: ``@register_planner("far", help=...)``; ``takes_arg`` when the name needs ``:ARG``."""
    return PLANNERS.register(name, help=help, options=(), takes_arg=takes_arg)


def planners() -> dict[str, Planner]:
    return {name: Planner.of(entry) for name, entry in PLANNERS.entries().items()}


def get_planner(spec: str) -> tuple[Planner, str | None]:
    """``"fixpart:7"`` -> (the fixpart planner, "7"); InputError naming the known planners."""
    name, _, arg = spec.strip().partition(":")
    planner = Planner.of(PLANNERS.get(name)) if name in PLANNERS else None
    if planner is None or (planner.takes_arg and not arg) or (arg and not planner.takes_arg):
        known = ", ".join(f"{p.name}:ARG" if p.takes_arg else p.name for p in planners().values())
        raise InputError(f"unknown MIG algorithm {spec!r}; known: {known}", field="algo")
    return planner, (arg or None)


def plan(problem: MigProblem, spec: str = "far") -> Schedule:
    planner, arg = get_planner(spec)
    return planner.fn(problem, arg)
