"""Crosscheck against FGD's simulator: our placements in FGD's experiment, beside FGD's own expected results.

Problem: show how far gpuweave's FGD and its five baselines (:mod:`gpuweave.cluster.placements`) land from FGD's
simulator (hkust-adsl/kubernetes-scheduler-simulator@8f3d641; Weng et al., USENIX ATC'23, sec. 5) on the same
openb workloads. ``data_dir`` holds ``csv/openb_node_list_gpu_node.csv``, ``csv/openb_pod_list_<workload>.csv`` and
FGD's ``analysis_allo_discrete.csv`` (optionally ``analysis_frag_ratio_discrete.csv``), as the repository's
``data/`` and ``experiments/analysis/expected_results/`` lay them out; the result files may also sit in a sibling
``fgd-reference/`` folder (the project's shared data keeps them there).

For every (workload, policy) the result file holds (or the subset ``workloads``/``policies``/``seeds`` asks for), FGD's
experiment (:mod:`gpuweave.cluster.sharing.experiment`) runs once per seed the file has for it; rows compare the mean
over those seeds at arrived load 50, 80, 90, 100, 110, 120 and 130 %: allocation (% of GPUs, counting fractions) and,
when FGD's file is there, the fragmentation ratio (% of idle GPU share). Seeds are matched by number only: our
generator is not Go's, so each side's seed mean is what is compared. Every run's curves go to ``curves.csv``.

FGD's result files are read through the project's checked readers: a missing column, a NUL byte, a seed that is
not a whole number, a value that is NaN, negative or above 100 (both files hold percentages) or a (workload, policy,
seed) given twice is one InputError naming the file, the row and the field; an empty cell is a load FGD did not
reach. A workload name becomes a file name only through :func:`~gpuweave.files.safe_child`.

Complexity: one experiment per (workload, policy, seed), 3-10 s each on openb's 1,213 nodes.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from gpuweave.checks import SEED, Range
from gpuweave.cluster.sharing.experiment import FillResult, run_fill
from gpuweave.errors import InputError
from gpuweave.files import safe_child, safe_name
from gpuweave.repro.crosscheck import seed_set, selected
from gpuweave.repro.registry import ComparisonRow
from gpuweave.workload.tasks import TaskTable
from gpuweave.workload.traces._tables import ROW, numeric_column, read_csv_strings, require_columns
from gpuweave.workload.traces.openb import read_openb_node_table, read_openb_tasks

# FGD's result files name policies "01-Random" ... "06-FGD"; ours in the placement registry
COUNTERPARTS = {
    "Random": "random",
    "DotProd": "dotprod",
    "GpuClustering": "gpu-clustering",
    "GpuPacking": "gpu-packing",
    "BestFit": "best-fit",
    "FGD": "fgd",
}
COMPARED_LOADS = (50, 80, 90, 100, 110, 120, 130)
NODE_LIST = "openb_node_list_gpu_node.csv"
ALLOCATION_FILE = "analysis_allo_discrete.csv"
RATIO_FILE = "analysis_frag_ratio_discrete.csv"
WORKLOAD_PREFIX = "openb_pod_list_"
LOADS = range(131)  # FGD's analysis columns "0" ... "130": % of the cluster's GPUs requested
#: an allocation or fragmentation ratio in % (a hair above 100 for the float sums of FGD's analysis)
PERCENT = Range("%", 0.0, 100.0 + 1e-6)

Curves = dict[tuple[str, str], dict[int, list[float]]]  # (workload, FGD policy) -> seed -> values at 0..130


def _result_file(data_dir: Path, name: str) -> Path | None:
    for folder in (data_dir, data_dir.parent / "fgd-reference"):
        if (folder / name).is_file():
            return folder / name
    return None


def read_expected(path: Path) -> Curves:
    """FGD's ``analysis_*_discrete.csv``: per (workload, policy without its number) and seed, the values at 0..130
    (NaN where the cell is empty: a load that run did not reach); checked as the module docstring says."""
    frame = read_csv_strings(path, what="rows")
    require_columns(frame, ("workload", "sc_policy", "seed", "130"), file=path, what="FGD's result file")
    seeds = numeric_column(frame, "seed", file=path, unit="seed", integer=True, minimum=SEED.lo, maximum=SEED.hi)
    columns = [
        numeric_column(frame, str(k), file=path, unit="%", required=False, minimum=PERCENT.lo, maximum=PERCENT.hi)
        if str(k) in frame.columns
        else None
        for k in LOADS
    ]
    nan = float("nan")
    values_at = [column.tolist() if column is not None else [nan] * len(frame) for column in columns]
    curves: Curves = {}
    for position, (workload, sc_policy, seed, row) in enumerate(
        zip(frame["workload"], frame["sc_policy"], seeds.astype("int64").tolist(), frame[ROW])
    ):
        workload = workload.strip().removeprefix(WORKLOAD_PREFIX)
        safe_name(workload, suffix=".csv", file=path, row=int(row), field="workload")  # it names the pod list
        policy = sc_policy.strip().split("-", 1)[-1]
        if not policy:
            raise InputError(
                "empty value; expected FGD's policy, e.g. 06-FGD", file=path, row=int(row), field="sc_policy"
            )
        by_seed = curves.setdefault((workload, policy), {})
        if seed in by_seed:
            raise InputError(f"seed {seed} of {workload} {policy} appears twice", file=path, row=int(row), field="seed")
        by_seed[seed] = [values[position] for values in values_at]
    return curves


def _mean(values: list[float | None]) -> float | None:
    finite = [v for v in values if v is not None and v == v]
    return sum(finite) / len(finite) if finite else None


def crosscheck_fgd(
    data_dir: Path,
    out_dir: Path,
    *,
    workloads: str | None = None,
    policies: str | None = None,
    seeds: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[ComparisonRow]:
    """Rows of ours beside FGD's (see module docstring); ``workloads``/``policies``/``seeds``: comma lists;
    ``progress(runs done, runs in all)`` after each experiment."""
    wanted_seeds = seed_set(seeds)
    allocation_file = _result_file(data_dir, ALLOCATION_FILE)
    if allocation_file is None:
        raise InputError(f"no {ALLOCATION_FILE} in the data directory (or its fgd-reference/ sibling)", file=data_dir)
    expected = read_expected(allocation_file)
    ratio_file = _result_file(data_dir, RATIO_FILE)
    expected_ratio = read_expected(ratio_file) if ratio_file is not None else {}
    csv_dir = data_dir / "csv" if (data_dir / "csv").is_dir() else data_dir
    nodes = read_openb_node_table(csv_dir / NODE_LIST)
    known_workloads = sorted({w for w, _ in expected})
    chosen_workloads = selected(workloads, known_workloads, "workload", "FGD's result file")
    known_policies = [p for p in COUNTERPARTS if any(p == q for _, q in expected)]
    chosen_policies = selected(policies, known_policies, "policy", "FGD's result file", COUNTERPARTS)
    plan = [
        (
            workload,
            policy,
            sorted(s for s in expected.get((workload, policy), {}) if wanted_seeds is None or s in wanted_seeds),
        )
        for workload in chosen_workloads
        for policy in chosen_policies
    ]
    for workload in chosen_workloads:  # every pod list there before the first run
        pod_list = _pod_list(csv_dir, workload, allocation_file)
        if not pod_list.is_file():
            raise InputError(f"FGD's results name workload {workload!r} but its pod list is missing", file=pod_list)
    total, done = sum(len(run_seeds) for _, _, run_seeds in plan), 0
    rows: list[ComparisonRow] = []
    runs: list[tuple[str, FillResult]] = []
    tasks_of: dict[str, TaskTable] = {}
    for workload, policy, run_seeds in plan:
        if not run_seeds:
            continue
        if workload not in tasks_of:
            tasks_of[workload] = read_openb_tasks(_pod_list(csv_dir, workload, allocation_file))
        ours = []
        for seed in run_seeds:
            result = run_fill(nodes, tasks_of[workload], COUNTERPARTS[policy], seed=seed)
            ours.append(result)
            runs.append((workload, result))
            done += 1
            if progress is not None:
                progress(done, total)
        theirs = expected[(workload, policy)]
        rows += _compare(workload, policy, run_seeds, ours, theirs, expected_ratio.get((workload, policy), {}))
    _write_curves(out_dir / "curves.csv", runs, nodes.source)
    return rows


def _pod_list(csv_dir: Path, workload: str, source: Path) -> Path:
    """The pod list of a workload FGD's result file ``source`` names, inside ``csv_dir``."""
    return safe_child(csv_dir, WORKLOAD_PREFIX + workload, suffix=".csv", file=source, field="workload")


