"""ANDREAS catalogues: node energy cost per GPUs in use, and per-epoch times per configuration.

Problem: give the optimizer and the cost accounting the two tables of the paper's model (spec andreas.md
§2.1–2.2): ``c(type, g)`` [€/h], the energy cost of a node of GPU ``type`` with ``g`` GPUs in use
(``c(type, 0) = 0``: an idle node is not charged, A12), and the per-epoch time of an application on a
configuration ``k = (type, g)``. The bundled tables are derived from the authors' repository (see
``data/SOURCES.md``). GPU type names are canonicalised through the hardware catalog, so the code names
TESLA/TURING become ``V100``/``T4`` and match cluster specs and the simulator's GPU models.

Work is expressed in **epochs**: :meth:`ProfileTable.profile_store` gives the simulator a rate of
``1 / time_per_epoch`` epochs per second for every profiled configuration, so a job's remaining time on
``k`` is ``remaining_epochs * time_per_epoch(k)``, which is exactly the spec's proportional update of the
remaining-time table (§2.3). Complexity: loading is O(rows); a lookup is one dict access.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from gpuweave.errors import InputError
from gpuweave.files import check_path, csv_dicts, read_input_text

COST_FILE = "costs.csv"
PROFILE_FILE = "profiles.csv"
JOB_CATALOG_FILE = "jobs.csv"


def gpu_type(name: str, *, file: str | None = None, field_name: str = "gpu_type") -> str:
    """Canonical GPU model for an ANDREAS type name (TESLA -> V100, TURING -> T4); InputError if unknown."""
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.hardware.catalog import all_gpus, canonical_gpu_name

    try:
        return canonical_gpu_name(str(name))
    except InputError:
        raise InputError(
            f"unknown GPU type {name!r} (known: TESLA, TURING or a catalog model: {', '.join(all_gpus())})",
            file=file,
            field=field_name,
        ) from None


def config_label(gpu: str, g: int) -> str:
    return f"{gpu}x{g}"


def _read_rows(text: str, source: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    lines = [ln for ln in text.lstrip("\ufeff").splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    header, rows = csv_dicts(lines, file=source, restval="")  # a short row has empty cells, not None
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)} (expected {', '.join(columns)})", file=source)
    return list(rows)  # type: ignore[arg-type]  # restval="": no cell is None


def _number(
    row: dict[str, str], key: str, source: str, rownum: int, *, integer: bool = False, positive: bool = True
) -> float:
    raw = (row.get(key) or "").strip()
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"expected a number, got {raw!r}", file=source, row=rownum, field=key) from None
    if not math.isfinite(value) or (positive and value <= 0) or (integer and value != int(value)) or value > 1e10:
        what = "a positive integer" if integer else "a positive number"
        raise InputError(f"expected {what} (at most 1e10), got {raw!r}"[:200], file=source, row=rownum, field=key)
    return int(value) if integer else value


def _integer(row: dict[str, str], key: str, source: str, rownum: int) -> int:
    return int(_number(row, key, source, rownum, integer=True))


def _bundled_text(name: str) -> str:
    return resources.files("gpuweave.andreas").joinpath("data", name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class CostCatalog:
    """``c(type, g)`` in €/h for ``g >= 1`` GPUs in use; ``c(type, 0) = 0``."""

    costs: dict[tuple[str, int], float]
    source: str = "<costs>"

    def cost(self, gpu: str, g: int) -> float:
        if g == 0:
            return 0.0
        value = self.costs.get((gpu, int(g)))
        if value is None:
            raise InputError(f"no energy cost for {g} GPU(s) in use on a {gpu} node", file=self.source)
        return value

    def has(self, gpu: str, g: int) -> bool:
        return g == 0 or (gpu, int(g)) in self.costs

    def types(self) -> list[str]:
        return sorted({t for t, _ in self.costs})

    def rows(self, max_gpus: dict[str, int] | None = None) -> list[tuple[str, int, float]]:
        """(type, g, cost) sorted by (type, g); restricted to g <= max_gpus[type] when given."""
        out = []
        for (t, g), c in sorted(self.costs.items()):
            if max_gpus is not None and (t not in max_gpus or g > max_gpus[t]):
                continue
            out.append((t, g, c))
        return out

    def table(self, gpu: str, max_g: int) -> np.ndarray:
        """Costs for 0..max_g GPUs in use (index = GPUs in use); InputError if a count is not priced."""
        return np.array([self.cost(gpu, g) for g in range(max_g + 1)], dtype=float)

    @classmethod
    def from_power(cls, nodes, gpu_power: dict[str, float] | None = None) -> "CostCatalog":
        """Linear cost for GPU models without an ANDREAS row: c(model, g) = g x max power x PUE x price.

        Used to charge ANDREAS' energy model on other papers' clusters: only GPUs in use are charged
        (c(model, 0) = 0, A12), with the catalog's maximum board power, and the node's price and PUE (the
        first node of each model sets them). This departs from the ANDREAS table, which measures whole nodes.
        """
        # imported when called: `gpuweave --help` imports this module
        from gpuweave.hardware.catalog import get_gpu

        costs: dict[tuple[str, int], float] = {}
        seen: set[str] = set()
        largest: dict[str, int] = {}
        for node in nodes:
            largest[node.gpu_model] = max(largest.get(node.gpu_model, 0), node.num_gpus)
        for node in nodes:
            model = node.gpu_model
            if model in seen:
                continue
            seen.add(model)
            watts = (gpu_power or {}).get(model) or get_gpu(model).power_max_w
            for g in range(1, largest[model] + 1):
                costs[(model, g)] = g * watts * node.pue * node.price_per_kwh / 1000.0
        return cls(costs, source="<GPU catalog power x node price x PUE>")


@dataclass(frozen=True)
class ProfileTable:
    """Per-epoch time [s] of each application on each configuration (type, g)."""

    per_epoch: dict[tuple[str, str, int], float]
    source: str = "<profiles>"
    _by_app: dict[str, dict[tuple[str, int], float]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_app: dict[str, dict[tuple[str, int], float]] = {}
        for (app, t, g), s in self.per_epoch.items():
            by_app.setdefault(app, {})[(t, g)] = s
        object.__setattr__(self, "_by_app", by_app)

    def apps(self) -> list[str]:
        return sorted(self._by_app)

    def configs(self, app: str) -> dict[tuple[str, int], float]:
        """{(type, g): seconds per epoch} of ``app``; InputError for an unknown application."""
        found = self._by_app.get(app)
        if found is None:
            raise InputError(f"unknown application {app!r} (profiled: {', '.join(self.apps())})", file=self.source)
        return found

    def time_per_epoch(self, app: str, gpu: str, g: int) -> float | None:
        return self.per_epoch.get((app, gpu, g))

    def profile_store(self):
        """A :class:`~gpuweave.workload.profiles.ProfileStore` with rate = 1/time-per-epoch (epochs/s).

        ANDREAS runs a job on one node only, so only consolidated entries exist; the store answers
        single-GPU entries for both placements and raises MissingProfileError for spread multi-GPU ones.
        """
        # imported when called: `gpuweave --help` imports this module
        from gpuweave.workload.profiles import ProfileRow, ProfileStore

        rows = [ProfileRow(app, t, g, True, 1.0 / s) for (app, t, g), s in sorted(self.per_epoch.items())]
        return ProfileStore(rows, source=self.source)


def parse_costs(text: str, source: str) -> CostCatalog:
    rows = _read_rows(text, source, ("gpu_type", "num_gpus", "cost_eur_per_h"))
    costs: dict[tuple[str, int], float] = {}
    for i, row in enumerate(rows, start=1):
        t = gpu_type(row["gpu_type"].strip(), file=source)
        g = _integer(row, "num_gpus", source, i)
        c = _number(row, "cost_eur_per_h", source, i)
        if (t, g) in costs:
            raise InputError(f"duplicate cost row for {config_label(t, g)}", file=source, row=i)
        costs[(t, g)] = c
    return CostCatalog(costs, source=source)


def parse_profiles(text: str, source: str) -> ProfileTable:
    rows = _read_rows(text, source, ("application", "gpu_type", "num_gpus", "time_per_epoch_s"))
    table: dict[tuple[str, str, int], float] = {}
    for i, row in enumerate(rows, start=1):
        app = row["application"].strip()
        t = gpu_type(row["gpu_type"].strip(), file=source)
        g = _integer(row, "num_gpus", source, i)
        s = _number(row, "time_per_epoch_s", source, i)
        if (app, t, g) in table:
            raise InputError(f"duplicate profile row for {app} on {config_label(t, g)}", file=source, row=i)
        table[(app, t, g)] = s
    return ProfileTable(table, source=source)


def load_costs(path: str | Path | None = None) -> CostCatalog:
    """The bundled cost catalogue (spec §2.1), or a CSV with gpu_type,num_gpus,cost_eur_per_h."""
    if path is None:
        return parse_costs(_bundled_text(COST_FILE), f"<bundled andreas/{COST_FILE}>")
    p = Path(check_path(str(path) if isinstance(path, Path) else path, field="costs"))
    return parse_costs(read_input_text(p, what="cost file"), str(p))


def load_profile_table(path: str | Path | None = None) -> ProfileTable:
    """The bundled per-epoch times (spec §2.2), or a CSV with application,gpu_type,num_gpus,time_per_epoch_s."""
    if path is None:
        return parse_profiles(_bundled_text(PROFILE_FILE), f"<bundled andreas/{PROFILE_FILE}>")
    p = Path(check_path(str(path) if isinstance(path, Path) else path, field="profiles"))
    return parse_profiles(read_input_text(p, what="profile file"), str(p))


def load_job_catalog() -> list[tuple[str, str, int, int]]:
    """The 10 profiled jobs (id, application, epochs, batch): the generator's catalogue (spec §9.3)."""
    source = f"<bundled andreas/{JOB_CATALOG_FILE}>"
    rows = _read_rows(_bundled_text(JOB_CATALOG_FILE), source, ("job", "application", "epochs", "batch"))
    return [
        (
            r["job"],
            r["application"],
            _integer(r, "epochs", source, i),
            _integer(r, "batch", source, i),
        )
        for i, r in enumerate(rows, start=1)
    ]


def paper_numbers() -> dict:
    import tomllib

    return tomllib.loads(_bundled_text("paper_numbers.toml"))


def cost_catalog_for(nodes, choice: str = "auto") -> CostCatalog:
    """The cost model for a cluster: ``andreas`` (bundled table), ``power`` (:meth:`CostCatalog.from_power`)
    or ``auto`` (the bundled table when it prices every GPU count of every node, else ``power``)."""
    if choice not in ("auto", "andreas", "power"):
        raise InputError(f"unknown cost model {choice!r} (auto, andreas, power)", field="cost_model")
    if choice == "power":
        return CostCatalog.from_power(nodes)
    bundled = load_costs()
    covered = all(bundled.has(n.gpu_model, g) for n in nodes for g in range(1, n.num_gpus + 1))
    if choice == "andreas":
        if not covered:
            bad = next(n for n in nodes if not all(bundled.has(n.gpu_model, g) for g in range(1, n.num_gpus + 1)))
            raise InputError(
                f"the ANDREAS cost table does not price node {bad.name} ({bad.num_gpus} x {bad.gpu_model})",
                field="cost_model",
            )
        return bundled
    return bundled if covered else CostCatalog.from_power(nodes)
