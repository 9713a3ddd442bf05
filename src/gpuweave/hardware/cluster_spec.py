"""Cluster specs: which nodes a simulated (or real) cluster has, from a YAML file.

Problem: describe a cluster as groups of identical nodes (count, GPU model, GPUs per node, energy
price, PUE), validate it against the GPU catalog, and expand it into a flat, indexed node list that
the cluster simulator and its policies use. Complexity: O(number of nodes) to expand.

YAML format (see the bundled files in ``clusters/``)::

    name: gavel-60
    description: ...
    source: ...                 # where the sizes come from
    price_per_kwh: 0.0          # cluster default, currency per kWh (0 = energy not priced)
    currency: "$"               # what prices and costs are counted in, written before amounts ("€", "EUR")
    pue: 1.0                    # cluster default power usage effectiveness (>= 1)
    placement: physical         # physical (default) | ideal: every placement runs consolidated
    nodes:
      - {count: 5, gpu: V100, gpus_per_node: 4, name_prefix: v100-}
      - {count: 5, gpu: P100, gpus_per_node: 4, price_per_kwh: 0.2, pue: 1.33}
      - {count: 2, gpu: T4, gpus_per_node: 1, names: [edge-a, edge-b]}
      - {count: 4, gpu: A100, gpus_per_node: 8, cpu_milli: 128000, memory_mib: 1048576, sharing: mig}

``cpu_milli`` (thousandths of a core) and ``memory_mib`` per node are optional (unset: not a limit); ``sharing``
says how tasks may hold the node's GPUs: ``whole`` (the default: a task holds whole GPUs), ``fraction`` (tasks
share a GPU by time-slicing or MPS, each holding a share of its compute and memory, as Alibaba's openb trace
and FGD's simulator do) or ``mig`` (MIG instances of the geometry the catalog gives the model; the model must
support MIG). Whole-GPU policies and results are unchanged by these fields.

Defaults: ``price_per_kwh`` is 0.0 (energy is measured but costs nothing unless a price is given;
a neutral default, since any real price is site-specific), ``pue`` is 1.0 (no facility overhead).
A node group that leaves them out inherits the cluster's values. Node names are ``name_prefix``
(default: the lower-case model name and ``-``) followed by a counter per prefix, from 0, so
groups may share a prefix; or ``names`` lists one name per node.

``placement: ideal`` models a cluster without placement effects, as Gavel's simulator does: a job spread over
several nodes still runs at its consolidated rate (``physical``, the default, uses the unconsolidated rate).
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpuweave.checks import MAX_GPUS_PER_NODE, PRICE_PER_KWH, PUE
from gpuweave.errors import InputError
from gpuweave.files import check_path, check_regular_file, load_yaml, parse_yaml_text
from gpuweave.hardware.catalog import all_gpus, canonical_gpu_name, get_gpu
from gpuweave.limits import check_limit

CLUSTERS_DIR = Path(__file__).with_name("clusters")


@dataclass(frozen=True, slots=True)
class Node:
    """One node of an expanded cluster: ``num_gpus`` GPUs of one model."""

    index: int
    name: str
    gpu_model: str  # canonical catalog name
    num_gpus: int
    price_per_kwh: float
    pue: float
    cpu_milli: int | None = None
    memory_mib: int | None = None
    sharing: str = "whole"


def _canonical_gpu(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a GPU model name, got {value!r}")
    try:
        return canonical_gpu_name(value)
    except InputError:
        raise ValueError(f"unknown GPU model {value!r}; known: {', '.join(all_gpus())}") from None


MAX_NODES_PER_GROUP = 1_000_000
MAX_CPU_MILLI = 10**9  # a million cores per node: a typo guard
MAX_MEMORY_MIB = 10**12
SHARING_MODES = ("whole", "fraction", "mig")
#: a currency symbol or code: 1 to 7 visible characters, then at most one space ("CHF ")
CURRENCY_CHARS = 7


def _currency_text(value: Any) -> str:
    """A spec's ``currency``, written before every amount the dashboard shows: text (YAML's ``!!binary`` or a number
    is refused), 1 to :data:`CURRENCY_CHARS` characters that are each visible, then at most one space. A Unicode
    control, format, separator, surrogate, private-use or unassigned character is refused by its code point: a
    right-to-left override (U+202E) printed every cost's digits in reverse order, and a zero-width space made an
    invisible currency."""
    if not isinstance(value, str):
        raise ValueError(f"expected text (a currency symbol or code), got {type(value).__name__}")
    body = value[:-1] if value.endswith(" ") else value
    hidden = next((c for c in body if unicodedata.category(c)[0] in "CZ"), None)
    if not 1 <= len(body) <= CURRENCY_CHARS or hidden is not None:
        why = f"U+{ord(hidden):04X} is not a visible character; " if hidden is not None else ""
        raise ValueError(
            f"{why}expected a currency symbol or code of 1 to {CURRENCY_CHARS} visible characters and at most one "
            'trailing space ("$", "€", "EUR", "CHF ")'
        )
    return value


def _number_not_bool_or_text(value: Any) -> Any:
    """A number field's YAML value must be a number: pydantic takes ``true`` as 1 and ``"4"`` as 4, so ``count:
    true`` was a node group of one node."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got the boolean {str(value).lower()}")
    if isinstance(value, str):
        shown = repr(value if len(value) <= 40 else value[:37] + "...")
        raise ValueError(f"expected a number, got the text {shown}")
    return value


