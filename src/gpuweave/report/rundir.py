"""Read a run directory written by :func:`gpuweave.cluster.run.run_simulation`.

A run directory holds ``summary.json``, ``jobs.csv``, ``timeseries.csv`` (and ``allocations.csv``, which
the report does not need). Anything missing or malformed raises :class:`~gpuweave.errors.InputError`
naming the file (and the row and field for tables).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuweave.checks import RESULT
from gpuweave.errors import InputError
from gpuweave.files import check_unique_columns, first_csv_row, read_input_text
from gpuweave.limits import check_limit
from gpuweave.results import read_summary

JOBS_REQUIRED = ("job_id", "arrival", "end", "jct")
TIMESERIES_REQUIRED = ("time", "busy_total", "power_w")


@dataclass
class RunData:
    """One run directory, loaded: the summary plus the job and timeseries tables (pandas DataFrames)."""

    path: Path
    summary: dict[str, Any]
    jobs: Any  # pandas.DataFrame
    timeseries: Any  # pandas.DataFrame
    label: str = ""

    @property
    def policy(self) -> str:
        return str(self.summary.get("policy") or self.config.get("policy") or "?")

    @property
    def name(self) -> str:
        """What the run is labelled by (the policy)."""
        return self.policy

    @property
    def seed(self) -> Any:
        seed = self.summary.get("seed")
        return self.config.get("seed") if seed is None else seed

    @property
    def config(self) -> dict[str, Any]:
        cfg = self.summary.get("config")
        return cfg if isinstance(cfg, dict) else {}

    @property
    def metrics(self) -> dict[str, Any]:
        return self.summary["metrics"]

    @property
    def models(self) -> list[str]:
        """GPU models with a ``busy_<MODEL>`` column in the timeseries, in file order."""
        return [c[len("busy_") :] for c in self.timeseries.columns if c.startswith("busy_") and c != "busy_total"]


def _read_table(
    path: Path, required: tuple[str, ...], text_columns: tuple[str, ...] = (), filled: tuple[str, ...] = ()
):
    """A CSV table of the run directory: at least one row, every column but ``text_columns`` finite numbers of
    sane magnitude (an empty cell is a missing value, except in ``filled``; ``nan``/``inf`` are refused), at most
    limit ``trace_jobs`` rows."""
    import io

    import numpy as np
    import pandas as pd

    if not path.is_file():
        raise InputError("missing file in run directory", file=path)
    text = read_input_text(path, what="result table")
    check_limit("trace_jobs", max(0, text.count("\n") - 1), "rows of the table", file=path)
    check_unique_columns(first_csv_row(text, comment=None), file=path)
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(f"not a readable CSV table: {' '.join(str(exc).split())[:200]}", file=path) from None
    for col in required:
        if col not in df.columns:
            raise InputError(f"missing column (has: {', '.join(map(str, df.columns))})"[:300], file=path, field=col)
    if df.empty:
        raise InputError("the table has no rows", file=path)
    for col in filled:
        empty = (df[col].str.strip() == "").to_numpy()
        if empty.any():
            raise InputError("empty value; expected a number", file=path, row=int(empty.nonzero()[0][0]) + 1, field=col)
    for col in [c for c in df.columns if c not in text_columns]:
        cells = df[col].str.strip()
        values = pd.to_numeric(cells.where(cells != "", None), errors="coerce").astype(float)
        present = (cells != "").to_numpy()
        array = values.to_numpy()
        with np.errstate(invalid="ignore"):
            bad = present & ~(np.abs(array) <= RESULT.hi)  # also NaN (not a number, or "nan") and inf
        if bad.any():
            row = int(bad.nonzero()[0][0])
            raise InputError(
                f"expected a finite number (at most {RESULT.hi:g} in size), got {df[col].iloc[row]!r}"[:200],
                file=path,
                row=row + 1,
                field=str(col),
            )
        df[col] = values
    return df


def read_jobs(path: Path):
    """Read ``jobs.csv``: every column numeric except ``job_id`` and ``job_type``."""
    return _read_table(path, JOBS_REQUIRED, text_columns=("job_id", "job_type"), filled=("arrival",))


def read_timeseries(path: Path):
    """Read ``timeseries.csv`` (all columns numeric), sorted by time."""
    df = _read_table(path, TIMESERIES_REQUIRED, filled=TIMESERIES_REQUIRED)
    return df.sort_values("time", kind="stable").reset_index(drop=True)


def load_run(run_dir: str | Path) -> RunData:
    """Load one run directory (summary.json, jobs.csv, timeseries.csv)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("not a directory (expected a run directory)", file=run_dir)
    summary = read_summary(run_dir / "summary.json")
    jobs = read_jobs(run_dir / "jobs.csv")
    timeseries = read_timeseries(run_dir / "timeseries.csv")
    return RunData(run_dir, summary, jobs, timeseries)


def _short(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def label_runs(runs: list) -> None:
    """Give each run a short label: its name (the policy, or a MIG/packs algorithm or kernel mode); the seed
    when the runs' seeds differ; then whatever config fields differ between runs that still share a label, and
    finally the directory name."""
    if len(runs) == 1:
        runs[0].label = runs[0].name
        return
    show_seed = len({_short(run.seed) for run in runs}) > 1
    for run in runs:
        run.label = f"{run.name} seed={_short(run.seed)}" if show_seed else run.name
    groups: dict[str, list[RunData]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    for group in groups.values():
        if len(group) < 2:
            continue
        keys = sorted({k for r in group for k in r.config} - {"policy", "seed"})
        differing = [k for k in keys if len({_short(r.config.get(k)) for r in group}) > 1]
        if "policy_options" in differing:  # the policy's own options read best next to its name: hadar[order=srpt]
            differing.remove("policy_options")
            for run in group:
                options = run.config.get("policy_options") or {}
                if isinstance(options, dict) and options:
                    inner = ",".join(f"{k}={_short(v)}" for k, v in sorted(options.items()))
                    run.label = run.label.replace(run.name, f"{run.name}[{inner}]", 1)
        for run in group:
            extra = " ".join(f"{k}={_short(run.config.get(k))}" for k in differing)
            if extra:
                run.label = f"{run.label} {extra}"
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.label] = seen.get(run.label, 0) + 1
    for run in runs:
        if seen[run.label] > 1:
            run.label = f"{run.label} ({run.path.name})"


def load_runs(run_dirs: Sequence[str | Path]) -> list[RunData]:
    """Load and label several run directories."""
    if not run_dirs:
        raise InputError("no run directories given")
    runs = [load_run(d) for d in run_dirs]
    label_runs(runs)
    return runs
