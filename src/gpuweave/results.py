"""The result core shared by every grain: one result directory per run, one ``summary.json`` shape.

Problem: the cluster simulator, the MIG planners, the packs algorithms and the kernel simulator each produce a
run; ``gpuweave report`` and ``gpuweave sweep`` must read any of them without knowing who wrote it. Every run
therefore writes a directory, staged and moved into place whole (:func:`gpuweave.staging.staged_directory`),
holding the grain's own files (CSV tables, schedule JSON) and a ``summary.json`` whose core is the same for all:

.. code-block:: json

    {"kind": "mig", "config": {...}, "seed": 0, "version": "0.1.0", "fingerprint": "3f2a...",
     "metrics": {"makespan_s": 312.5, "ratio": 1.04, ...}}

``kind`` is one of :data:`KINDS`; ``config`` is what produced the run (JSON); ``metrics`` is a flat dict of
numbers (``null`` for undefined). A grain may add its own keys beside the core (the cluster run keeps
``gpuweave_version``, ``gpuweave_code``, ``policy``, ``cluster``, ``definitions``). Numbers are written with
:func:`fmt`'s fixed precision and keys sorted, so the same config and seed give byte-identical files.
A summary without ``kind`` was written before the core existed, by the cluster simulator.

Complexity: O(size of the files written).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuweave import __version__
from gpuweave.checks import COUNT, RESULT, number, optional_number
from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.fingerprint import code_fingerprint
from gpuweave.staging import staged_directory

KINDS = ("cluster", "mig", "packs", "kernel", "sharing")
SUMMARY_NAME = "summary.json"
#: summaries written before the core existed carry only the cluster run's stamp
LEGACY_FINGERPRINT_KEY = "gpuweave_code"


def fmt(x: Any) -> str:
    """Fixed, platform-independent number formatting (at most 9 significant decimals)."""
    if isinstance(x, float):  # first: most of a result's cells (bool is not a float)
        if math.isfinite(x):
            s = f"{x:.9f}".rstrip("0").rstrip(".")
            return "0" if s == "-0" else s
        if math.isnan(x):
            return "nan"
        return "inf" if x > 0 else "-inf"
    if x is None:
        return ""
    if isinstance(x, bool):
        return str(int(x))
    return str(x)


def clean_json(obj: Any) -> Any:
    """JSON-ready copy: floats rounded like :func:`fmt`, non-finite floats as ``null``, tuples as lists."""
    if isinstance(obj, float):
        return float(fmt(obj)) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def config_key(config: dict[str, Any]) -> str:
    """Stable hash of a run's JSON config: the sweep cache key."""
    blob = json.dumps(config, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


@dataclass(frozen=True)
class ResultCore:
    """The keys every ``summary.json`` has; version and fingerprint are stamped when written."""

    kind: str
    config: dict[str, Any]
    seed: int | None
    metrics: Mapping[str, float | int | None]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown result kind {self.kind!r}")
        for name, value in self.metrics.items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"metric {name} is not a number: {value!r}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "config": self.config,
            "seed": self.seed,
            "version": __version__,
            "fingerprint": code_fingerprint(),
            "metrics": self.metrics,
        }


def write_json(path: Path, payload: Any, *, indent: int = 2) -> Path:
    """``payload`` as sorted, fixed-precision JSON (one trailing newline)."""
    with open(path, "w") as fh:
        json.dump(clean_json(payload), fh, indent=indent, sort_keys=True)
        fh.write("\n")
    return path


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """A CSV table, every cell through :func:`fmt`."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            w.writerow([fmt(v) for v in row])
    return path


def write_result(
    out_dir: str | Path,
    core: ResultCore | Callable[[], ResultCore],
    write_files: Callable[[Path], None],
    extra: dict[str, Any] | Callable[[], dict[str, Any]] | None = None,
) -> Path:
    """Write a result directory whole: ``write_files(staging)`` writes the grain's files, then summary.json
    (``extra`` keys beside the core; the core wins on a clash). Nothing is left behind if anything fails.
    ``core`` and ``extra`` may be functions, called after ``write_files`` (a run that writes its files as it
    goes knows its metrics only at the end)."""
    out_dir = Path(out_dir)
    with staged_directory(out_dir) as staging:
        write_files(staging)
        core = core() if callable(core) else core
        extra = extra() if callable(extra) else extra
        write_json(staging / SUMMARY_NAME, {**(extra or {}), **core.as_dict()})
    return out_dir


def result_kind(summary: dict[str, Any], file: str | Path | None = None) -> str:
    """The summary's ``kind``; a summary from before the core is a cluster run."""
    kind = summary.get("kind", "cluster")
    if kind not in KINDS:
        raise InputError(f"unknown result kind {kind!r} (known: {', '.join(KINDS)})", file=file, field="kind")
    return kind


def is_current(summary: dict[str, Any]) -> bool:
    """Whether the run was made by this code: every fingerprint stamp it carries equals the current one."""
    stamps = {summary[k] for k in ("fingerprint", LEGACY_FINGERPRINT_KEY) if k in summary}
    return stamps == {code_fingerprint()}


def read_summary(path: Path) -> dict[str, Any]:
    """Read and check one ``summary.json``: an object with a flat dict of numeric ``metrics`` and a known kind."""
    if not path.is_file():
        raise InputError("missing summary.json (not a gpuweave run directory?)", file=path)
    data = load_json(path, what="summary file")
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", file=path)
    metrics = data.get("metrics")
    if not isinstance(metrics, dict):
        raise InputError("expected an object of metrics", file=path, field="metrics")
    for name, value in metrics.items():
        if value is not None:  # null = undefined; anything else a finite number of sane magnitude
            number(value, RESULT, file=path, field=f"metrics.{name}")
    for name in ("config", "cluster"):
        if name in data and not isinstance(data[name], dict):
            raise InputError("expected an object", file=path, field=name)
    # The cluster's GPU count divides busy GPUs in the report's utilisation plots: a whole number (0 only when a
    # live run lost every node; the plots then fall back to the busiest moment).
    optional_number((data.get("cluster") or {}).get("total_gpus"), COUNT, file=path, field="cluster.total_gpus")
    result_kind(data, path)
    return data


def read_result_dir(run_dir: str | Path) -> dict[str, Any]:
    """The checked summary of a result directory (InputError if it is not one)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("not a directory (expected a run directory)", file=run_dir)
    return read_summary(run_dir / SUMMARY_NAME)
