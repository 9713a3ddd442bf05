"""The GPU catalog: models, memory, power and MIG geometry, read from ``gpus.toml``.

Problem: turn a user's GPU name ("a100", "V100", "Tesla T4", Gavel's "k80") into one canonical
model with its numbers, each traceable to a source. All numbers live in the package data file
``gpus.toml`` with a source string beside each; this module only reads and validates them.

Lookup rule: names are case-insensitive and ignore spaces, ``-`` and ``_``; each model also lists
aliases (``"A100"`` means ``"A100-40GB"``, as in the FAR paper; ``"H100"`` means ``"H100-80GB"``;
ANDREAS' code names ``"TESLA"``/``"TURING"`` mean V100/T4). The names NVML reports
(``nvmlDeviceGetName``: "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA A30") resolve through
:func:`gpu_from_nvml_name`, which drops the vendor prefix and looks the rest up as an alias.

Complexity: the file is parsed once (O(file size)) and cached; a lookup is one dict access.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from gpuweave.errors import InputError
from gpuweave.hardware.mig import MigGeometry, geometry_from_tables

CATALOG_FILE = Path(__file__).with_name("gpus.toml")

CANONICAL_NAMES = (
    "K80",
    "P100",
    "V100",
    "T4",
    "RTX2080Ti",
    "A10",
    "RTX3090",
    "A30",
    "A100-40GB",
    "A100-80GB",
    "H100-80GB",
    "H100-NVL",
    "H200",
    "B200",
    "TITAN-RTX",
    "T400",
    "RTX-A2000",
)


@dataclass(frozen=True)
class GpuModel:
    """One GPU model of the catalog.

    ``memory_gb`` is device memory in GB; ``power_idle_w`` / ``power_max_w`` are board power in W
    (idle is an estimate unless its source says otherwise); ``mig`` is the MIG geometry or None;
    ``sources`` maps each field name to where its number comes from.
    """

    name: str
    memory_gb: float
    power_idle_w: float
    power_max_w: float
    mig: MigGeometry | None
    sources: dict[str, str] = field(hash=False, compare=False)
    aliases: tuple[str, ...] = ()
    form_factor: str = field(default="", compare=False)
    mig_slice_memory_gb: float | None = None

    @property
    def mig_capable(self) -> bool:
        return self.mig is not None

    @property
    def mig_slices(self) -> int:
        """Number of MIG slices (0 when the GPU has no MIG)."""
        return self.mig.num_slices if self.mig is not None else 0


@dataclass(frozen=True)
class Catalog:
    """A parsed catalog: models by canonical name, MIG geometries by name and the name index."""

    gpus: dict[str, GpuModel]
    geometries: dict[str, MigGeometry]
    index: dict[str, str]  # normalized name or alias -> canonical name
    meta: dict[str, Any]


def normalize_name(name: str) -> str:
    """Lookup key of a GPU name: upper case without spaces, ``-`` or ``_``."""
    return re.sub(r"[\s_\-]+", "", name).upper()


def _number(raw: dict, key: str, file: Path | str, where: str, *, positive: bool = True) -> float:
    value = raw.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise InputError(f"expected a number, got {value!r}", file=file, field=f"{where}.{key}")
    if value < 0 or (positive and value == 0):
        raise InputError(f"must be {'> 0' if positive else '>= 0'}, got {value!r}", file=file, field=f"{where}.{key}")
    return float(value)


def _sourced_numbers(raw: dict, sources: dict, path: Path, where: str) -> dict[str, float]:
    """A model's memory, idle and max power (and MIG slice memory when given), each with a source string."""
    numbers = {key: _number(raw, key, path, where) for key in ("memory_gb", "power_idle_w", "power_max_w")}
    slice_mem = raw.get("mig_slice_memory_gb")
    if slice_mem is not None:
        numbers["mig_slice_memory_gb"] = _number(raw, "mig_slice_memory_gb", path, where)
    for key in numbers:
        if not str(sources.get(key, "")).strip():
            raise InputError(f"number {key} has no source string", file=path, field=f"{where}.sources.{key}")
    if numbers["power_idle_w"] > numbers["power_max_w"]:
        raise InputError("idle power exceeds max power", file=path, field=f"{where}.power_idle_w")
    return numbers


