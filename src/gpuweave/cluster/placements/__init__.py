"""Placement rules: where on one GPU model a job's gang goes, as one contract with a registry.

A queue policy decides *which* job starts and on *which* GPU model; a :class:`PlacementRule` decides *which nodes*
of that model hold its GPUs, reading a scratch of free capacity (:class:`FreeCapacity`: a
:class:`~gpuweave.cluster.decision.Plan` or a :class:`~gpuweave.cluster.placement.CapacityScratch`) and returning a
:data:`~gpuweave.cluster.state.Placement` or None. The driver hands its rule to policies through
``ClusterView.placement`` (the run config's ``placement_rule``, default :data:`DEFAULT_PLACEMENT`), so every
policy that places through :func:`gpuweave.cluster.placement.place_on_model` or
:func:`~gpuweave.cluster.placement.start_on_fastest` (FIFO, SJF, YARN-CS, Hadar) composes with every rule. Gavel's
and Tiresias' adapters keep their own placement, as their peers' simulators place (on shared GPUs both place
through the run's task placement: :mod:`gpuweave.cluster.sharing.ledger`).

A :class:`TaskPlacement` places one task on a cluster whose GPUs tasks may share (a fraction of one GPU, CPU and
memory per node: :mod:`gpuweave.cluster.sharing`): it scores every node that can hold the task, the highest score
wins and ties go to the node first in a seeded priority order, as in FGD's simulator. Both kinds share the one
registry; each entry's ``places`` says which kind it is, and each driver refuses the other kind by name.

A new rule is one module with a :class:`PlacementRule` or :class:`TaskPlacement` subclass decorated
``@register_placement("name")``, listed in :data:`PLACEMENT_MODULES` (or imported before the name is looked up, as
the tests do).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, ClassVar, Protocol

from gpuweave.errors import InputError
from gpuweave.registry import Registry, first_line

if TYPE_CHECKING:
    import numpy as np

    from gpuweave.cluster.free_index import FreeIndex
    from gpuweave.cluster.sharing.fragmentation import NodeFragments
    from gpuweave.cluster.sharing.state import SharedNodes, TaskRequest
    from gpuweave.cluster.state import ClusterView, JobState, Placement

PLACEMENT_MODULES = [
    "gpuweave.cluster.placements.packed",
    # tasks on shared GPUs (FGD, ATC'23, and its five baselines as FGD's simulator defines them)
    "gpuweave.cluster.placements.random_node",
    "gpuweave.cluster.placements.dot_product",
    "gpuweave.cluster.placements.gpu_clustering",
    "gpuweave.cluster.placements.gpu_packing",
    "gpuweave.cluster.placements.best_fit",
    "gpuweave.cluster.placements.fgd",
]
DEFAULT_PLACEMENT = "packed"


class FreeCapacity(Protocol):
    """A scratch of free GPUs a rule reads (a policy's plan, or a round's capacity scratch)."""

    view: ClusterView
    free: list[int]
    free_by_model: dict[str, int]

    @property
    def free_index(self) -> FreeIndex | None:
        """The book's index when ``free`` started as the book's counts (None: scan)."""

    @property
    def touched(self) -> AbstractSet[int]:
        """Nodes whose count in ``free`` may differ from the index's."""


class PlacementRule(ABC):
    """Where on one GPU model a gang goes (see module docstring). Stateless: one instance serves a whole run."""

    name: ClassVar[str] = ""

    @abstractmethod
    def place(self, capacity: FreeCapacity, js: JobState, model: str, *, allow_spread: bool = True) -> Placement | None:
        """Nodes of ``model`` for all of the job's GPUs within ``capacity``'s free GPUs, on which the job can run
        (its rate there is positive), or None. ``allow_spread=False``: one node or nothing."""