def _compare(
    workload: str,
    policy: str,
    seeds: list[int],
    ours: list[FillResult],
    theirs: dict[int, list[float]],
    theirs_ratio: dict[int, list[float]],
) -> list[ComparisonRow]:
    experiment = f"{workload} {policy}"
    note = f"mean over seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}), each side its own generator"
    rows = []
    for load in COMPARED_LOADS:
        paper = _mean([theirs[s][load] for s in seeds])
        mine = _mean([r.curves["allocation"][load] for r in ours])
        rows.append(ComparisonRow(experiment, f"allocation at {load}% load", paper, mine, "% of GPUs", note))
    for load in COMPARED_LOADS:
        if theirs_ratio:
            paper = _mean([theirs_ratio[s][load] for s in seeds if s in theirs_ratio])
            mine = _mean([r.curves["fragment_ratio"][load] for r in ours])
            rows.append(
                ComparisonRow(experiment, f"fragmentation ratio at {load}% load", paper, mine, "% of idle", note)
            )
    return rows


def _write_curves(path: Path, runs: list[tuple[str, FillResult]], source: str) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(
            ["workload", "placement", "seed", "tune", "load", "allocation", "fragment", "fragment_ratio", "nodes"]
        )
        for workload, run in runs:
            c = run.curves
            for i, load in enumerate(c["load"]):
                values = [c[name][i] for name in ("allocation", "fragment", "fragment_ratio")]
                writer.writerow(
                    [workload, run.placement, run.seed, run.tune, int(load or 0)]
                    + ["" if v is None else f"{v:.4f}" for v in values]
                    + [source]
                )
