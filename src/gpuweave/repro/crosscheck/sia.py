"""Crosscheck against Sia's simulator: our counterparts of its policies on its workloads, beside its own results.

Problem: show how far gpuweave's counterpart of a policy in Sia's simulator (siasosp23/artifacts@aaf7a0d,
``sia-simulator/``; Jayaram Subramanya et al., SOSP'23 sec. 6) lands from that simulator's own numbers. ``data_dir``
is laid out like the shared ``sia-reference`` folder:

- ``traces/<app>/``: the applications' per-GPU-type tables, read as Sia's job model (:mod:`gpuweave.workload.sia`);
- ``workloads/<trace>/<workload>.csv``: the workloads (``name,time,application,num_replicas,batch_size``);
- ``results.csv``: the peer's results, one row per (trace, workload, policy) with ``avg_jct_s``, ``p99_jct_s``,
  ``makespan_s``, ``avg_restarts`` and ``wall_s`` (optional columns may be empty).

The cluster is Sia's default (``simulator_config.py``): 6 ``aws`` nodes of 4 T4, 2 ``dgx-ext`` nodes of 8 A100-40GB,
3 ``rtx`` nodes of 8 RTX2080Ti. For every row whose policy has a counterpart here (:data:`COUNTERPARTS`: Sia's
``gavel`` -> ``gavel-sia``, rigid jobs; Sia's ``sia`` -> ``sia`` with the flags of Sia's runs, elastic jobs that
pick their batches), the workload is imported and simulated on that cluster with the clock of Sia's job model
(each job on its type's tables, Sia's re-scale times) and compared: average JCT, p99 JCT (Sia's
``sorted(jcts)[int(0.99 n)]``), makespan (last completion - first arrival) and restarts per job as rows with the
peer's value in ``paper``, and our wall time beside the peer's. A policy without a counterpart, or a row of another
of Sia's scripts than ``multi_simulator.py`` (its ``entry_point``: ``multi_simulator_unaware.py`` is the
heterogeneity-unaware simulator), gets one row without ours. Each run's per-job JCTs are written to
``<policy>-<trace>-<workload>-jobs.csv`` in ``out_dir``.

Complexity: one simulation per (policy, workload): one LP per 360 s round (gavel, 300-500 rounds) or one MILP
per 60 s round (sia, about 800 rounds).
"""

from __future__ import annotations

import csv
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuweave.checks import DURATION, Range, parse
from gpuweave.cluster.book import Segment
from gpuweave.cluster.config import SimulationConfig
from gpuweave.cluster.run import PreparedRun, gpu_power, simulate
from gpuweave.errors import InputError, InvalidDecisionError
from gpuweave.files import csv_rows, safe_child, safe_name
from gpuweave.hardware.cluster_spec import Node
from gpuweave.repro.crosscheck import selected
from gpuweave.repro.registry import ComparisonRow
from gpuweave.workload.job import Job
from gpuweave.workload.sia import SIA_GPU_TYPES, SiaJobModel, load_sia_job_model
from gpuweave.workload.traces.pollux import read_pollux_workload
from gpuweave.workload.traces.schema import validate_frame

SIA_CLUSTER = (("aws", 6), ("dgx-ext", 2), ("rtx", 3))  # simulator_config.py's cluster_nnodes, in its order
ENTRY_POINTS = ("multi_simulator.py",)  # the simulator scripts of Sia's whose runs the counterparts reproduce
RESULT_COLUMNS = ("trace", "workload", "policy", "avg_jct_s", "makespan_s")
REAL = Range("", -1e6, 1e6)
SCALE = Range("", 1, 64, integer=True)
METRICS = (("avg JCT", "avg_jct_s", "s"), ("p99 JCT", "p99_jct_s", "s"), ("makespan", "makespan_s", "s"))


@dataclass(frozen=True, slots=True)
class Counterpart:
    """Our policy and options standing for one of Sia's simulator's policies, and its round length there."""

    policy: str
    options: dict[str, object]
    round_length: float
    elastic: bool = False  # the jobs may take any GPU count (Sia's own: the trace's count is not used)


COUNTERPARTS: dict[str, Counterpart] = {
    "gavel": Counterpart("gavel-sia", {}, 360.0),
    "sia": Counterpart("sia", {"p": -0.5, "lambda_a": 0.01, "lambda_n": 1.1}, 60.0, elastic=True),
}


