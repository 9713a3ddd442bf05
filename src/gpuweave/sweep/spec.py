"""The SWEEP.yaml format and its expansion into cells.

.. code-block:: yaml

    grain: cluster        # optional: cluster (default), mig or packs; names the config every cell is
    base:                 # any config fields of the grain, shared by every cell
      cluster: gavel-60
      jobs: 50
    grid:                 # a list of values per SimulationConfig field; cells = cartesian product
      policy: [fifo, sjf, yarn-cs]
      seed: [0, 1]
      rate_per_hour: [30, 60]
    out: gpuweave-out/sweeps/small   # optional; default gpuweave-out/sweeps/<file stem>

A grain's config: ``cluster`` a :class:`~gpuweave.cluster.config.SimulationConfig` run by the simulator;
``mig`` a :class:`~gpuweave.mig.results.MigBatchConfig` (a Sec. 6.3 generated batch and a planner); ``packs`` a
:class:`~gpuweave.packs.results.PacksWorkloadConfig` (a seeded SYN-REF profile and an algorithm).
Grid values override base values. Cells are ordered like ``itertools.product`` over the grid fields in
file order (the last field varies fastest).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from gpuweave.checks import validation_error
from gpuweave.cluster.config import SimulationConfig
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.run import run_simulation
from gpuweave.errors import InputError
from gpuweave.files import check_path, load_yaml
from gpuweave.hardware.cluster_spec import load_cluster
from gpuweave.limits import check_limit
from gpuweave.mig.results import MigBatchConfig, run_generated_batch
from gpuweave.packs.results import PacksWorkloadConfig, run_workload
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces.schema import read_trace

TOP_LEVEL_KEYS = ("grain", "base", "grid", "out")


@dataclass(frozen=True)
class Grain:
    """What a sweep of one grain runs: the cell config model, the runner writing a result directory, the
    metrics averaged over seeds and the one plotted against the grid."""

    config: type[BaseModel]
    runner: Callable[[Any, Path], Any]
    aggregate_metrics: tuple[str, ...]
    plot_metric: str


GRAINS = {
    "cluster": Grain(
        SimulationConfig,
        run_simulation,
        (
            "avg_jct_s",
            "p99_jct_s",
            "makespan_s",
            "mean_queueing_delay_s",
            "utilization",
            "energy_kwh",
            "cost",
            "completed",
        ),
        "avg_jct_s",
    ),
    "mig": Grain(
        MigBatchConfig, run_generated_batch, ("makespan_s", "lower_bound_s", "ratio", "reconfigurations"), "ratio"
    ),
    "packs": Grain(
        PacksWorkloadConfig,
        run_workload,
        ("cost_s", "relative_cost", "packing_ratio", "relative_response_time"),
        "relative_cost",
    ),
}


def parse_cell_config(model: type[BaseModel], data: dict, source: str | Path = "<config>") -> Any:
    """Validate one cell's config; the first problem as one InputError naming the field."""
    if not isinstance(data, dict):
        raise InputError("a cell's config must be a mapping of settings", file=source)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, source) from None


@dataclass
class SweepSpec:
    base: dict[str, Any]
    grid: dict[str, list[Any]]
    out: Path
    source: str = "<sweep>"
    grain: str = "cluster"

    @property
    def name(self) -> str:
        return self.out.name


@dataclass
class Cell:
    """One point of the grid: its grid values and the full validated config."""

    index: int
    params: dict[str, Any]
    config: Any  # the grain's config model
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.key = self.config.key()

    def describe(self) -> str:
        return ", ".join(f"{k}={_text(v)}" for k, v in self.params.items()) or "base"


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def default_out(source: str | Path) -> Path:
    return Path("gpuweave-out") / "sweeps" / Path(source).stem


def _check_grid(grid: dict, model, src: str) -> dict[str, list[Any]]:
    """Every grid field is a field of ``model`` with a non-empty list of distinct values."""
    fields = model.model_fields
    clean_grid: dict[str, list[Any]] = {}
    for name, values in grid.items():
        where = f"grid.{name}"
        if name not in fields:
            raise InputError(f"unknown {model.__name__} field (known: {', '.join(fields)})", file=src, field=where)
        if not isinstance(values, list) or not values:
            raise InputError("expected a non-empty list of values", file=src, field=where)
        seen = set()
        for v in values:
            t = _text(v)
            if t in seen:
                raise InputError(f"duplicate value {t}", file=src, field=where)
            seen.add(t)
        clean_grid[str(name)] = list(values)
    return clean_grid