def load_catalog(path: str | Path = CATALOG_FILE) -> Catalog:
    """Parse and validate a catalog file (the bundled ``gpus.toml`` unless ``path`` is given).

    Every number must come with a non-empty source string (``[gpu.NAME.sources]``); a model's
    ``mig`` names a ``[mig.GEOMETRY]`` table or is empty. Bad data raises InputError naming the
    file and field.
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise InputError("GPU catalog file not found", file=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", file=path) from None
    geometries = geometry_from_tables(data.get("mig", {}), file=path)
    gpus: dict[str, GpuModel] = {}
    index: dict[str, str] = {}
    raw_gpus = data.get("gpu")
    if not isinstance(raw_gpus, dict) or not raw_gpus:
        raise InputError("no [gpu.NAME] tables", file=path, field="gpu")
    for name, raw in raw_gpus.items():
        where = f"gpu.{name}"
        if not isinstance(raw, dict):
            raise InputError("expected a table", file=path, field=where)
        sources = raw.get("sources")
        if not isinstance(sources, dict):
            raise InputError("needs a [sources] table", file=path, field=f"{where}.sources")
        numbers = _sourced_numbers(raw, sources, path, where)
        geometry_name = str(raw.get("mig", ""))
        geometry = None
        if geometry_name:
            if geometry_name not in geometries:
                raise InputError(
                    f"unknown MIG geometry {geometry_name!r}; known: {', '.join(geometries)}",
                    file=path,
                    field=f"{where}.mig",
                )
            geometry = geometries[geometry_name]
        aliases = raw.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise InputError("aliases must be a list of strings", file=path, field=f"{where}.aliases")
        for key in [name, *aliases]:
            norm = normalize_name(key)
            if norm in index and index[norm] != name:
                raise InputError(f"name {key!r} already means {index[norm]}", file=path, field=f"{where}.aliases")
            index[norm] = name
        gpus[name] = GpuModel(
            name=name,
            memory_gb=numbers["memory_gb"],
            power_idle_w=numbers["power_idle_w"],
            power_max_w=numbers["power_max_w"],
            mig=geometry,
            sources={str(k): str(v) for k, v in sources.items()},
            aliases=tuple(aliases),
            form_factor=str(raw.get("form_factor", "")),
            mig_slice_memory_gb=numbers.get("mig_slice_memory_gb"),
        )
    return Catalog(gpus=gpus, geometries=geometries, index=index, meta=dict(data.get("meta", {})))


@cache
def _bundled() -> Catalog:
    return load_catalog(CATALOG_FILE)


def all_gpus() -> dict[str, GpuModel]:
    """Every model of the bundled catalog by canonical name, in file order (cached; a fresh dict)."""
    return dict(_bundled().gpus)


def canonical_gpu_name(name: str) -> str:
    """The canonical name of ``name`` or of an alias; InputError listing the known names otherwise."""
    catalog = _bundled()
    found = catalog.index.get(normalize_name(str(name)))
    if found is None:
        raise InputError(f"unknown GPU model {name!r}; known: {', '.join(catalog.gpus)}", field="gpu")
    return found


def get_gpu(name: str) -> GpuModel:
    """The catalog entry for a GPU name or alias (case-insensitive); InputError if unknown."""
    return _bundled().gpus[canonical_gpu_name(name)]


NVML_VENDOR_PREFIXES = ("NVIDIA ", "Tesla ")


def gpu_from_nvml_name(nvml_name: str) -> GpuModel | None:
    """The catalog model of the name NVML reports for a device ("NVIDIA H100 NVL"), or None if not listed."""
    catalog = _bundled()
    name = nvml_name.strip()
    candidates = [name] + [name[len(p) :] for p in NVML_VENDOR_PREFIXES if name.startswith(p)]
    for candidate in candidates:
        found = catalog.index.get(normalize_name(candidate))
        if found is not None:
            return catalog.gpus[found]
    return None


def mig_geometries() -> dict[str, MigGeometry]:
    """The MIG geometries of the bundled catalog by name (``"A30"``, ``"A100"``, ``"H100"``)."""
    return dict(_bundled().geometries)


def get_mig_geometry(name: str) -> MigGeometry:
    """The MIG geometry of a GPU (``"A100"``, ``"h100-80gb"``, ...) or of a geometry name.

    InputError if the GPU is unknown or has no MIG.
    """
    geometries = _bundled().geometries
    if name in geometries:
        return geometries[name]
    gpu = get_gpu(name)
    if gpu.mig is None:
        capable = [g.name for g in all_gpus().values() if g.mig is not None]
        raise InputError(f"GPU {gpu.name} has no MIG; MIG-capable: {', '.join(capable)}", field="gpu")
    return gpu.mig