@dataclass(frozen=True, slots=True)
class SiaRun:
    """One run of ours: per-job arrival and JCT (s), restarts per job as Sia counts them (:func:`sia_restarts`),
    wall seconds."""

    arrival: dict[str, float]
    jct: dict[str, float]
    restarts: float
    wall_s: float

    def metrics(self) -> dict[str, float]:
        jcts = sorted(self.jct.values())
        ends = [self.arrival[j] + t for j, t in self.jct.items()]
        return {
            "avg JCT": float(np.mean(jcts)),
            "p99 JCT": float(jcts[int(0.99 * len(jcts))]),
            "makespan": float(max(ends) - min(self.arrival.values())),
            "restarts per job": self.restarts,
        }


def sia_nodes(cluster: tuple[tuple[str, int], ...] = SIA_CLUSTER) -> list[Node]:
    """Sia's cluster as nodes: per Sia type, its nodes of the mapped catalog GPU, in Sia's order."""
    nodes: list[Node] = []
    for sia_type, count in cluster:
        model, per_node = SIA_GPU_TYPES[sia_type]
        for k in range(count):
            nodes.append(Node(len(nodes), f"{sia_type}-{k}", model, per_node, 0.0, 1.0))
    return nodes


def run_ours(workload: Path, data_dir: Path, counterpart: Counterpart, cluster_scale: int = 1) -> SiaRun:
    """Import ``workload``, simulate it with ``counterpart`` on Sia's cluster (each type's nodes times
    ``cluster_scale``, Sia's ``--cluster_scale``) and job model."""
    types = tuple(t for t, _ in SIA_CLUSTER)
    model = load_sia_job_model(data_dir / "traces", types)
    frame = validate_frame(read_pollux_workload(workload, model, fractional_time=True), file=workload, profiles=model)
    jobs = [
        Job(
            job_id=str(r.job_id),
            arrival=float(r.arrival),
            num_gpus=int(r.num_gpus),
            work=float(r.work),
            job_type=str(r.job_type),
            attrs={"submit_order": int(r.submit_order), **({"moldable": True} if counterpart.elastic else {})},
        )
        for r in frame.itertuples()
    ]
    nodes = sia_nodes(tuple((t, n * cluster_scale) for t, n in SIA_CLUSTER))
    config = SimulationConfig(
        policy=counterpart.policy,
        policy_options=dict(counterpart.options),
        round_length=counterpart.round_length,
        restart_delay=0.0,  # the clock charges Sia's re-scale times itself
        start_delay=0.0,
    )
    prepared = PreparedRun(config, nodes, jobs, model, gpu_power(nodes))
    started = time.perf_counter()
    records = simulate(config, prepared=prepared)
    wall = time.perf_counter() - started
    restarts = sia_restarts(records.segments, nodes, len(records.jobs), model)
    arrival = {js.job.job_id: js.job.arrival for js in records.jobs}
    jct = {js.job.job_id: js.end - js.job.arrival for js in records.jobs if js.end is not None}
    return SiaRun(arrival, jct, restarts, wall)


# Sia's multi_simulator.py command line: the flags a results row may carry, as argparse reads them (a unique
# prefix stands for the flag: Sia's own script writes --project_throughput)
VALUE_FLAGS = ("policy", "policy_p_val", "mip_lambda_a", "mip_lambda_n", "interval", "cluster_scale", "output")
SWITCHES = ("project_throughputs", "share_max_replicas", "disable_bsz_tuning", "debug")
NOT_REPRODUCED = ("disable_bsz_tuning", "oracle_num_nodes", "oracle_num_replicas")
SIA_DEFAULTS = {"p": 0.5, "lambda_a": None, "lambda_n": None}  # argparse's defaults when the flags leave them out


def parse_flags(text: str, *, file: Path, row: int) -> dict[str, str | bool]:
    """``{flag: value or True}`` of a results row's ``flags`` (``--name=value``, ``--name value``, ``--switch``); an
    unknown or ambiguous flag as ``"?name"``; InputError naming the row for a value flag without its value."""
    known = (*VALUE_FLAGS, *SWITCHES, "oracle_num_nodes", "oracle_num_replicas")
    tokens = shlex.split(text)
    out: dict[str, str | bool] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            continue  # the workload path
        name, eq, value = token[2:].partition("=")
        matches = [k for k in known if k == name] or [k for k in known if k.startswith(name)]
        if len(matches) != 1:
            out["?" + name] = True  # a flag this reading does not know: the row is listed without ours
            continue
        flag = matches[0]
        if flag in SWITCHES:
            out[flag] = True
            continue
        if not eq:
            if i >= len(tokens):
                raise InputError(f"flag --{flag} needs a value", file=file, row=row, field="flags")
            value, i = tokens[i], i + 1
        out[flag] = value
    return out


