"""Executor kinds: where work runs (``local``, ``ray``, ``slurm``), one registry for live runs, the service and sweeps.

An :class:`ExecutorKind` says how to build the kind's live executor (a :class:`gpuweave.live.executor.Executor`:
one worker process per placement, for ``gpuweave cluster run`` and ``gpuweave serve``), its sweep executor where
the kind can run sweep cells (a :class:`gpuweave.sweep.executors.Executor`; ``None`` if not) and whether it joins
a cluster at ``--address``. Every place that names executors reads :data:`EXECUTORS`: the ``executor.kind`` of a
live config and ``gpuweave serve --executor`` validate against it, the CLI's help lists it, ``make_executor`` of
``gpuweave.live.launch`` and of ``gpuweave.sweep.executors`` build through it.

This module sits below ``live``, ``sweep`` and ``service`` so that all of them read it; the built-in kinds are
registered in :mod:`gpuweave.executor_kinds`, a layer above ``live`` and ``sweep``, whose factories import their
executors (Ray too) only when one is built. A new executor is one module (its :class:`~gpuweave.live.executor.
Executor` subclass) plus one :func:`register_executor` call, in :mod:`gpuweave.executor_kinds` or in any module
imported before the name is looked up (a plugin's own; list it in :data:`EXECUTOR_MODULES` to have it loaded
on first lookup).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from gpuweave.errors import InputError
from gpuweave.registry import Registry

EXECUTOR_MODULES = ["gpuweave.executor_kinds"]

#: ``live(address, config, out)``: the live executor; ``config`` is the run's ``LiveConfig`` (None for the
#: service, which has no executor section of its own) and ``out`` the folder the executor may write to
LiveFactory = Callable[[str | None, Any, Path], Any]
#: ``sweep(workers, address)``: the sweep executor (``workers``: processes, or CPUs of a local cluster)
SweepFactory = Callable[[int | None, str | None], Any]


@dataclass(frozen=True, slots=True)
class ExecutorKind:
    """One registered executor kind."""

    name: str
    help: str
    live: LiveFactory
    sweep: SweepFactory | None = None
    takes_address: bool = False  # joins a running cluster at --address


EXECUTORS: Registry[ExecutorKind] = Registry("executor", EXECUTOR_MODULES, field="executor")


def register_executor(
    name: str, *, help: str, live: LiveFactory, sweep: SweepFactory | None = None, takes_address: bool = False
) -> ExecutorKind:
    """Register an executor kind under ``name`` (``EXECUTORS.unregister(name)`` removes it again)."""
    kind = ExecutorKind(name, help, live, sweep, takes_address)
    EXECUTORS.register(name, help=help, options=(), takes_address=takes_address, sweeps=sweep is not None)(kind)
    return kind


def executor_kind(name: str) -> ExecutorKind:
    """The kind registered as ``name``; an unknown name is an InputError listing the known ones."""
    return EXECUTORS.get(name).impl


def executor_names(*, sweeps: bool = False, address: bool = False) -> list[str]:
    """Registered names, sorted; ``sweeps``: only kinds that run sweep cells, ``address``: only those that join
    a cluster at ``--address``."""
    return [
        name
        for name, entry in EXECUTORS.entries().items()
        if (not sweeps or entry.impl.sweep is not None) and (not address or entry.impl.takes_address)
    ]


def spoken(names: list[str]) -> str:
    """``local, ray or slurm``: names as the CLI's help and errors write them."""
    if len(names) <= 1:
        return "".join(names) or "none"
    return f"{', '.join(names[:-1])} or {names[-1]}"


def known_executor(name: str, *, field: str = "executor") -> str:
    """``name`` if it is a registered executor (a pydantic validator's body), else the registry's InputError."""
    try:
        executor_kind(name)
    except InputError as exc:
        raise InputError(exc.message, field=field) from None
    return name
