"""Several sharing modes of FGD's fill experiment side by side: ``gpuweave cluster fill --sharing whole,fraction,mig``.

The same tasks (pod list, seed, tuning, placement) run once per mode on the same nodes, each mode on every node:
``fraction`` and ``whole`` run no MIG (a cluster spec's ``sharing: mig`` groups, which a single ``--sharing
fraction`` run keeps as MIG, share fractions here), ``mig`` runs MIG on every node (MIG-capable GPUs only). So the
runs differ in the mode alone. Each mode's result is a normal fill result directory, ``OUT/<mode>/``; the caller
draws one report of them into ``OUT/report/`` (:func:`gpuweave.report.grains.report_runs`, as sweeps do).

Order of work, so that bad input and a failing run leave nothing, and a half-written comparison never looks done:

1. :func:`parse_modes` and :func:`check_mode` per mode (its node table, the tasks' profiles and fit, the fill's
   size) before any mode runs: one InputError line, nothing written;
2. :func:`run_modes`: every mode runs in memory before anything is written;
3. :func:`write_modes`: the previous comparison's ``OUT/report/report.html`` goes first, then each mode's
   directory (staged, :mod:`gpuweave.staging`); the report's page, written last by the caller, marks the
   comparison complete. A run that fails in 1 or 2 leaves an earlier comparison in ``OUT`` whole.

Complexity: the modes' fills one after the other (:mod:`.experiment`); memory: their results at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuweave.cluster.sharing.experiment import SHARING_MODES, FillResult, check_fill_size, run_fill
from gpuweave.cluster.sharing.profiles import resolve_mig_profiles
from gpuweave.cluster.sharing.results import write_fill_result
from gpuweave.cluster.sharing.state import check_tasks_fit
from gpuweave.errors import InputError
from gpuweave.hardware.node_resources import NodeTable
from gpuweave.workload.tasks import FULL_GPU_MILLI, TaskTable

#: how a mode reads in a report's labels and sentences
MODE_WORDS = {"fraction": "fractions", "whole": "whole GPUs", "mig": "MIG"}
#: the report's directory inside a comparison's ``OUT`` (as ``gpuweave sweep`` names its own)
REPORT_DIR = "report"
Progress = Callable[[int, int], None]


def parse_modes(text: str) -> tuple[str, ...]:
    """``--sharing``: one mode or a comma list of distinct modes, in the order given; InputError otherwise."""
    modes = tuple(part.strip() for part in text.split(","))
    for mode in modes:
        if mode not in SHARING_MODES:
            raise InputError(
                f"--sharing must be {', '.join(SHARING_MODES[:-1])} or {SHARING_MODES[-1]}, or a comma list of them, "
                f"got {mode!r}",
                field="sharing",
            )
    doubled = [m for i, m in enumerate(modes) if m in modes[:i]]
    if doubled:
        raise InputError(f"--sharing names {doubled[0]} twice; give each mode once", field="sharing")
    return modes


def mode_node_table(table: NodeTable, mode: str) -> NodeTable:
    """The nodes a mode runs on in a comparison: no MIG under ``fraction`` and ``whole`` (``table`` as a
    ``--sharing fraction`` run reads a spec, its ``sharing: mig`` groups running MIG); ``mig``: ``table`` itself,
    which must run MIG on every node."""
    if mode == "mig":
        if table.mig is None or not all(table.mig):
            raise InputError("--sharing mig needs a cluster whose nodes all run MIG (a cluster spec: --cluster)")
        return table
    return dataclasses.replace(table, mig=None) if table.mig is not None else table


def check_mode(table: NodeTable, tasks: TaskTable, tune: float) -> None:
    """What :func:`~.experiment.run_fill` refuses before it places a task, checked without placing: the tasks'
    MIG profiles on these nodes, every task fitting some node, the fill's size."""
    resolved = resolve_mig_profiles(table, tasks)
    check_tasks_fit(table, resolved)
    check_fill_size(resolved, table.total_gpus * FULL_GPU_MILLI, tune)


def run_modes(
    tables: Mapping[str, NodeTable],
    tasks: TaskTable,
    placement: str,
    *,
    seed: int,
    tune: float,
    progress: Callable[[str], Progress | None] | None = None,
) -> dict[str, FillResult]:
    """Check every mode (:func:`check_mode`), then run each (same tasks, seed, tuning and placement); nothing is
    written. ``progress(mode)`` gives the callback of that mode's run."""
    for table in tables.values():
        check_mode(table, tasks, tune)
    return {
        mode: run_fill(
            table,
            tasks,
            placement,
            seed=seed,
            tune=tune,
            sharing=mode,
            progress=progress(mode) if progress is not None else None,
        )
        for mode, table in tables.items()
    }


def check_out(out: Path, modes: Sequence[str]) -> None:
    """Before any work, creating nothing but ``OUT``'s parent: ``OUT`` can be a directory and is not a single run's
    result directory, and each ``OUT/<mode>`` may be replaced."""
    from gpuweave.files import prepare_output_dir
    from gpuweave.staging import check_replaceable

    prepare_output_dir(out, field="out", create=False)
    if not out.exists():
        return  # a new OUT: nothing in it to check
    if (out / "summary.json").is_file():
        raise InputError(
            "is one run's result directory; several --sharing modes write a directory per mode and a report: "
            "choose another --out",
            file=out,
            field="out",
        )
    for mode in modes:
        check_replaceable(out / mode)
    prepare_output_dir(out / REPORT_DIR, field="out", create=False)


def write_modes(out: Path, results: Mapping[str, FillResult], tasks: TaskTable, config: dict[str, Any]) -> list[Path]:
    """The previous report's page removed, then each mode's result directory ``out/<mode>`` (module docstring,
    step 3); ``config`` is what every mode shares. Returns the directories, in the modes' order."""
    (out / REPORT_DIR / "report.html").unlink(missing_ok=True)
    modes = list(results)
    written = []
    for mode, result in results.items():
        run_config = {**config, "sharing": mode, "compared_modes": modes}
        written.append(write_fill_result(out / mode, result, tasks, run_config))
    return written
