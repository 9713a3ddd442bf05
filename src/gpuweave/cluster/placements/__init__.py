"""Placement rules: where on one GPU model a job's gang goes, as one contract with a registry.

A queue policy decides *which* job starts and on *which* GPU model; a :class:`PlacementRule` decides *which nodes*
of that model hold its GPUs, reading a scratch of free capacity (:class:`FreeCapacity`: a
:class:`~gpuweave.cluster.decision.Plan` or a :class:`~gpuweave.cluster.placement.CapacityScratch`) and returning a
:data:`~gpuweave.cluster.state.Placement` or None. The driver hands its rule to policies through
``ClusterView.placement`` (the run config's ``placement_rule``, default :data:`DEFAULT_PLACEMENT`), so every
policy that places through :func:`gpuweave.cluster.placement.place_on_model` or
:func:`~gpuweave.cluster.placement.start_on_fastest` (FIFO, SJF, YARN-CS, Hadar) composes with every rule. Gavel's
and Tiresias' adapters keep their own placement, as their peers' simulators place.

A new rule is one module with a :class:`PlacementRule` subclass decorated ``@register_placement("name")``, listed
in :data:`PLACEMENT_MODULES` (or imported before the name is looked up, as the tests do).
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
    from gpuweave.cluster.free_index import FreeIndex
    from gpuweave.cluster.state import ClusterView, JobState, Placement

PLACEMENT_MODULES = ["gpuweave.cluster.placements.packed"]
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
    def place(
        self, capacity: FreeCapacity, js: JobState, model: str, *, allow_spread: bool = True
    ) -> Placement | None:
        """Nodes of ``model`` for all of the job's GPUs within ``capacity``'s free GPUs, on which the job can run
        (its rate there is positive), or None. ``allow_spread=False``: one node or nothing."""


PLACEMENTS: Registry[type[PlacementRule]] = Registry("placement rule", PLACEMENT_MODULES, field="placement_rule")


def register_placement(name: str) -> Callable[[type[PlacementRule]], type[PlacementRule]]:
    """Class decorator: set ``cls.name`` and register the rule."""

    def deco(cls: type[PlacementRule]) -> type[PlacementRule]:
        if not (isinstance(cls, type) and issubclass(cls, PlacementRule)):
            raise TypeError(f"placement rule {name!r} must subclass PlacementRule")
        cls.name = name
        help_text = first_line(cls.__doc__) or first_line(sys.modules[cls.__module__].__doc__)
        return PLACEMENTS.register(name, help=help_text)(cls)

    return deco


def make_placement(name: str | None = None) -> PlacementRule:
    """The rule registered as ``name`` (None: the default); an unknown name is an InputError listing the known."""
    cls = PLACEMENTS.get(name or DEFAULT_PLACEMENT).impl
    try:
        return cls()
    except TypeError as exc:
        raise InputError(f"placement rule '{name}' cannot be built: {exc}", field="placement_rule") from None
