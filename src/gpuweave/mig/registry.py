"""Registry of MIG batch planners by name: ``far``, ``miso-opt``, ``fixpart-best``, ``fixpart:LABEL``, ``exact``.

A planner is ``fn(problem, arg) -> Schedule``; ``arg`` is the text after ``:`` in the name (e.g. the
partition of ``fixpart:4-2-1``) or None. Register with :func:`register_planner`; the CLI lists the
registry and looks names up with :func:`get_planner` -- no if/elif chains on names. Lookup is O(1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from gpuweave.errors import InputError
from gpuweave.mig.problem import MigProblem
from gpuweave.mig.schedule import Schedule

PlannerFn = Callable[[MigProblem, "str | None"], Schedule]


@dataclass(frozen=True, slots=True)
class Planner:
    name: str
    fn: PlannerFn
    help: str
    takes_arg: bool = False


_PLANNERS: dict[str, Planner] = {}


def register_planner(name: str, *, help: str, takes_arg: bool = False) -> Callable[[PlannerFn], PlannerFn]:
    def deco(fn: PlannerFn) -> PlannerFn:
        if name in _PLANNERS and _PLANNERS[name].fn is not fn:
            raise RuntimeError(f"MIG planner {name!r} registered twice")
        _PLANNERS[name] = Planner(name, fn, help, takes_arg)
        return fn

    return deco


def planners() -> dict[str, Planner]:
    return dict(_PLANNERS)


def get_planner(spec: str) -> tuple[Planner, str | None]:
    """``"fixpart:7"`` -> (the fixpart planner, "7"); InputError naming the known planners."""
    name, _, arg = spec.strip().partition(":")
    planner = _PLANNERS.get(name)
    if planner is None or (planner.takes_arg and not arg) or (arg and not planner.takes_arg):
        known = ", ".join(f"{p.name}:ARG" if p.takes_arg else p.name for p in _PLANNERS.values())
        raise InputError(f"unknown MIG algorithm {spec!r}; known: {known}", field="algo")
    return planner, (arg or None)


def plan(problem: MigProblem, spec: str = "far") -> Schedule:
    planner, arg = get_planner(spec)
    return planner.fn(problem, arg)


@register_planner("far", help="FAR: family of allocations, repartitioning tree, moves and swaps (the paper's algorithm)")
def _far(problem: MigProblem, arg: str | None) -> Schedule:
    from gpuweave.mig.far import far

    return far(problem).schedule


@register_planner("miso-opt", help="MISO-opt: FIFO windows, best-speedup partition per window (no reconfiguration cost)")
def _miso(problem: MigProblem, arg: str | None) -> Schedule:
    from gpuweave.mig.miso import miso_opt

    return miso_opt(problem)


@register_planner("miso-opt-charged", help="MISO-opt with the Table 1 reconfiguration times charged (spec 7.13 flag)")
def _miso_charged(problem: MigProblem, arg: str | None) -> Schedule:
    from gpuweave.mig.miso import miso_opt

    sched = miso_opt(problem, charge_reconfig=True)
    sched.algo = "miso-opt-charged"
    return sched


@register_planner("fixpart", help="FixPart(P): static partition P, e.g. fixpart:1-1-1-1-1-1-1, fixpart:7, fixpart:4-2-1", takes_arg=True)
def _fixpart(problem: MigProblem, arg: str | None) -> Schedule:
    from gpuweave.mig.fixpart import fixpart

    return fixpart(problem, arg or "")


@register_planner("fixpart-best", help="FixPartBest: the best static partition")
def _fixpart_best(problem: MigProblem, arg: str | None) -> Schedule:
    from gpuweave.mig.fixpart import fixpart_best

    return fixpart_best(problem)


@register_planner("exact", help="exact optimum with CP-SAT (small batches, n <= 14; 60 s limit)")
def _exact(problem: MigProblem, arg: str | None) -> Schedule:
    from gpuweave.mig.exact import exact

    return exact(problem).schedule