class NodeGroup(BaseModel):
    """``count`` identical nodes; price and PUE default to the cluster's (None = inherit)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    # upper bounds keep a typo (count: 2000000000) from hanging the expansion into nodes
    count: int = Field(default=1, gt=0, le=MAX_NODES_PER_GROUP)
    gpu: str
    gpus_per_node: int = Field(gt=0, le=MAX_GPUS_PER_NODE)
    price_per_kwh: float | None = Field(default=None, ge=0, le=PRICE_PER_KWH.hi)
    pue: float | None = Field(default=None, ge=1.0, le=PUE.hi)
    name_prefix: str | None = None
    names: list[str] | None = None
    cpu_milli: int | None = Field(default=None, gt=0, le=MAX_CPU_MILLI)
    memory_mib: int | None = Field(default=None, gt=0, le=MAX_MEMORY_MIB)
    sharing: Literal["whole", "fraction", "mig"] = "whole"

    @field_validator("gpu", mode="before")
    @classmethod
    def _gpu_known(cls, value: Any) -> str:
        return _canonical_gpu(value)

    @field_validator("count", "gpus_per_node", "price_per_kwh", "pue", "cpu_milli", "memory_mib", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        return _number_not_bool_or_text(value)

    @field_validator("price_per_kwh", "pue")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _mig_capable(self) -> NodeGroup:
        if self.sharing == "mig" and not get_gpu(self.gpu).mig_capable:
            mig = [g for g in all_gpus() if get_gpu(g).mig_capable]
            raise ValueError(f"sharing: mig needs a MIG-capable GPU ({', '.join(mig)}); {self.gpu} is not")
        return self

    @model_validator(mode="after")
    def _names_match_count(self) -> NodeGroup:
        if self.names is not None:
            if self.name_prefix is not None:
                raise ValueError("give either names or name_prefix, not both")
            if len(self.names) != self.count or any(not n for n in self.names):
                raise ValueError(f"names must list {self.count} non-empty names (count), got {len(self.names)}")
        return self


class ClusterSpec(BaseModel):
    """A cluster: named groups of nodes plus cluster-wide energy defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1)
    description: str = ""
    source: str = ""
    price_per_kwh: float = Field(default=0.0, ge=0, le=PRICE_PER_KWH.hi)
    #: what price_per_kwh (so every cost) is counted in, written before the amount: "$", "€", "EUR", "CHF "
    currency: str = "$"
    pue: float = Field(default=1.0, ge=1.0, le=PUE.hi)
    placement: Literal["physical", "ideal"] = "physical"
    nodes: list[NodeGroup] = Field(min_length=1)

    @field_validator("price_per_kwh", "pue", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        return _number_not_bool_or_text(value)

    @field_validator("currency", mode="before")
    @classmethod
    def _currency(cls, value: Any) -> Any:
        return _currency_text(value)

    @field_validator("price_per_kwh", "pue")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _within_limits(self) -> ClusterSpec:
        check_limit("cluster_gpus", self.total_gpus, "GPUs of the cluster", field="nodes")
        return self

    @property
    def total_gpus(self) -> int:
        return sum(group.count * group.gpus_per_node for group in self.nodes)

    @property
    def total_nodes(self) -> int:
        return sum(group.count for group in self.nodes)

    def gpus_by_model(self) -> dict[str, int]:
        """GPU count per canonical model, in order of first appearance."""
        out: dict[str, int] = {}
        for group in self.nodes:
            out[group.gpu] = out.get(group.gpu, 0) + group.count * group.gpus_per_node
        return out

    def expand(self) -> list[Node]:
        """One :class:`Node` per node, indexed from 0 in file order; InputError on duplicate names."""
        nodes: list[Node] = []
        counters: dict[str, int] = {}
        seen: set[str] = set()
        for gi, group in enumerate(self.nodes):
            prefix = group.name_prefix if group.name_prefix is not None else f"{group.gpu.lower()}-"
            price = self.price_per_kwh if group.price_per_kwh is None else group.price_per_kwh
            pue = self.pue if group.pue is None else group.pue
            for j in range(group.count):
                if group.names is not None:
                    name = group.names[j]
                else:
                    k = counters.get(prefix, 0)
                    counters[prefix] = k + 1
                    name = f"{prefix}{k}"
                if name in seen:
                    raise InputError(
                        f"node name {name!r} is used twice; give the groups distinct names or name_prefix values",
                        field=f"nodes[{gi}].{'names' if group.names is not None else 'name_prefix'}",
                    )
                seen.add(name)
                nodes.append(
                    Node(
                        len(nodes),
                        name,
                        group.gpu,
                        group.gpus_per_node,
                        price,
                        pue,
                        group.cpu_milli,
                        group.memory_mib,
                        group.sharing,
                    )
                )
        return nodes


def _field_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def cluster_from_dict(data: Any, file: str | Path | None = None) -> ClusterSpec:
    """Validate a parsed cluster document; the first problem becomes an InputError naming the field."""
    if not isinstance(data, dict):
        raise InputError(f"a cluster spec must be a mapping with name and nodes, got {type(data).__name__}", file=file)
    try:
        return ClusterSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, InputError):  # a limit checked in a validator: its own message and field
            where = inner.field or _field_path(tuple(err.get("loc", ()))) or None
            raise InputError(inner.message, file=file, field=where) from None
        message = str(err.get("msg", "invalid value"))
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if err.get("type") == "missing":
            message = "required field is missing"
        elif "input" in err and err.get("type") not in {"value_error"}:
            shown = repr(err["input"])
            message = f"{message} (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
        raise InputError(message, file=file, field=_field_path(tuple(err.get("loc", ())))) from None


