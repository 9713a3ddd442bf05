"""Canonical GPU-model names for trace converters.

Traces spell GPU models in their own ways ("v100", "V100M32", "A100-SXM4-80GB"). Converters pass every
model name through :func:`canonical_gpu_model` so that jobs and cluster descriptions use one spelling:
exactly ``"K80"``, ``"P100"``, ``"V100"`` for the three GPU types of Gavel's throughput table.

Resolution order:

1. ``gpuweave.hardware.catalog.get_gpu(name).name`` when that module exists and knows the name;
2. otherwise the alias table below (case-insensitive);
3. otherwise :class:`~gpuweave.errors.InputError` ("unknown GPU model").

The alias table covers every model that occurs in the trace sources the converters read:

* Alibaba openb 2023 (``model``, ``gpu_spec``): ``P100``, ``T4``, ``A10``, ``V100M16``/``V100M32`` (V100
  with 16/32 GB; both map to ``V100``, the converter keeps the original spelling in the job's attrs) and
  the undisclosed internal codes ``G1``/``G2``/``G3``, kept as they are.
* Alibaba 2026 spot GPU (``gpu_model``): ``A10``, ``A100-SXM4-80GB`` -> ``A100-80GB``, ``A800-SXM4-80GB``
  -> ``A800``, ``H800`` and the undisclosed ``GPU-series-1``/``GPU-series-2``, kept as they are.

The fallback names agree with the hardware catalog's canonical names (``A100`` alone means
``A100-40GB``, ``H100`` means ``H100-80GB``), so the result does not depend on which one answers.
* Alibaba PAI 2020 (``gpu_type``): ``P100``, ``T4``, ``V100``, ``V100M32`` -> ``V100``, ``MISC`` (kept).
"""

from __future__ import annotations

import importlib

from gpuweave.errors import InputError

# lower-case alias -> canonical name
_ALIASES: dict[str, str] = {
    "k80": "K80",
    "tesla-k80": "K80",
    "p100": "P100",
    "tesla-p100": "P100",
    "v100": "V100",
    "tesla-v100": "V100",
    "v100m16": "V100",
    "v100m32": "V100",
    "v100-16gb": "V100",
    "v100-32gb": "V100",
    "t4": "T4",
    "a10": "A10",
    "a30": "A30",
    "a100": "A100-40GB",
    "a100-sxm4-40gb": "A100-40GB",
    "a100-sxm4-80gb": "A100-80GB",
    "a800": "A800",
    "a800-sxm4-80gb": "A800",
    "h100": "H100-80GB",
    "h200": "H200",
    "h800": "H800",
    # Undisclosed or mixed types named by the trace publishers; kept verbatim.
    "g1": "G1",
    "g2": "G2",
    "g3": "G3",
    "gpu-series-1": "GPU-series-1",
    "gpu-series-2": "GPU-series-2",
    "misc": "MISC",
}


def _catalog_name(name: str) -> str | None:
    try:
        catalog = importlib.import_module("gpuweave.hardware.catalog")
    except ModuleNotFoundError:
        return None
    get_gpu = getattr(catalog, "get_gpu", None)
    if get_gpu is None:
        return None
    try:
        return str(get_gpu(name).name)
    except (KeyError, LookupError, ValueError):
        return None


def canonical_gpu_model(name: str, *, file: str | None = None, row: int | None = None, field: str | None = None) -> str:
    """Return the canonical spelling of GPU model ``name``; raise InputError if it is unknown."""
    text = str(name).strip()
    alias = _ALIASES.get(text.lower())
    if alias is not None and alias in {"K80", "P100", "V100"}:
        return alias
    from_catalog = _catalog_name(text)
    if from_catalog is not None:
        return from_catalog
    if alias is not None:
        return alias
    known = ", ".join(sorted(set(_ALIASES.values())))
    raise InputError(f"unknown GPU model '{text}' (expected one of: {known})", file=file, row=row, field=field)


def is_known_gpu_model(name: str) -> bool:
    """True when :func:`canonical_gpu_model` would accept ``name``."""
    try:
        canonical_gpu_model(name)
    except InputError:
        return False
    return True
