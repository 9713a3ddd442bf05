"""Read a run directory written by :func:`gpuweave.cluster.run.run_simulation`.

A run directory holds ``summary.json``, ``jobs.csv``, ``timeseries.csv`` (and ``allocations.csv``, which
the report does not need); a shared run (tasks holding shares of GPUs) also ``sharing.csv``, its used share and
fragmentation over time; a run of adaptive jobs (Pollux's job model) also ``adaptation.csv``, each job's GPUs,
batch, throughput and statistical efficiency per interval. Anything missing or malformed raises
:class:`~gpuweave.errors.InputError` naming the file (and the row and field for tables). Complexity: O(rows of
the tables read).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuweave.checks import RESULT
from gpuweave.cluster.results import ADAPTATION_COLUMNS, ADAPTATION_FILE, SHARING_COLUMNS, SHARING_FILE
from gpuweave.errors import InputError
from gpuweave.files import check_regular_file, check_unique_columns, first_csv_row, read_input_text
from gpuweave.limits import check_limit
from gpuweave.results import read_summary

JOBS_REQUIRED = ("job_id", "arrival", "end", "jct")
TIMESERIES_REQUIRED = ("time", "busy_total", "power_w")
#: a shared run's sharing.csv (gpuweave.cluster.results writes it): one row per instant the values changed
SHARING_REQUIRED = SHARING_COLUMNS


@dataclass
class RunData:
    """One run directory, loaded: the summary plus the job and timeseries tables (pandas DataFrames), a shared
    run's sharing table (None for a whole-GPU run, which has no sharing.csv) and an adaptive run's adaptation
    table (None for rigid jobs)."""

    path: Path
    summary: dict[str, Any]
    jobs: Any  # pandas.DataFrame
    timeseries: Any  # pandas.DataFrame
    label: str = ""
    sharing: Any = None  # pandas.DataFrame, or None
    adaptation: Any = None  # pandas.DataFrame of adaptation.csv, or None (no adaptive jobs, or the file too large)

    @property
    def total_gpus(self) -> int:
        """The cluster's GPU count (``summary.json``'s ``cluster.total_gpus``; 0 when it is not known)."""
        return int((self.summary.get("cluster") or {}).get("total_gpus") or 0)

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

    if not path.exists():
        raise InputError("missing file in run directory", file=path)
    check_regular_file(path, what="result table")  # a FIFO named jobs.csv is refused, never opened
    text = read_input_text(path, what="result table")
    check_limit("trace_jobs", max(0, text.count("\n") - 1), "rows of the table", file=path)
    check_unique_columns(first_csv_row(text, comment=None, file=path), file=path)
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


def read_sharing(path: Path):
    """Read a shared run's ``sharing.csv`` (all columns numeric, none empty), sorted by time."""
    df = _read_table(path, SHARING_REQUIRED, filled=SHARING_REQUIRED)
    return df.sort_values("time_s", kind="stable").reset_index(drop=True)


def read_adaptation(path: Path):
    """Read an adaptive run's ``adaptation.csv`` (every column but the job and GPU model numeric), sorted by start;
    None when it is larger than :data:`ALLOCATIONS_MAX_BYTES` (the report then leaves its figures out)."""
    if path.is_file() and path.stat().st_size > ALLOCATIONS_MAX_BYTES:
        return None
    filled = tuple(c for c in ADAPTATION_COLUMNS if c not in ("job_id", "gpu_model"))
    df = _read_table(path, ADAPTATION_COLUMNS, text_columns=("job_id", "gpu_model"), filled=filled)
    return df.sort_values(["start", "job_id"], kind="stable").reset_index(drop=True)


#: allocations.csv above this size is not read for the per-job GPUs figure (a run of 10^5 jobs writes hundreds of MB)
ALLOCATIONS_MAX_BYTES = 32 * 1024 * 1024


def job_gpu_segments(run: RunData) -> list[tuple[str, float, float, int]] | None:
    """``(job, start, end, GPUs)`` of every stretch a job held a constant GPU count, from ``allocations.csv``
    (``time,job_id,node,gpu_model,gpus``: a job's GPUs on a node from that time on), in time order; None when the
    file is absent or larger than :data:`ALLOCATIONS_MAX_BYTES`. A job's last stretch ends at its end in jobs.csv.
    O(rows)."""
    path = run.path / "allocations.csv"
    if not path.is_file() or path.stat().st_size > ALLOCATIONS_MAX_BYTES:
        return None
    table = _read_table(path, ("time", "job_id", "node", "gpus"), text_columns=("job_id", "node", "gpu_model"))
    ends = dict(zip(run.jobs["job_id"], run.jobs["end"])) if "end" in run.jobs.columns else {}
    held: dict[str, dict[str, int]] = {}
    open_at: dict[str, tuple[float, int]] = {}
    out: list[tuple[str, float, float, int]] = []
    rows = table.sort_values("time", kind="stable")
    for time, job, node, gpus in zip(rows["time"], rows["job_id"], rows["node"], rows["gpus"]):
        nodes = held.setdefault(job, {})
        nodes[node] = int(gpus)
        total = sum(nodes.values())
        started = open_at.get(job)
        if started is not None and started[1] == total:
            continue
        if started is not None and started[0] < time:
            out.append((job, started[0], float(time), started[1]))
        if total > 0:
            open_at[job] = (float(time), total)
        else:
            open_at.pop(job, None)
    for job, (start, total) in open_at.items():
        end = ends.get(job)
        if end is not None and end == end and end > start:  # end == end: not NaN (a job that never finished)
            out.append((job, start, float(end), total))
    return out