def counterpart_for(row: dict[str, str], file: Path) -> tuple[Counterpart, int] | str:
    """Our counterpart of a results row and its cluster scale, or why it has none (a note for the row)."""
    base = COUNTERPARTS.get(row["policy"])
    if base is None:
        return f"no gpuweave counterpart of Sia's {row['policy']!r} (known: {', '.join(COUNTERPARTS)})"
    entry = row.get("entry_point", "").strip()
    if entry and Path(entry).name not in ENTRY_POINTS:
        # multi_simulator_unaware.py runs on another cluster model (virtual nodes of the smallest node's GPUs,
        # allocations repaired to one type afterwards): our counterparts are of multi_simulator.py's runs
        return f"runs of Sia's {Path(entry).name} are not reproduced here (only {', '.join(ENTRY_POINTS)})"
    number_ = int(row["_row"])
    if not row.get("flags"):
        return base, 1
    flags = parse_flags(row["flags"], file=file, row=number_)
    lost = [f.lstrip("?") for f in flags if f in NOT_REPRODUCED or f.startswith("?")]
    if lost:
        return f"--{lost[0]} of Sia's simulator is not reproduced here"
    if flags.get("policy", row["policy"]) != row["policy"]:
        raise InputError("the flags name another policy than the row", file=file, row=number_, field="flags")
    options = dict(base.options)
    if base.policy == "sia":  # the row's run: Sia's defaults where its flags say nothing
        options = {
            "p": float(
                parse(str(flags.get("policy_p_val", SIA_DEFAULTS["p"])), REAL, file=file, row=number_, field="flags")
            ),
            "project_throughputs": bool(flags.get("project_throughputs", False)),
            "share_max_replicas": bool(flags.get("share_max_replicas", False)),
        }
        for flag, key in (("mip_lambda_a", "lambda_a"), ("mip_lambda_n", "lambda_n")):
            if flag in flags:
                options[key] = float(parse(str(flags[flag]), REAL, file=file, row=number_, field="flags"))
            else:  # Sia's program then uses -0.02 and -1 ("if self.lambda_n else -1")
                options[key] = -0.02 if key == "lambda_a" else -1.0
    interval = base.round_length
    if "interval" in flags:
        interval = float(parse(str(flags["interval"]), DURATION, file=file, row=number_, field="flags"))
    scale = 1
    if "cluster_scale" in flags:
        scale = int(parse(str(flags["cluster_scale"]), SCALE, file=file, row=number_, field="flags"))
    return Counterpart(base.policy, options, interval, base.elastic), scale


def sia_restarts(segments: list[Segment], nodes: list[Node], jobs: int, model: SiaJobModel) -> float:
    """Restarts per job as Sia counts them: every placement after a job's first, except one that follows the last
    at once on the same GPU type with the same GPUs per node, as Sia runs it (``model.physical_counts``; the book
    counts every move)."""
    last: dict[str, tuple[float, str, tuple[int, ...]]] = {}
    count = 0
    for seg in sorted(segments, key=lambda s: (s.start, s.job_id)):
        gpu_model = nodes[seg.placement[0][0]].gpu_model
        shape = (gpu_model, model.physical_counts(gpu_model, tuple(k for _, k in seg.placement)))
        before = last.get(seg.job_id)
        if before is not None and (before[0] != seg.start or before[1:] != shape):
            count += 1
        last[seg.job_id] = (seg.end, *shape)
    return count / jobs if jobs else 0.0


def _peer_rows(data_dir: Path) -> list[dict[str, str]]:
    path = data_dir / "results.csv"
    if not path.is_file():
        raise InputError("not a Sia data directory: expected results.csv beside traces/ and workloads/", file=data_dir)
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv_rows(fh, file=path)
        header = [h.strip() for h in next(reader, [])]
        missing = [c for c in RESULT_COLUMNS if c not in header]
        if missing:
            raise InputError(f"missing column '{missing[0]}'", file=path, row=0, field=missing[0])
        rows = []
        for number_, record in enumerate(reader, start=1):
            if not record:
                continue
            row = dict(zip(header, (cell.strip() for cell in record)))
            for column in ("trace", "workload", "policy"):
                for part in row.get(column, "").split("/") if column == "trace" else [row.get(column, "")]:
                    safe_name(part, suffix=".csv", file=path, field=column)
            for _, column, _ in METRICS:
                if row.get(column):
                    parse(row[column], DURATION, file=path, row=number_, field=column)
            row["_row"] = str(number_)
            rows.append(row)
    if not rows:
        raise InputError("no results", file=path)
    return rows


