"""MIG geometry: instance placements, valid partitions and the repartitioning tree.

Problem. A MIG-capable GPU is cut into identical slices S_0..S_{k-1}. An *instance* (a
:class:`Placement`) is a run of consecutive slices that the hardware allows at a given start; while
it exists it blocks its *occupancy* set, which may be larger than its own slices (on A100-class GPUs
the 3-slice instance at S_0 also blocks S_3). A *partition* is a set of instances that can coexist,
i.e. whose occupancies are pairwise disjoint. This module derives, from the placements listed in the
GPU catalog (``gpus.toml``), everything a MIG scheduler needs:

* :func:`partitions` -- all *maximal* partitions (no further instance fits), in the numbering of the
  FAR paper's Fig. 1 (5 on A30, 19 on A100/H100);
* :func:`is_valid_partition` -- whether a set of instances can coexist;
* :func:`repartition_tree` -- FAR's repartitioning tree (Fig. 4): each node's children are the
  largest instances it can be split into, left/lower slices first.

Source: J. Villarrubia, L. Costero, F. D. Igual, K. Olcoz, "Leveraging Multi-Instance GPUs through
moldable task scheduling", JPDC 204 (2025) 105128, Sec. 1.2 (MIG concepts, Fig. 1), Sec. 2.1
(Table 1, reconfiguration cost) and Sec. 3.2 (repartitioning trees, Fig. 4). Project spec:
``specs/far-mig.md`` §1.1, §1.2, §1.5.

Complexity, with P placements and k slices (P <= 14, k <= 7 on every current GPU):

* :func:`partitions`: Bron-Kerbosch with pivoting over the "disjoint" graph, O(3^(P/3) * P) worst
  case; a few hundred steps on A100. Cached per geometry.
* :func:`repartition_tree`: O(P^3) comparisons of occupancy sets. Cached per geometry.
* :func:`is_valid_partition`: O(m^2) for m instances.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuweave.errors import InputError


@dataclass(frozen=True)
class Placement:
    """One allowed MIG instance: ``size`` consecutive slices from ``start``.

    ``slices`` are the slices the instance computes on; ``occupancy`` (a superset) is what it blocks
    for other instances. Instances whose occupancies are disjoint can coexist.
    """

    size: int
    start: int
    slices: frozenset[int]
    occupancy: frozenset[int]

    @property
    def end(self) -> int:
        """One past the last slice of the instance."""
        return self.start + self.size

    @property
    def label(self) -> str:
        """Short name: ``"3@0"`` is the 3-slice instance starting at S0."""
        return f"{self.size}@{self.start}"

    def overlaps(self, other: Placement) -> bool:
        """True when the two instances cannot coexist (their occupancies intersect)."""
        return not self.occupancy.isdisjoint(other.occupancy)

    def __str__(self) -> str:
        return self.label


def _sorted_set(values: frozenset[int]) -> str:
    return "{" + ",".join(f"S{v}" for v in sorted(values)) + "}"


@dataclass(frozen=True)
class MigGeometry:
    """The MIG rules of one GPU family: slices, instance sizes, placements and reconfiguration times.

    ``create_s[size]`` / ``destroy_s[size]`` are the average seconds to create / destroy one
    instance of that size (FAR paper Table 1); the driver runs these operations one at a time.
    """

    name: str
    num_slices: int
    sizes: tuple[int, ...]
    placements: tuple[Placement, ...]
    create_s: dict[int, float] = field(hash=False)
    destroy_s: dict[int, float] = field(hash=False)
    sources: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    note: str = field(default="", compare=False)

    @property
    def max_size(self) -> int:
        return max(self.sizes)

    def placements_of_size(self, size: int) -> tuple[Placement, ...]:
        """Placements of one size, lowest start first (empty for a size the GPU does not have)."""
        return tuple(p for p in self.placements if p.size == size)

    def placement(self, size: int, start: int) -> Placement:
        """The placement with this size and start; InputError if the GPU does not allow it."""
        for p in self.placements:
            if p.size == size and p.start == start:
                return p
        allowed = ", ".join(p.label for p in self.placements)
        raise InputError(f"{self.name} has no MIG instance of size {size} at slice {start}; allowed: {allowed}")

    def create_time(self, size: int) -> float:
        """Seconds to create one instance of ``size`` slices."""
        return self._time(self.create_s, size, "create")

    def destroy_time(self, size: int) -> float:
        """Seconds to destroy one instance of ``size`` slices."""
        return self._time(self.destroy_s, size, "destroy")

    def _time(self, table: Mapping[int, float], size: int, what: str) -> float:
        try:
            return table[size]
        except KeyError:
            raise InputError(
                f"{self.name} has no instance size {size} (sizes: {list(self.sizes)}), so no {what} time"
            ) from None


# ------------------------------------------------------------------------------------------------
# Partitions
# ------------------------------------------------------------------------------------------------


def partition_label(partition: Iterable[Placement]) -> str:
    """The FAR paper's name of a partition: instance sizes left to right, e.g. ``"4-2-1"``."""
    return "-".join(str(p.size) for p in sorted(partition, key=lambda p: (p.start, -p.size)))