def bundled_clusters() -> list[str]:
    """Names of the cluster specs shipped with gpuweave (``gavel-60``, ...), sorted."""
    return sorted(p.stem for p in CLUSTERS_DIR.glob("*.yaml"))


def load_cluster(name_or_path: str | Path) -> ClusterSpec:
    """Load a bundled cluster by name (see :func:`bundled_clusters`) or a YAML file by path."""
    text = check_path(str(name_or_path), field="cluster")
    path = Path(text)
    if not path.is_file():
        if text in bundled_clusters():
            path = CLUSTERS_DIR / f"{text}.yaml"
        elif path.is_dir():
            raise InputError(
                "expected a cluster spec YAML file or a bundled cluster name, got a directory",
                file=text,
                field="cluster",
            )
        elif path.exists():  # a named pipe, socket or device: refused before anything opens it
            check_regular_file(path, what="cluster spec")
        elif path.suffix.lower() in {".yaml", ".yml"} or "/" in text:
            raise InputError("cluster spec file not found", file=text)
        else:
            raise InputError(
                f"unknown cluster {text!r}; bundled: {', '.join(bundled_clusters())}, or give a YAML path",
                field="cluster",
            )
    return cluster_from_document(load_yaml(path, what="cluster spec"), file=path)


def cluster_from_document(data: Any, file: str | Path | None = None) -> ClusterSpec:
    """Everything :func:`load_cluster` checks of a parsed cluster document: the model (fields, bounds, limit
    ``cluster_gpus``) and distinct node names once expanded. O(nodes)."""
    spec = cluster_from_dict(data, file=file)
    try:
        spec.expand()
    except InputError as exc:
        raise InputError(exc.message, file=file, field=exc.field) from None
    return spec