def crosscheck_sia(
    data_dir: Path,
    out_dir: Path,
    workloads: str | None = None,
    policies: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[ComparisonRow]:
    """Every (trace, workload, policy) row of ``data_dir``'s results.csv (module docstring), ours beside Sia's.
    ``policies`` (Sia's names) and ``workloads`` (``<trace>/<workload>`` or ``<workload>``) pick which run;
    ``progress(rows done, rows in all)`` after each."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    if not (data_dir / "traces").is_dir():
        raise InputError("not a Sia data directory: expected traces/, workloads/ and results.csv", file=data_dir)
    peer = _peer_rows(data_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = None if not policies else selected(policies, sorted({r["policy"] for r in peer}), "policy", "results.csv")
    names = sorted({f"{r['trace']}/{r['workload']}" for r in peer} | {r["workload"] for r in peer})
    wanted = None if not workloads else selected(workloads, names, "workload", "results.csv")
    picked = [
        row
        for row in peer
        if (chosen is None or row["policy"] in chosen)
        and (wanted is None or f"{row['trace']}/{row['workload']}" in wanted or row["workload"] in wanted)
    ]
    rows: list[ComparisonRow] = []
    for done, row in enumerate(picked):
        if progress is not None:
            progress(done, len(picked))
        name = f"{row['trace']}/{row['workload']}"
        experiment = f"sia {row['policy']} {name}"
        found = counterpart_for(row, data_dir / "results.csv")
        if isinstance(found, str):
            peer_avg = float(row["avg_jct_s"]) if row.get("avg_jct_s") else None
            rows.append(ComparisonRow(experiment, "avg JCT", peer_avg, None, "s", found))
            continue
        counterpart, scale = found
        folder = data_dir / "workloads"
        for part in row["trace"].split("/"):
            folder = safe_child(folder, part, field="trace")
        path = safe_child(folder, row["workload"], suffix=".csv", field="workload")
        if not path.is_file():
            raise InputError(f"results.csv names workload {name!r}, which has no CSV", file=path)
        try:
            ours = run_ours(path, data_dir, counterpart, scale)
        except InvalidDecisionError as exc:  # the row's settings leave jobs waiting forever (Sia's would not end)
            peer_avg = float(row["avg_jct_s"]) if row.get("avg_jct_s") else None
            rows.append(ComparisonRow(experiment, "avg JCT", peer_avg, None, "s", f"ours did not finish: {exc}"))
            continue
        stem = f"{row['policy']}-{row['trace'].replace('/', '-')}-{row['workload']}"
        _write_jobs(safe_child(out_dir, stem, suffix="-jobs.csv", field="workload"), ours)
        rows.extend(_compare(experiment, row, ours, counterpart))
    if progress is not None:
        progress(len(picked), len(picked))
    return rows


def _compare(experiment: str, peer: dict[str, str], ours: SiaRun, counterpart: Counterpart) -> list[ComparisonRow]:
    mine = ours.metrics()
    options = ", ".join(f"{k}={v}" for k, v in counterpart.options.items())
    note = (
        f"ours: {counterpart.policy}{f' ({options})' if options else ''}, round {counterpart.round_length:g} s, "
        f"on Sia's cluster and job model{', elastic jobs' if counterpart.elastic else ''}"
    )
    rows = []
    for metric, column, unit in METRICS:
        value = float(peer[column]) if peer.get(column) else None
        rows.append(ComparisonRow(experiment, metric, value, mine[metric], unit, note))
    restarts = float(peer["avg_restarts"]) if peer.get("avg_restarts") else None
    rows.append(
        ComparisonRow(
            experiment,
            "restarts per job",
            restarts,
            mine["restarts per job"],
            "",
            "as Sia counts them: a move to the same GPUs per node on the same type is none",
        )
    )
    wall = float(peer["wall_s"]) if peer.get("wall_s") else None
    rows.append(ComparisonRow(experiment, "wall time", wall, ours.wall_s, "s", "the peer's on this machine type"))
    return rows


def _write_jobs(path: Path, ours: SiaRun) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["job_id", "arrival", "ours_jct"])
        for job in sorted(ours.jct, key=lambda j: (ours.arrival[j], j)):
            writer.writerow([job, f"{ours.arrival[job]:g}", f"{ours.jct[job]:.10g}"])