def load_run(run_dir: str | Path) -> RunData:
    """Load one run directory (summary.json, jobs.csv, timeseries.csv, and sharing.csv and adaptation.csv where
    there are)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("not a directory (expected a run directory)", file=run_dir)
    summary = read_summary(run_dir / "summary.json")
    jobs = read_jobs(run_dir / "jobs.csv")
    timeseries = read_timeseries(run_dir / "timeseries.csv")
    run = RunData(run_dir, summary, jobs, timeseries)
    path = run_dir / SHARING_FILE
    if path.exists() or path.is_symlink():  # a dangling link is an error (read_sharing says so), not a whole-GPU run
        run.sharing = read_sharing(path)
        if run.total_gpus <= 0:  # the share held is a percentage of the cluster's GPUs
            raise InputError(
                "a shared run (it has sharing.csv) needs the cluster's GPU count, a whole number above 0",
                file=run_dir / "summary.json",
                field="cluster.total_gpus",
            )
    path = run_dir / ADAPTATION_FILE
    if path.exists() or path.is_symlink():
        run.adaptation = read_adaptation(path)
    return run


#: the longest label a run gets (a report's column heading, a legend entry, a bar's tick)
LABEL_MAX = 40
#: the longest value shown in a ``key=value`` part of a label
VALUE_MAX = 14
#: config keys a label never spells out as ``key=value``: the name or the run's mode (sim or live) says them
_NOT_DIFFERENCES = {"policy", "seed", "executor", "policy_options"}
#: config keys that are a run's name when set (a MIG/packs algorithm, a kernel mode, a sharing placement)
_NAME_KEYS = ("algo", "mode", "placement")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def _short(value: Any) -> str:
    """A config value as it reads in a label: ``30`` for 30.0, a path's file name, ``a=1,b=2`` for a dict, at most
    :data:`VALUE_MAX` characters (no JSON dumps)."""
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        text = ",".join(f"{k}={_short(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    elif isinstance(value, (list, tuple)):
        text = ",".join(_short(v) for v in value)
    else:
        text = str(value)
        if "/" in text and "=" not in text:  # a path: its file name says enough
            text = text.rstrip("/").rsplit("/", 1)[-1] or text
    return _clip(text, VALUE_MAX)


def config_part(key: str, value: Any) -> str:
    """One difference as a label reads it: ``key=value`` (value shortened), or ``key unset`` for a null."""
    key = str(key).rsplit(".", 1)[-1]  # executor.time_scale reads time_scale
    if value is None:
        return f"{key} unset"
    if isinstance(value, (dict, list, tuple)) and not value:
        return f"{key} empty"
    return f"{key}={_short(value)}"


def run_mode(summary: dict[str, Any]) -> str:
    """``sim`` for a simulated run, ``live, <executor>`` for a live one (``summary.json``'s ``live`` and
    ``executor``, else its config's ``executor.kind``)."""
    config = summary.get("config") if isinstance(summary.get("config"), dict) else {}
    executor = summary.get("executor")
    if not isinstance(executor, str) or not executor:
        section = config.get("executor") if isinstance(config, dict) else None
        kind = section.get("kind") if isinstance(section, dict) else None
        executor = str(kind) if kind and (summary.get("live") or "executor" in summary) else ""
    if summary.get("live") is True or executor:
        return f"live, {executor}" if executor else "live"
    return "sim"


def _flat(config: dict[str, Any], live: bool, name: str = "") -> dict[str, Any]:
    """The config fields a label may name, in file order, less those the run's ``name`` already says; a live
    run's ``executor`` section comes flattened (``executor.time_scale``, read ``time_scale``), a simulated run's
    (which the simulator ignored) is left out."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key == "executor" and live and isinstance(value, dict):
            out.update(_flat_section(value, "executor."))
        elif key in _NAME_KEYS and value and str(value) in name:
            continue
        elif key not in _NOT_DIFFERENCES:
            out[str(key)] = value
    return out


def _flat_section(section: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in section.items():
        if isinstance(value, dict) and value:
            out.update(_flat_section(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _options(run: Any) -> str:
    options = run.config.get("policy_options") or {}
    if not isinstance(options, dict) or not options:
        return ""
    return "[" + ",".join(f"{k}={_short(v)}" for k, v in sorted(options.items())) + "]"


def _join(parts: Sequence[str]) -> str:
    return " ".join(p for p in parts if p)


def label_runs(runs: Sequence[Any], labels: Sequence[str] | None = None) -> None:
    """Give each run a short label (at most :data:`LABEL_MAX` characters): its name (the policy, or a MIG/packs
    algorithm, kernel mode or placement) plus what differs between the runs -- the policy's options
    (``hadar[order=srpt]``), the mode when simulated and live runs meet (``hadar (sim)``, ``hadar (live, ray)``),
    the seed when seeds differ, then the config fields that differ between runs still sharing a label
    (``round_length=30``, ``round_length unset``), and finally, for runs still alike, the directory name.

    ``labels`` (one per run, in order) replaces all that: the caller's choice (``gpuweave report --label``)."""
    if labels is not None:
        if len(labels) != len(runs):
            raise InputError(f"{len(labels)} label(s) for {len(runs)} run(s): give one --label per run directory")
        for run, label in zip(runs, labels):
            if not str(label).strip():
                raise InputError("empty label", field="label")
            run.label = str(label).strip()
        return
    if len(runs) == 1:
        runs[0].label = runs[0].name
        return
    options = [_options(run) for run in runs]
    show_options = len(set(options)) > 1
    modes = [run_mode(run.summary) for run in runs]
    show_mode = len(set(modes)) > 1
    show_seed = len({_short(run.seed) for run in runs}) > 1
    for run, option, mode in zip(runs, options, modes):
        run.label = _join(
            [
                run.name + (option if show_options else ""),
                f"({mode})" if show_mode else "",
                f"seed={_short(run.seed)}" if show_seed else "",
            ]
        )
    flat = [_flat(run.config, mode != "sim", run.name) for run, mode in zip(runs, modes)]
    parts: list[list[str]] = [[] for _ in runs]
    _split(list(range(len(runs))), [run.label for run in runs], flat, parts)
    for run, extra in zip(runs, parts):
        run.label = _fit(run.label, extra)
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.label] = seen.get(run.label, 0) + 1
    for run in runs:
        if seen[run.label] > 1:
            run.label = _fit(run.label, [f"({_clip(run.path.name, 16)})"], keep_last=True)
    _unique(runs)


