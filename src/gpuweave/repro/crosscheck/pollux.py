"""Crosscheck against Pollux's simulator: our policies on Pollux's workloads, beside Pollux's own results.

Problem: show how far gpuweave's counterpart of a policy in Pollux's simulator (petuum/adaptdl, branch
osdi21-artifact; Qiao et al., OSDI'21 sec. 5) lands from that simulator's own numbers. ``data_dir`` is laid out
like the artifact's ``simulator/`` folder:

- ``traces/<app>/``: the applications' tables, read as Pollux's job model (:mod:`gpuweave.workload.pollux`);
- ``workloads/*.csv`` (load 1.0) or ``workloads-<load>/*.csv``: the workloads (``name,time,application,...``);
- ``<policy>-<load>-results.json``, in ``data_dir`` or a ``results-<load>/`` folder in it, or the artifact's own
  ``results-jobload/<policy>-<load>/summary.json`` (so ``--data`` may be the artifact's ``simulator/`` folder as it
  is): ``{"jcts": {workload: {job: JCT s}}, "avgs": {...}}``, the peer's results.

For every results file whose policy has a counterpart here (:data:`COUNTERPARTS`; Pollux's Tiresias ->
``tiresias`` with ``preset: pollux``; Pollux's Optimus -> ``optimus`` on elastic jobs, each job's most GPUs in the
trace's ``moldable`` column) and every workload it holds, the workload is imported, simulated on the
bundled ``pollux-64`` cluster with Pollux's 30 s re-scale delay on every allocation, and compared: average and
median JCT and makespan (last completion - first arrival) as rows with the peer's value in ``paper``, and the
per-job Pearson and Spearman correlations of the JCTs. A policy without a counterpart gets one row without ours.
Each run's per-job JCTs are written to ``<policy>-<load>-<workload>-jobs.csv`` in ``out_dir``, the trace it ran to
``<policy>-<load>-<workload>.trace.csv``.

The peer's results are checked before anything runs: a JCT that is not a positive number of seconds (a string,
``true``, a negative or zero value), a workload without jobs or a load that is not a number is one InputError naming
the file and the field (``jcts.<workload>.<job>``); a workload name becomes a file name only through
:func:`~gpuweave.files.safe_child`, so a crafted ``../../x`` neither reads nor writes outside its folder.

Complexity: one simulation per (policy, workload), about a second for Pollux's 160-job workloads.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuweave.checks import DURATION, Range, number, parse
from gpuweave.cluster.config import SimulationConfig
from gpuweave.cluster.run import simulate
from gpuweave.errors import InputError
from gpuweave.files import load_json, safe_child, safe_name
from gpuweave.repro.crosscheck import seed_set, selected
from gpuweave.repro.crosscheck.correlation import PEARSON, SPEARMAN, per_job_correlations
from gpuweave.repro.registry import ComparisonRow
from gpuweave.workload.pollux import job_type_name, load_pollux_job_model
from gpuweave.workload.traces.pollux import read_pollux_workload
from gpuweave.workload.traces.schema import validate_frame, write_frame

POLLUX_CLUSTER = "pollux-64"
RESCALE_DELAY = 30.0  # s, charged by Pollux's simulator on every allocation, the first included
RESULTS_NAME = re.compile(r"^(?P<policy>[A-Za-z0-9_]+)-(?P<load>[0-9.]+)-results\.json$")
LOAD = Range("", 0.0, 1e3, lo_open=True)  # the job load of a results file (1.0 = the workloads as given)


@dataclass(frozen=True, slots=True)
class Counterpart:
    """Our policy and options standing for one of Pollux's simulator's policies; ``elastic``: the jobs may take
    any GPU count up to their most (the trace's ``moldable`` column), the batch size staying the trace's."""

    policy: str
    options: dict[str, object]
    elastic: bool = False
    adaptive: bool = False  # the jobs pick their batches (Pollux): job types name the largest batch they may reach
    randomised: bool = False  # its runs differ by seed: one run per --seeds entry, per-job JCTs averaged
    by_default: bool = True  # run without --policies (Pollux's own takes about 10 minutes a workload)


COUNTERPARTS: dict[str, Counterpart] = {
    "tiresias": Counterpart("tiresias", {"preset": "pollux"}),
    "optimus": Counterpart("optimus", {}, elastic=True),
    "pollux": Counterpart("pollux", {}, elastic=True, adaptive=True, randomised=True, by_default=False),
}


@dataclass(frozen=True, slots=True)
class JobTimes:
    """Per-job arrival and JCT (s), keyed by job id."""

    arrival: dict[str, float]
    jct: dict[str, float]

    def metrics(self) -> dict[str, float]:
        jcts = np.array(list(self.jct.values()), dtype=float)
        ends = [self.arrival[j] + t for j, t in self.jct.items()]
        return {
            "avg JCT": float(jcts.mean()),
            "median JCT": float(np.median(jcts)),
            "makespan": float(max(ends) - min(self.arrival[j] for j in self.jct)),
        }


def _peer_results(data_dir: Path) -> list[tuple[str, str, dict[str, dict[str, float]]]]:
    """``(policy, load, {workload: {job: JCT}})`` of every results file in ``data_dir``, checked (see the module
    docstring)."""
    found = []
    paths = [*data_dir.glob("*-results.json"), *data_dir.glob("results-*/*-results.json")]
    # the artifact's own layout: results-jobload/<policy>-<load>/summary.json
    paths += [p for p in data_dir.glob("results-jobload/*/summary.json") if RESULTS_NAME.match(_artifact_name(p))]
    for path in sorted(paths):
        match = RESULTS_NAME.match(path.name if path.name != "summary.json" else _artifact_name(path))
        if match is None:
            continue
        parse(match["load"], LOAD, file=path, field="load (in the file name)")
        data = load_json(path, what="Pollux results file")
        jcts = data.get("jcts") if isinstance(data, dict) else None
        if not isinstance(jcts, dict):
            raise InputError('expected JSON with "jcts": {workload: {job: JCT}}', file=path)
        found.append((match["policy"], match["load"], _checked_jcts(jcts, path)))
    if not found:
        raise InputError("no <policy>-<load>-results.json in the Pollux data directory", file=data_dir)
    return found


def _artifact_name(summary: Path) -> str:
    """``<policy>-<load>-results.json`` for the artifact's ``results-jobload/<policy>-<load>/summary.json``."""
    return f"{summary.parent.name}-results.json"


def _checked_jcts(jcts: dict, path: Path) -> dict[str, dict[str, float]]:
    """``{workload: {job: JCT s}}`` with every name a file-safe workload name and every JCT a positive number."""
    checked: dict[str, dict[str, float]] = {}
    for workload, by_job in jcts.items():
        field = f"jcts.{workload}"[:80]
        safe_name(workload, suffix=".csv", file=path, field=field)  # it names files
        if not isinstance(by_job, dict) or not by_job:
            raise InputError("expected {job: JCT in seconds} with at least one job", file=path, field=field)
        checked[workload] = {
            str(job): number(jct, DURATION, file=path, field=f"{field}.{job}"[:120]) for job, jct in by_job.items()
        }
    return checked


def _workloads_dir(data_dir: Path, load: str) -> Path:
    folder = data_dir / "workloads" if float(load) == 1.0 else safe_child(data_dir, f"workloads-{load}", field="load")
    if not folder.is_dir():
        raise InputError(f"no workloads for load {load}: expected the folder {folder.name}", file=data_dir)
    return folder


def run_ours(
    workload: Path, data_dir: Path, counterpart: Counterpart, out_dir: Path, name: str | None = None, seed: int = 0
) -> JobTimes:
    """Import ``workload``, simulate it with ``counterpart`` as Pollux's simulator would, return per-job times; the
    imported trace is ``<name>.trace.csv`` in ``out_dir`` (default: the workload's name)."""
    traces = data_dir / "traces"
    model = load_pollux_job_model(traces)
    frame = validate_frame(read_pollux_workload(workload, model), file=workload, profiles=model)
    if counterpart.adaptive:  # the trace's batch is not used: the job type names the largest, the agent picks
        apps = [model.app_of(job_type)[0] for job_type in frame["job_type"]]
        frame["job_type"] = [job_type_name(app.name, app.max_batch_size) for app in apps]
    if counterpart.elastic:
        frame["moldable"] = [model.max_replicas(job_type) for job_type in frame["job_type"]]
    trace = safe_child(out_dir, name or workload.stem, suffix=".trace.csv", file=workload, field="workload")
    write_frame(frame, trace)
    config = SimulationConfig(
        policy=counterpart.policy,
        policy_options=dict(counterpart.options),
        cluster=POLLUX_CLUSTER,
        trace=str(trace),
        profiles=str(traces),
        restart_delay=RESCALE_DELAY,
        start_delay=RESCALE_DELAY,
        seed=seed,
    )
    records = simulate(config)
    arrival = {js.job.job_id: js.job.arrival for js in records.jobs}
    return JobTimes(arrival, {js.job.job_id: js.end - js.job.arrival for js in records.jobs if js.end is not None})


def compare(experiment: str, ours: JobTimes, peer_jct: dict[str, float], note: str) -> list[ComparisonRow]:
    """Rows for one (policy, workload): the three metrics with the peer's in ``paper``, then the correlations."""
    unknown = sorted(set(peer_jct) - set(ours.jct))
    if unknown:
        raise InputError(f"{experiment}: the peer reports job(s) we did not complete, e.g. {unknown[0]!r}")
    peer = JobTimes(ours.arrival, {job: float(t) for job, t in peer_jct.items()})
    mine = JobTimes(ours.arrival, {job: ours.jct[job] for job in peer_jct})
    theirs, ours_metrics = peer.metrics(), mine.metrics()
    rows = [ComparisonRow(experiment, name, theirs[name], ours_metrics[name], "s", note) for name in theirs]
    jobs = sorted(peer_jct)
    pearson, spearman = per_job_correlations([mine.jct[j] for j in jobs], [peer.jct[j] for j in jobs])
    rows.append(ComparisonRow(experiment, PEARSON, None, pearson, "", f"JCTs of {len(jobs)} jobs"))
    rows.append(ComparisonRow(experiment, SPEARMAN, None, spearman, "", f"JCTs of {len(jobs)} jobs"))
    return rows


def _write_jobs(path: Path, ours: JobTimes, peer_jct: dict[str, float]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["job_id", "arrival", "peer_jct", "ours_jct"])
        for job in sorted(peer_jct, key=lambda j: (ours.arrival[j], j)):
            writer.writerow([job, f"{ours.arrival[job]:g}", f"{float(peer_jct[job]):g}", f"{ours.jct[job]:.10g}"])


def _mean_over_seeds(runs: list[JobTimes]) -> JobTimes:
    """Per-job JCTs averaged over the seeds' runs (jobs every run completed)."""
    common = set.intersection(*(set(r.jct) for r in runs))
    return JobTimes(runs[0].arrival, {job: float(np.mean([r.jct[job] for r in runs])) for job in sorted(common)})


def crosscheck_pollux(
    data_dir: Path,
    out_dir: Path,
    workloads: str | None = None,
    policies: str | None = None,
    seeds: str | None = None,
) -> list[ComparisonRow]:
    """Every (peer policy, workload) of ``data_dir`` (see the module docstring), ours beside Pollux's. ``policies``
    (Pollux's names, a comma list) picks which run (default: every counterpart but Pollux's own, which takes about
    10 minutes a workload); ``workloads`` which workloads; ``seeds`` the runs of a randomised policy (default 0)."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    if not (data_dir / "traces").is_dir():
        raise InputError("not a Pollux data directory: expected traces/, workloads/ and *-results.json", file=data_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = _peer_results(data_dir)
    peer = "the Pollux results files"
    chosen = None if not policies else selected(policies, sorted({p for p, _, _ in results}), "policy", peer)
    known_workloads = sorted({w for _, _, by_workload in results for w in by_workload})
    wanted = None if not workloads else selected(workloads, known_workloads, "workload", peer)
    seed_list = sorted(seed_set(seeds) or {0})
    rows: list[ComparisonRow] = []
    for policy, load, by_workload in results:
        if chosen is not None and policy not in chosen:
            continue
        counterpart = COUNTERPARTS.get(policy)
        if counterpart is None or (chosen is None and not counterpart.by_default):
            note = (
                f"no gpuweave counterpart of Pollux's {policy!r} (known: {', '.join(COUNTERPARTS)})"
                if counterpart is None
                else f"ours not run by default (about 10 minutes a workload): --policies {policy}"
            )
            rows.append(ComparisonRow(f"pollux {policy} (load {load})", "avg JCT", None, None, "s", note))
            continue
        rows.extend(_policy_rows(data_dir, out_dir, policy, load, by_workload, counterpart, wanted, seed_list))
    return rows


def _policy_rows(
    data_dir: Path,
    out_dir: Path,
    policy: str,
    load: str,
    by_workload: dict[str, dict[str, float]],
    counterpart: Counterpart,
    wanted: list[str] | None,
    seeds: list[int],
) -> list[ComparisonRow]:
    """One peer policy's rows: each workload run (per seed if randomised) and compared."""
    folder = _workloads_dir(data_dir, load)
    options = ", ".join(f"{k}={v}" for k, v in counterpart.options.items())
    elastic = ", elastic jobs" if counterpart.elastic else ""
    adaptive = ", adaptive batches" if counterpart.adaptive else ""
    seeds = seeds if counterpart.randomised else [0]
    note = (
        f"ours: {counterpart.policy}{f' ({options})' if options else ''} on {POLLUX_CLUSTER}{elastic}{adaptive}, "
        f"{RESCALE_DELAY:g} s per allocation"
    )
    rows: list[ComparisonRow] = []
    for workload, peer_jct in sorted(by_workload.items()):
        if wanted is not None and workload not in wanted:
            continue
        path = safe_child(folder, workload, suffix=".csv", field=f"jcts.{workload}")
        if not path.is_file():
            raise InputError(f"the results name workload {workload!r}, which has no CSV", file=path)
        stem = f"{policy}-{load}-{workload}"
        runs = [run_ours(path, data_dir, counterpart, out_dir, name=stem, seed=seed) for seed in seeds]
        ours = runs[0] if len(runs) == 1 else _mean_over_seeds(runs)
        jobs = safe_child(out_dir, stem, suffix="-jobs.csv", field=f"jcts.{workload}")
        _write_jobs(jobs, ours, peer_jct)
        extra = ""
        if len(runs) > 1:
            averages = [float(np.mean(list(r.jct.values()))) for r in runs]
            spread = ", ".join(f"{a:.1f}" for a in averages)
            extra = f"; per-job mean over seeds {','.join(map(str, seeds))} (avg JCT per seed: {spread} s)"
        rows.extend(compare(f"pollux {policy} (load {load}) {workload}", ours, peer_jct, note + extra))
    return rows