def check_cluster_yaml(text: str, *, source: str | Path | None = None) -> ClusterSpec:
    """The loader's verdict on ``text``, the YAML a writer (``trace cluster``, ``cluster import-slurm``) is about to
    write or print: what :func:`load_cluster` would refuse in the file (over limit ``yaml_mb`` or ``yaml_nodes``,
    fields out of bounds, over limit ``cluster_gpus``, a node name twice) is one InputError naming ``source``, the
    writer's input, before anything is written. O(size of the text)."""
    try:
        data = parse_yaml_text(text, source=source, what="cluster spec", limit_name="yaml_mb")
        return cluster_from_document(data, file=None)
    except InputError as exc:
        raise InputError(
            f"the cluster spec made from it would not load: {exc.message}", file=source, field=exc.field
        ) from None


def make_cluster(
    gpus: int,
    models: list[str],
    gpus_per_node: int = 8,
    *,
    price_per_kwh: float = 0.0,
    pue: float = 1.0,
    name: str | None = None,
) -> ClusterSpec:
    """A synthetic cluster of ``gpus`` GPUs for benchmarks and tests.

    The ``gpus // gpus_per_node`` nodes are split over ``models`` as evenly as possible (the first
    models get one extra node when it does not divide), one group per model in the given order.
    InputError if ``gpus`` is not a positive multiple of ``gpus_per_node`` or there are more models
    than nodes.
    """
    if gpus_per_node < 1:
        raise InputError(f"gpus_per_node must be >= 1, got {gpus_per_node}", field="gpus_per_node")
    if gpus < 1 or gpus % gpus_per_node:
        raise InputError(f"gpus must be a positive multiple of gpus_per_node={gpus_per_node}, got {gpus}", field="gpus")
    if not models:
        raise InputError("give at least one GPU model", field="models")

    for i, model in enumerate(models):
        try:
            canonical_gpu_name(model)
        except InputError as exc:
            raise InputError(exc.message, field=f"models[{i}]") from None
    num_nodes = gpus // gpus_per_node
    if len(models) > num_nodes:
        raise InputError(f"{len(models)} models but only {num_nodes} nodes", field="models")
    base, extra = divmod(num_nodes, len(models))
    groups = [
        {"count": base + (1 if i < extra else 0), "gpu": model, "gpus_per_node": gpus_per_node}
        for i, model in enumerate(models)
    ]
    return cluster_from_dict(
        {
            "name": name or f"synthetic-{gpus}",
            "description": f"{gpus} GPUs of {', '.join(models)} in nodes of {gpus_per_node} (make_cluster)",
            "price_per_kwh": price_per_kwh,
            "pue": pue,
            "nodes": groups,
        }
    )