def _split(members: list[int], labels: list[str], flat: list[dict[str, Any]], parts: list[list[str]]) -> None:
    """Among runs sharing a label, the first config field (in file order) whose values differ is added to each
    one's ``parts``; the runs still alike then go on the same way, with the fields that differ among them only
    (so ``round_length=360 profiles=a=3`` rather than every field that differs anywhere)."""
    groups: dict[str, list[int]] = {}
    for i in members:
        groups.setdefault(labels[i] + "\0" + "\0".join(parts[i]), []).append(i)
    for group in groups.values():
        if len(group) < 2:
            continue
        keys = list(dict.fromkeys(k for i in group for k in flat[i]))
        key = next((k for k in keys if len({config_part(k, flat[i].get(k)) for i in group}) > 1), None)
        if key is None:
            continue
        for i in group:
            parts[i].append(config_part(key, flat[i].get(key)))
        _split(group, labels, flat, parts)


def _fit(label: str, parts: Sequence[str], keep_last: bool = False) -> str:
    """``label`` with as many of ``parts`` as fit in :data:`LABEL_MAX` characters (an ellipsis for those left
    out); with ``keep_last`` the last part is kept whole and the label before it cut instead."""
    if keep_last and parts:
        tail = parts[-1]
        head = _fit(label, parts[:-1])
        return _clip(head, LABEL_MAX - len(tail) - 1) + " " + tail
    out = label
    for n, part in enumerate(parts):
        more = n + 1 < len(parts)
        if len(out) + 1 + len(part) + (2 if more else 0) <= LABEL_MAX:
            out += " " + part
        else:
            return _clip(out + " \u2026", LABEL_MAX)
    return _clip(out, LABEL_MAX)


def _unique(runs: Sequence[Any]) -> None:
    """Runs whose labels still coincide (cut to fit) get their position appended: ``hadar \u2026 #3``."""
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.label] = seen.get(run.label, 0) + 1
    for n, run in enumerate(runs, 1):
        if seen[run.label] > 1:
            run.label = _clip(run.label, LABEL_MAX - len(f" #{n}")) + f" #{n}"


def load_runs(run_dirs: Sequence[str | Path], labels: Sequence[str] | None = None) -> list[RunData]:
    """Load and label several run directories (``labels``: the caller's, one per directory)."""
    if not run_dirs:
        raise InputError("no run directories given")
    if labels is not None and len(labels) != len(run_dirs):
        raise InputError(f"{len(labels)} label(s) for {len(run_dirs)} run(s): give one --label per run directory")
    runs = [load_run(d) for d in run_dirs]
    label_runs(runs, labels)
    return runs
