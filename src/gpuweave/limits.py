"""Size limits on every input, in one table, checked before any work starts.

Problem: a typo (``--jobs 1000000000``, ``"gpus": 1e9``, a grid of 10^8 cells) or a hostile file (JSON nested
200,000 deep) must end as one line and exit code 2 within seconds, never as a process that grows until the
machine swaps. Every reader and command that sizes work checks it here, before it reads the rest of the input
or starts computing; the message names the limit and how to raise it.

Each limit has a default chosen so that the work it admits finishes in seconds to minutes on a laptop and
within a few hundred MB (measured on the commands named in its ``what``). Users who mean more raise a limit for
one command with the root option ``gpuweave --limit NAME=VALUE ...`` (repeatable), or for a shell with the
environment variable ``GPUWEAVE_LIMITS="NAME=VALUE,NAME=VALUE"``. The option writes the environment variable,
so worker processes (the sweep's process pool, a local Ray) see the same limits. ``gpuweave limits`` prints
the table (``--json`` too); :func:`limits_markdown` is the README's copy of it.

Complexity: O(1) per check; parsing the overrides is O(length of the variable).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gpuweave.errors import InputError

ENV = "GPUWEAVE_LIMITS"


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit: its default, unit and what it bounds (where it is checked)."""

    name: str
    default: int
    unit: str
    what: str


_TABLE: tuple[Limit, ...] = (
    Limit("input_mb", 1024, "MB", "size of one input file (CSV, JSON, Parquet), checked before it is read"),
    Limit("yaml_mb", 16, "MB", "size of one YAML file (configs, sweeps, cluster specs)"),
    Limit("yaml_nodes", 1_000_000, "nodes", "values in a YAML document after its aliases are expanded"),
    Limit("json_depth", 64, "levels", "nesting depth of a JSON or YAML document"),
    Limit("trace_jobs", 1_000_000, "jobs", "jobs of a trace file or a generated run (simulate, trace, sweep, bench)"),
    Limit(
        "table_columns",
        10_000,
        "columns",
        "columns of a table's header (CSV traces and node lists, sacct output, result tables), checked before its rows",
    ),
    Limit("cluster_gpus", 100_000, "GPUs", "GPUs of a cluster spec (all node groups together)"),
    Limit("sweep_cells", 10_000, "cells", "cells of a sweep grid (product of the grid's list lengths)"),
    Limit("mig_tasks", 5_000, "tasks", "tasks of a MIG batch (TASKS.csv, --batches together, schedule JSON)"),
    Limit("mig_gpus", 1_024, "GPUs", "GPUs of a MIG plan or schedule"),
    Limit("mig_task_gpus", 25_000, "tasks x GPUs", "tasks x GPUs of one MIG plan (planning time grows with both)"),
    Limit("packs_tasks", 5_000, "tasks", "tasks of a packs profile or plan"),
    Limit("packs_procs", 1_024, "processors", "processors of a packs profile or plan"),
    Limit("matching_tasks", 200, "tasks", "tasks for packs --algo matching (blossom matching, O(n^3))"),
    Limit("andreas_jobs", 2_000, "jobs", "jobs of an ANDREAS snapshot (cluster plan andreas)"),
    Limit("andreas_exact_jobs", 16, "jobs", "jobs of an ANDREAS snapshot solved with --exact (MILP)"),
    Limit("hadar_jobs", 5_000, "jobs", "jobs of a Hadar snapshot (cluster plan hadar)"),
    Limit("hadar_exact_jobs", 500, "jobs", "jobs of a Hadar snapshot solved with --solver exact (MILP)"),
    Limit("kernel_launches", 1_000_000, "kernels", "kernel launches of one kernel simulation (all services)"),
    Limit("trace_kernels", 1_000_000, "kernels", "kernels of a kernel trace, torch profile or kernel profile run"),
    Limit("reps", 10_000, "repetitions", "repetitions or seeds of repro and bench commands"),
)
LIMITS: dict[str, Limit] = {limit.name: limit for limit in _TABLE}


class LimitError(InputError):
    """Input over a limit: the message names the limit, its value and how to raise it."""


def _parse(text: str, source: str) -> dict[str, int]:
    """``NAME=VALUE[,NAME=VALUE...]`` (commas or whitespace between pairs); InputError naming the bad pair."""
    out: dict[str, int] = {}
    for pair in text.replace(",", " ").split():
        name, sep, value = pair.partition("=")
        name = name.strip().lower().replace("-", "_")
        if not sep or name not in LIMITS:
            known = ", ".join(LIMITS)
            raise InputError(f"expected NAME=VALUE with NAME one of {known}; got {pair!r}", field=source)
        try:
            number = int(value.replace("_", ""))
        except ValueError:
            raise InputError(f"limit {name} must be a whole number >= 1, got {value!r}", field=source) from None
        if number < 1:
            raise InputError(f"limit {name} must be a whole number >= 1, got {value!r}", field=source)
        out[name] = number
    return out


def overrides() -> dict[str, int]:
    """The limits raised (or lowered) through :data:`ENV`."""
    text = os.environ.get(ENV, "")
    return _parse(text, ENV) if text.strip() else {}


def set_overrides(pairs: list[str]) -> None:
    """Apply ``--limit NAME=VALUE`` pairs on top of :data:`ENV`, writing the result back to the environment
    so that every process started from here (process pools, a local Ray) sees the same limits."""
    merged = overrides()
    for pair in pairs:
        merged.update(_parse(pair, "limit"))
    if merged:
        os.environ[ENV] = ",".join(f"{name}={value}" for name, value in merged.items())


def limit(name: str) -> int:
    """The current value of limit ``name`` (an override, else the default)."""
    return overrides().get(name, LIMITS[name].default)


def check_limit(
    name: str,
    value: float,
    what: str,
    *,
    file: str | Path | None = None,
    row: int | None = None,
    field: str | None = None,
) -> None:
    """Raise :class:`LimitError` when ``value`` is above limit ``name``; ``what`` says what was counted."""
    bound = limit(name)
    if value > bound:
        shown = f"{value:,.0f}" if value < 1e18 else f"{value:.3g}"
        raise LimitError(
            f"{what}: {shown} is over the limit {name} = {bound:,} {LIMITS[name].unit}; "
            f"if you mean it, raise it with `gpuweave --limit {name}=N ...`",
            file=file,
            row=row,
            field=field,
        )


def limits_table() -> list[dict[str, object]]:
    """The limits as rows: name, default, current value, unit, what."""
    current = overrides()
    return [
        {
            "name": lim.name,
            "default": lim.default,
            "value": current.get(lim.name, lim.default),
            "unit": lim.unit,
            "what": lim.what,
        }
        for lim in _TABLE
    ]


def limits_markdown() -> str:
    """The table as Markdown (the README's copy; a test keeps the two equal)."""
    lines = ["| limit | default | unit | bounds |", "|---|---:|---|---|"]
    lines += [f"| `{lim.name}` | {lim.default:,} | {lim.unit} | {lim.what} |" for lim in _TABLE]
    return "\n".join(lines)


def limits_help() -> str:
    """One paragraph for ``gpuweave --help``."""
    shown = ", ".join(f"{lim.name}={lim.default:,}" for lim in _TABLE)
    return f"Limits (raise with --limit NAME=VALUE or {ENV}; `gpuweave limits` explains each): {shown}."