def parse_sweep(data: Any, source: str | Path = "<sweep>", *, out: str | Path | None = None) -> SweepSpec:
    """Check a parsed SWEEP document. ``out`` (e.g. from ``--out``) overrides the document's ``out``."""
    src = str(source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("expected a mapping with grain, base, grid and out", file=src)
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise InputError(f"unknown key (expected one of {', '.join(TOP_LEVEL_KEYS)})", file=src, field=str(key))
    grain = data.get("grain", "cluster")
    if grain not in GRAINS:
        raise InputError(f"unknown grain {grain!r} (known: {', '.join(GRAINS)})", file=src, field="grain")
    model = GRAINS[grain].config
    base = data.get("base") or {}
    if not isinstance(base, dict):
        raise InputError(f"expected a mapping of {model.__name__} fields", file=src, field="base")
    grid = data.get("grid") or {}
    if not isinstance(grid, dict):
        raise InputError("expected a mapping of field: [values]", file=src, field="grid")
    fields = model.model_fields
    for name in base:
        if name not in fields:
            raise InputError(
                f"unknown {model.__name__} field (known: {', '.join(fields)})", file=src, field=f"base.{name}"
            )
    clean_grid = _check_grid(grid, model, src)
    if out is None:
        out = data.get("out")
        if out is not None:
            check_path(out, file=src, field="out")
    spec = SweepSpec(dict(base), clean_grid, Path(out) if out else default_out(src), src, grain)
    expand(spec)  # validate every cell now, before anything runs
    return spec


def load_sweep(path: str | Path, *, out: str | Path | None = None) -> SweepSpec:
    """Read and check SWEEP.yaml."""
    path = Path(path)
    data = load_yaml(path, what="sweep file")
    return parse_sweep(data, path, out=out)


def expand(spec: SweepSpec) -> list[Cell]:
    """The cells of the sweep: the cartesian product of the grid over the base config."""
    names = list(spec.grid)
    count = 1
    for name in names:
        count *= len(spec.grid[name])
    check_limit("sweep_cells", count, "cells in the grid", file=spec.source, field="grid")
    cells: list[Cell] = []
    by_key: dict[str, Cell] = {}
    for index, combo in enumerate(itertools.product(*(spec.grid[n] for n in names))):
        params = dict(zip(names, combo))
        try:
            config = parse_cell_config(GRAINS[spec.grain].config, {**spec.base, **params}, spec.source)
        except InputError as exc:
            where = ", ".join(f"{k}={_text(v)}" for k, v in params.items()) or "base"
            raise InputError(f"cell {where}: {exc.message}", file=spec.source, field=exc.field) from None
        cell = Cell(index, params, config)
        if cell.key in by_key:
            raise InputError(
                f"cells {by_key[cell.key].describe()} and {cell.describe()} are the same config",
                file=spec.source,
                field="grid",
            )
        by_key[cell.key] = cell
        cells.append(cell)
    return cells


def check_inputs(spec: SweepSpec) -> None:
    """Check, before any cell runs, what every cell will read: policy and its options, cluster, trace.

    Each distinct policy/options pair, cluster and (trace, cluster, profiles) combination is checked once,
    so a typo in the grid is one error line (exit 2) instead of a sweep of failed cells. MIG and packs configs
    check their names when they are validated (:func:`expand`).
    """
    if spec.grain != "cluster":
        expand(spec)
        return
    seen: set[str] = set()
    clusters: dict[str, Any] = {}

    def once(key: str) -> bool:
        if key in seen:
            return False
        seen.add(key)
        return True

    for cell in expand(spec):
        c = cell.config
        try:
            if once(f"policy {c.policy} {json.dumps(c.policy_options, sort_keys=True, default=str)}"):
                make_policy(c.policy, **dict(c.policy_options))
            if c.cluster not in clusters:
                clusters[c.cluster] = load_cluster(c.cluster)
            spec_ = clusters[c.cluster]
            if c.trace is not None and once(f"trace {c.trace} {c.cluster} {c.profiles} {c.extrapolate_profiles}"):
                profiles = load_profiles(c.profiles, extrapolate=c.extrapolate_profiles)
                read_trace(c.trace, profiles=profiles, max_gpus=max(spec_.gpus_by_model().values()))
        except InputError as exc:
            if exc.file is not None:  # the error is in another file (cluster YAML, trace): name that file
                raise
            raise InputError(f"cell {cell.describe()}: {exc.message}", file=spec.source, field=exc.field) from None