class TaskPlacement(ABC):
    """Which node (and GPUs) a task goes to on shared GPUs (see module docstring). One instance per run:
    :meth:`bind` gives it the run's nodes, workload and random generator before the first task."""

    name: ClassVar[str] = ""

    def bind(self, nodes: SharedNodes, fragments: NodeFragments, rng: np.random.Generator) -> None:
        """Remember the run's state: its nodes, the driver's fragment tracker (the workload's typical tasks and
        each node's fragment, kept current: one for the run, which FGD scores with) and its random generator."""
        self.nodes = nodes
        self.fragments = fragments
        self.rng = rng

    @abstractmethod
    def scores(self, task: TaskRequest, candidates: np.ndarray) -> np.ndarray:
        """An integer score (0..100, higher is better) per node of ``candidates`` (indices of nodes that can hold
        the task; at least two)."""

    def gpus(self, task: TaskRequest, node: int) -> tuple[int, ...]:
        """The GPU slots of ``node`` the task takes: by default the fitting GPU with the least free share for a
        fraction (lowest slot on ties), the lowest idle slots for whole GPUs (FGD's simulator's "best" choice)."""
        return self.nodes.best_fit_gpus(task, node)


PlacementKind = type[PlacementRule] | type[TaskPlacement]
PLACES_HELP = {
    "gangs": "whole-GPU gangs on one GPU model (the cluster simulator, live runs)",
    "tasks": "tasks on shared GPUs: fractions, CPU, memory (gpuweave cluster fill, crosscheck fgd)",
}

PLACEMENTS: Registry[PlacementKind] = Registry("placement rule", PLACEMENT_MODULES, field="placement_rule")


def placement_kind(cls: PlacementKind) -> str:
    """``gangs`` or ``tasks``: which contract a registered rule implements."""
    return "gangs" if issubclass(cls, PlacementRule) else "tasks"


def register_placement(name: str) -> Callable[[PlacementKind], PlacementKind]:
    """Class decorator: set ``cls.name`` and register the rule (either contract)."""

    def deco(cls: PlacementKind) -> PlacementKind:
        if not (isinstance(cls, type) and issubclass(cls, (PlacementRule, TaskPlacement))):
            raise TypeError(f"placement rule {name!r} must subclass PlacementRule or TaskPlacement")
        cls.name = name
        help_text = first_line(cls.__doc__) or first_line(sys.modules[cls.__module__].__doc__)
        return PLACEMENTS.register(name, help=help_text, places=placement_kind(cls))(cls)

    return deco


def names_placing(kind: str) -> list[str]:
    """The registered rules of one kind (``gangs`` or ``tasks``)."""
    return [name for name, entry in PLACEMENTS.entries().items() if placement_kind(entry.impl) == kind]


def _impl_of_kind(name: str, kind: str) -> PlacementKind:
    if name not in PLACEMENTS:
        known = ", ".join(names_placing(kind))
        raise InputError(f"unknown placement rule '{name}' for {kind} (known: {known})", field="placement_rule")
    cls = PLACEMENTS.get(name).impl
    if placement_kind(cls) != kind:
        raise InputError(
            f"placement '{name}' places {PLACES_HELP[placement_kind(cls)]}; here it must place {PLACES_HELP[kind]}: "
            f"one of {', '.join(names_placing(kind))}",
            field="placement_rule",
        )
    return cls


def make_placement(name: str | None = None) -> PlacementRule:
    """The rule registered as ``name`` (None: the default); an unknown name is an InputError listing the known."""
    cls = _impl_of_kind(name or DEFAULT_PLACEMENT, "gangs")
    assert issubclass(cls, PlacementRule)
    try:
        return cls()
    except TypeError as exc:
        raise InputError(f"placement rule '{name}' cannot be built: {exc}", field="placement_rule") from None


def known_placement(name: str | None) -> str | None:
    """A run config's ``placement_rule`` as given (None: the default); ValueError (a config field's error) for a
    name no rule of either kind is registered under."""
    known = names_placing("gangs") + names_placing("tasks")
    if name is not None and name not in known:
        raise ValueError(f"unknown placement rule {name!r} (known: {', '.join(known)})")
    return name


def make_run_placement(name: str | None = None) -> PlacementRule | TaskPlacement:
    """A simulation's placement (a run config's ``placement_rule``): a gang rule, or a task placement, which makes
    the run's jobs tasks on shared GPUs (:mod:`gpuweave.cluster.sharing.ledger`)."""
    if name is not None and name in PLACEMENTS and placement_kind(PLACEMENTS.get(name).impl) == "tasks":
        return make_task_placement(name)
    return make_placement(name)


def make_task_placement(name: str) -> TaskPlacement:
    """The task placement registered as ``name`` (an InputError for an unknown name or a gang rule)."""
    cls = _impl_of_kind(name, "tasks")
    assert issubclass(cls, TaskPlacement)
    return cls()