def _order_key(partition: tuple[Placement, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    # Fig. 1 numbering = the size sequences (left to right) in descending lexicographic order:
    # 7, 4-3, 4-2-1, 4-1-1-1, 3-3, ..., 1-1-1-1-1-1-1. Ties (same sizes, other starts) by start.
    return tuple(-p.size for p in partition), tuple(p.start for p in partition)


@lru_cache(maxsize=None)
def _partitions_cached(geometry: MigGeometry) -> tuple[tuple[Placement, ...], ...]:
    placements = geometry.placements
    n = len(placements)
    compatible = [
        frozenset(j for j in range(n) if j != i and not placements[i].overlaps(placements[j])) for i in range(n)
    ]
    found: list[tuple[Placement, ...]] = []

    # Bron-Kerbosch with pivoting: maximal cliques of the "can coexist" graph = maximal partitions.
    def expand(chosen: list[int], candidates: set[int], excluded: set[int]) -> None:
        if not candidates and not excluded:
            members = sorted((placements[i] for i in chosen), key=lambda p: (p.start, -p.size))
            found.append(tuple(members))
            return
        pivot = max(candidates | excluded, key=lambda u: len(compatible[u] & candidates))
        for v in sorted(candidates - compatible[pivot]):
            expand(chosen + [v], candidates & compatible[v], excluded & compatible[v])
            candidates = candidates - {v}
            excluded = excluded | {v}

    expand([], set(range(n)), set())
    found.sort(key=_order_key)
    return tuple(found)


def partitions(geometry: MigGeometry) -> list[tuple[Placement, ...]]:
    """All maximal partitions of ``geometry``, numbered as in the FAR paper's Fig. 1.

    A partition is a set of placements with pairwise-disjoint occupancy; it is *maximal* when no
    other placement can be added. Each partition is a tuple of placements ordered left to right.
    Order: the partitions' size sequences (see :func:`partition_label`) in descending lexicographic
    order, which reproduces Fig. 1's numbering (A100: 1 = ``7``, 2 = ``4-3``, ..., 19 =
    ``1-1-1-1-1-1-1``), so partition number ``i`` is ``partitions(g)[i - 1]``.
    """
    return list(_partitions_cached(geometry))


def get_partition(geometry: MigGeometry, label: str) -> tuple[Placement, ...]:
    """The maximal partition called ``label`` (e.g. ``"4-2-1"``); InputError if there is none."""
    wanted = label.strip().replace(",", "-").replace(" ", "")
    for candidate in _partitions_cached(geometry):
        if partition_label(candidate) == wanted:
            return candidate
    known = ", ".join(partition_label(p) for p in _partitions_cached(geometry))
    raise InputError(f"{geometry.name} has no MIG partition {label!r}; valid partitions: {known}", field="partition")


def is_valid_partition(placements: Iterable[Placement], geometry: MigGeometry | None = None) -> bool:
    """True when the instances can coexist on one GPU.

    They must have pairwise-disjoint occupancy and no duplicates; when ``geometry`` is given, each
    must also be one of its placements. Every valid set extends to a maximal partition of
    :func:`partitions` (it is a clique of the "can coexist" graph), so this matches the spec's
    "P_t is a subset of some P in MIG-Part_G".
    """
    items = list(placements)
    if geometry is not None:
        allowed = set(geometry.placements)
        if any(p not in allowed for p in items):
            return False
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            if a.overlaps(b):
                return False
    return True


# ------------------------------------------------------------------------------------------------
# Repartitioning tree
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeNode:
    """A node of FAR's repartitioning tree: one instance and the instances it is split into.

    ``children`` are ordered left/lower slices first; this order is FAR's heap tie-break. The tree is
    an immutable template: a scheduler keeps its own per-node state (end time, task list) keyed by
    node or placement.
    """

    placement: Placement
    children: tuple[TreeNode, ...] = ()

    @property
    def start(self) -> int:
        return self.placement.start

    @property
    def size(self) -> int:
        return self.placement.size

    @property
    def slices(self) -> frozenset[int]:
        return self.placement.slices

    @property
    def occupancy(self) -> frozenset[int]:
        return self.placement.occupancy

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def walk(self) -> Iterator[TreeNode]:
        """All nodes, pre-order (a node before its children, children in order)."""
        yield self
        for child in self.children:
            yield from child.walk()

    def non_leaf_count(self) -> int:
        """Non-leaf nodes: FAR's bound on the number of reconfigurations of one schedule."""
        return sum(1 for node in self.walk() if node.children)

    def to_tuple(self) -> tuple:
        """``(start, size, sorted occupancy, (children...))``: a plain, comparable form."""
        return (self.start, self.size, tuple(sorted(self.occupancy)), tuple(c.to_tuple() for c in self.children))

    def render(self) -> list[str]:
        """Text lines drawing the subtree (used by ``gpuweave gpus NAME --tree``)."""
        lines = [f"Node(start={self.start}, size={self.size}, occ={_sorted_set(self.occupancy)})"]
        for i, child in enumerate(self.children):
            last = i == len(self.children) - 1
            sub = child.render()
            lines.append(("└── " if last else "├── ") + sub[0])
            lines.extend(("    " if last else "│   ") + line for line in sub[1:])
        return lines


def _below(p: Placement, q: Placement) -> bool:
    """Strict order of the tree: p can be carved out of q (smaller occupancy, or same and smaller size)."""
    if p.occupancy < q.occupancy:
        return True
    return p.occupancy == q.occupancy and p.size < q.size


@lru_cache(maxsize=None)
def repartition_tree(geometry: MigGeometry) -> TreeNode:
    """FAR's repartitioning tree (paper Sec. 3.2, Fig. 4; spec §1.5), derived from the placements.

    The children of a placement q are the placements p "below" q (p's occupancy strictly inside q's,
    or equal to it with a smaller size) that are maximal among those; so on A100 the 4-slice node has
    the single child 3@0 (same occupancy {S0..S3}), which splits into 2@0 and 2@2. Children are ordered
    by their lowest occupied slice. Raises ValueError if the placements do not form a single tree
    (a node with two parents, or several roots), which no NVIDIA geometry does.
    """
    placements = geometry.placements
    below = {q: [p for p in placements if _below(p, q)] for q in placements}
    children: dict[Placement, list[Placement]] = {}
    parent_count: dict[Placement, int] = {p: 0 for p in placements}
    for q in placements:
        maximal = [p for p in below[q] if not any(_below(p, r) for r in below[q])]
        maximal.sort(key=lambda p: (min(p.occupancy), p.start, -p.size))
        children[q] = maximal
        for p in maximal:
            parent_count[p] += 1
    roots = [p for p in placements if parent_count[p] == 0]
    shared = [p.label for p in placements if parent_count[p] > 1]
    if len(roots) != 1 or shared:
        raise ValueError(
            f"MIG geometry {geometry.name!r} is not a single tree: roots {[r.label for r in roots]}, "
            f"placements with several parents {shared}"
        )

    def build(p: Placement) -> TreeNode:
        return TreeNode(p, tuple(build(c) for c in children[p]))

    return build(roots[0])


# ------------------------------------------------------------------------------------------------
# Reading a geometry from the catalog's TOML tables
# ------------------------------------------------------------------------------------------------


def _int_list(value: Any, file: Path | str, field_name: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InputError(f"expected a list of integers, got {value!r}", file=file, field=field_name)
    return list(value)


def _size_table(value: Any, sizes: tuple[int, ...], file: Path | str, field_name: str) -> dict[int, float]:
    if not isinstance(value, dict):
        raise InputError(f"expected a table of size = seconds, got {value!r}", file=file, field=field_name)
    out: dict[int, float] = {}
    for key, seconds in value.items():
        try:
            size = int(key)
        except ValueError:
            raise InputError(f"instance size {key!r} is not an integer", file=file, field=field_name) from None
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
            raise InputError(
                f"time for size {size} must be a number >= 0, got {seconds!r}", file=file, field=field_name
            )
        out[size] = float(seconds)
    if sorted(out) != sorted(sizes):
        raise InputError(f"needs a time for every size {list(sizes)}, has {sorted(out)}", file=file, field=field_name)
    return out


def geometry_from_tables(tables: Mapping[str, Any], file: Path | str = "gpus.toml") -> dict[str, MigGeometry]:
    """Build every geometry of the catalog's ``[mig.NAME]`` tables, validating them.

    A table has ``num_slices``, ``sizes``, ``placements`` (each ``{size, start, occupancy?}``; the
    slices are ``start..start+size-1`` and occupancy defaults to them) or ``placements_from`` (the
    name of another geometry whose placements it shares), ``create_s``, ``destroy_s``, ``sources``,
    ``note``. Bad data raises InputError naming the file and field.
    """
    out: dict[str, MigGeometry] = {}
    for name, raw in tables.items():
        where = f"mig.{name}"
        if not isinstance(raw, dict):
            raise InputError("expected a table", file=file, field=where)
        num_slices = raw.get("num_slices")
        if not isinstance(num_slices, int) or isinstance(num_slices, bool) or num_slices < 1:
            raise InputError(
                f"num_slices must be a positive integer, got {num_slices!r}", file=file, field=f"{where}.num_slices"
            )
        sizes = tuple(sorted(_int_list(raw.get("sizes"), file, f"{where}.sizes")))
        if not sizes or any(s < 1 or s > num_slices for s in sizes) or len(set(sizes)) != len(sizes):
            raise InputError(
                f"sizes must be distinct integers in 1..{num_slices}, got {list(sizes)}",
                file=file,
                field=f"{where}.sizes",
            )
        raw_placements = raw.get("placements")
        if raw_placements is None and "placements_from" in raw:
            other = tables.get(raw["placements_from"])
            if not isinstance(other, dict) or "placements" not in other:
                raise InputError(
                    f"placements_from names {raw['placements_from']!r}, which is not a geometry with placements",
                    file=file,
                    field=f"{where}.placements_from",
                )
            raw_placements = other["placements"]
        if not isinstance(raw_placements, list) or not raw_placements:
            raise InputError("needs a non-empty list of placements", file=file, field=f"{where}.placements")
        placements = _placements(raw_placements, sizes, num_slices, file, where)
        missing = [s for s in sizes if not any(p.size == s for p in placements)]
        if missing:
            raise InputError(f"sizes {missing} have no placement", file=file, field=f"{where}.placements")
        placements.sort(key=lambda p: (-p.size, p.start))
        sources = raw.get("sources", {})
        out[name] = MigGeometry(
            name=name,
            num_slices=num_slices,
            sizes=sizes,
            placements=tuple(placements),
            create_s=_size_table(raw.get("create_s"), sizes, file, f"{where}.create_s"),
            destroy_s=_size_table(raw.get("destroy_s"), sizes, file, f"{where}.destroy_s"),
            sources={str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {},
            note=str(raw.get("note", "")),
        )
    return out


def _placements(
    raw_placements: list, sizes: tuple[int, ...], num_slices: int, file: Path | str, where: str
) -> list[Placement]:
    """The geometry's placements ``{size, start, occupancy?}``: known sizes, inside the GPU, no duplicates."""
    placements: list[Placement] = []
    for i, item in enumerate(raw_placements):
        pfield = f"{where}.placements[{i}]"
        if not isinstance(item, dict):
            raise InputError("expected {size, start, occupancy?}", file=file, field=pfield)
        size, start = item.get("size"), item.get("start")
        if size not in sizes:
            raise InputError(f"size {size!r} is not one of the sizes {list(sizes)}", file=file, field=f"{pfield}.size")
        if not isinstance(start, int) or isinstance(start, bool) or start < 0 or start + size > num_slices:
            raise InputError(
                f"start {start!r} puts a size-{size} instance outside slices 0..{num_slices - 1}",
                file=file,
                field=f"{pfield}.start",
            )
        slices = frozenset(range(start, start + size))
        occ_list = item.get("occupancy")
        occupancy = slices if occ_list is None else frozenset(_int_list(occ_list, file, f"{pfield}.occupancy"))
        if not slices <= occupancy or any(s < 0 or s >= num_slices for s in occupancy):
            raise InputError(
                f"occupancy must contain the instance's slices {sorted(slices)} and lie in 0..{num_slices - 1}",
                file=file,
                field=f"{pfield}.occupancy",
            )
        placement = Placement(size=size, start=start, slices=slices, occupancy=occupancy)
        if any(p.size == size and (p.start == start or p.occupancy == occupancy) for p in placements):
            raise InputError(f"duplicate placement {placement.label}", file=file, field=pfield)
        placements.append(placement)
    return placements
