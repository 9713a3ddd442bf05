"""Result files of a live run: the simulator's four files (same writers) plus ``live.csv``, and sim-vs-live JCT.

``jobs.csv``, ``allocations.csv``, ``timeseries.csv`` and ``summary.json`` come from
:func:`gpuweave.cluster.results.write_run`, so ``gpuweave report SIMRUN LIVERUN`` reads both; ``summary.json``
gains ``executor``, ``live: true``, the emulation note and the runtime's timings. ``live.csv`` has one row per
attempt: when the policy decided it and when its first step was reported (simulated seconds), the restart delay
between the two, the wall-clock launch latency, and the measured steps/s. ``measured_profiles.csv`` is the
profile table with the run's measured rates in it (:func:`gpuweave.live.rates.write_measured_profiles`). A run
whose jobs did not all finish exits :data:`INCOMPLETE_EXIT_CODE` with :func:`unfinished_line` last.
"""

from __future__ import annotations

import csv
import json
import shutil
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuweave.checks import RESULT, parse
from gpuweave.cluster.adaptive_clock import Adaptation
from gpuweave.cluster.metrics import summarize
from gpuweave.cluster.results import ADAPTATION_FILE, SHARING_FILE, fmt, write_run
from gpuweave.errors import InputError
from gpuweave.files import check_unique_columns, csv_rows, read_input_text
from gpuweave.live.attempts import attempt_cause, attempt_outcome
from gpuweave.live.channel import WorkerStatus
from gpuweave.live.rates import MEASURED_PROFILES, write_measured_profiles
from gpuweave.workload.goodput import efficiency, noise_scale

if TYPE_CHECKING:
    from gpuweave.live.runtime import LiveRuntime

LIVE_COLUMNS = [
    "job_id",
    "attempt",
    "kind",
    "placement",
    "gpu_models",
    "copies",
    "planned_start",
    "measured_start",
    "restart_delay_s",
    "launch_latency_wall_s",
    "steps",
    "steps_per_s",
    "emulated",
    "outcome",
    "cause",
    # Pollux's statistics (gpuweave.workload.goodput), from a worker that measures its gradients (the bundled torch
    # worker does): empty otherwise
    "batch_size",
    "grad_sqr",
    "grad_var",
    "noise_scale",
    "efficiency",
    "goodput",
]
RESULT_FILES = ("jobs.csv", "allocations.csv", "timeseries.csv", "summary.json")
#: exit status of a run that ended with jobs that did not finish (failed after their retries, or cancelled):
#: 0 is every job done, 2 bad input (nothing ran), 1 an internal error; docs/hardening.md, "Exit codes"
INCOMPLETE_EXIT_CODE = 3


def unfinished_line(summary: dict[str, Any], out: Path) -> str | None:
    """The last line of a run whose jobs did not all finish (it exits :data:`INCOMPLETE_EXIT_CODE`); None when
    every job finished."""
    jobs, completed = int(summary["jobs"]), int(summary["completed"])
    if completed >= jobs:
        return None
    return (
        f"{jobs - completed} of {jobs} jobs did not finish "
        f"(see {out / 'live.csv'} and failed_jobs in {out / 'summary.json'})"
    )


def write_live_run(runtime: LiveRuntime, out: Path) -> dict[str, Any]:
    book = runtime.book
    rec = book.records(runtime.start_time)
    rec.adaptations = adaptations(runtime)  # adaptive jobs' attempts: adaptation.csv, as a simulation writes it
    summary = summarize(rec)
    staging = out / ".results"
    if staging.exists():
        shutil.rmtree(staging)
    write_run(rec, summary, runtime.config.model_dump(mode="json"), staging, runtime.nodes)
    for name in RESULT_FILES:
        (staging / name).replace(out / name)
    for name in (SHARING_FILE, ADAPTATION_FILE):  # a shared run's share and fragmentation; adaptive jobs' batches
        if (staging / name).exists():
            (staging / name).replace(out / name)
    shutil.rmtree(staging)
    latencies = _write_live_csv(runtime, out / "live.csv")
    payload = json.loads((out / "summary.json").read_text())
    payload.update(
        {
            "executor": runtime.executor.name,
            "live": True,
            "emulated_gpus": runtime.executor.emulated,
            "note": (
                "GPUs declared, not detected: each worker paced its steps to the profile store's rate for its GPU type"
                if runtime.executor.emulated
                else "workers ran on the machine's GPUs"
            ),
            "failed_jobs": {j.js.job_id: j.failed for j in runtime.jobs.values() if j.failed},
            "runtime": _timings(runtime, latencies),
        }
    )
    if runtime.book.shared:
        payload["shares_moved_to_given_gpus"] = runtime.shares_moved
    stats = runtime.executor.stats()
    if stats:
        payload["executor_stats"] = stats
    if runtime.measured:
        entries = write_measured_profiles(runtime.base_profiles, runtime.measured, out / MEASURED_PROFILES)
        payload["measured_profiles"] = {"file": MEASURED_PROFILES, "measured_entries": entries}
    (out / "summary.json").write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return summary


def adaptations(runtime: LiveRuntime) -> list[Adaptation]:
    """The :class:`~gpuweave.cluster.adaptive_clock.Adaptation` rows of each ended attempt of an adaptive job that
    reported its batch and gradients: one per sample the runtime kept of its reports (every
    ``ADAPTATION_EVERY_S`` simulated seconds, as Pollux's simulator logs each interval), from the attempt's decision
    to its end or the next attempt's decision, whichever is first (simulated s; a simulation's interval ends at the
    reallocation too), each with the batch the agent picked, the throughput (samples/s) and the efficiency the
    workers reported then; the launch is the first row's idle part. An attempt with no sample (journalled by a
    runtime that was killed) is one row from its last report. Live jobs' epochs are not known: 0."""
    nodes, scale, rows = runtime.nodes, runtime.ex.time_scale, []
    for job in runtime.jobs.values():
        if job.js.job_id not in runtime.agents:
            continue
        # an attempt's rows end where the next one was decided: a report taken in the tick that decided the next
        # attempt (before this one was told to stop) would otherwise open a row on the next one's start
        nexts = [b.decided_sim for b in job.history[1:]] + [float("inf")]
        for a, next_decided in zip(job.history, nexts):
            status = a.copies[0].status if a.copies else None
            if status is None or a.ended_sim is None or a.first_step_wall is None or status.grad_sqr is None:
                continue
            if status.grad_var is None or status.batch_size <= 0:
                continue
            env = a.copies[0].workers[0].spec.env
            gpus = sum(k for _, k in a.placement)
            accum = int(env.get("GPUWEAVE_ACCUM_STEPS") or 0)
            first = runtime.start_time + (a.first_step_wall - runtime.wall0) * scale
            start, end = a.decided_sim, max(min(a.ended_sim, next_decided), a.decided_sim)
            samples = [(t, st) for t, st in a.samples if start < t < end] or [(start, status)]
            bounds = [start, *(t for t, _ in samples[1:]), end]
            model = "+".join(sorted({nodes[n].gpu_model for n, _ in a.placement}))
            for (_, sample), lo, hi in zip(samples, bounds, bounds[1:]):
                eff, throughput, _ = _speed(sample, sample.steps_per_s / scale)
                idle = min(max(0.0, first - start), hi - lo) if lo == start else 0.0
                rows.append(
                    Adaptation(
                        lo, hi, job.js.job_id, model, len(a.placement), gpus, sample.batch_size,
                        sample.batch_size // (gpus * (accum + 1)), accum, 0, idle, throughput, eff,
                    )
                )  # fmt: skip
    return rows


def _speed(status: WorkerStatus, rate: float) -> tuple[float, float, float]:
    """(statistical efficiency, throughput in samples/s, goodput) of a worker that reported its gradients, at
    ``rate`` reported steps per simulated second. Steps at the initial batch (AdaScale's progress) are worth the
    initial batch's samples each; optimizer steps the batch's."""
    assert status.grad_sqr is not None and status.grad_var is not None
    init = status.init_batch_size or status.batch_size
    eff = efficiency(status.grad_sqr, status.grad_var, status.batch_size, init)
    goodput = rate * init if status.scaled_steps else rate * status.batch_size * eff
    return eff, goodput / eff, goodput


def _gradient_columns(statuses: list[WorkerStatus], rate: float) -> list[str]:
    """``batch_size, grad_sqr, grad_var, noise_scale, efficiency, goodput`` of an attempt from its first copy that
    reported gradient statistics; goodput is samples/s of simulated time, ``rate x batch x efficiency`` (Pollux's
    definition, sec. 3.1; ``rate x initial batch`` when the worker reports its steps at the initial batch already,
    as AdaScale counts them). Empty fields when none did."""
    status = next((st for st in statuses if st.grad_sqr is not None and st.batch_size > 0), None)
    if status is None or status.grad_sqr is None or status.grad_var is None:
        return [""] * 6
    scale = noise_scale(status.grad_sqr, status.grad_var, status.init_batch_size or status.batch_size)
    eff, _, goodput = _speed(status, rate)
    values = (status.grad_sqr, status.grad_var, scale, eff, goodput)
    # six significant digits: the statistics span many orders of magnitude (fmt keeps 9 decimals)
    return [str(status.batch_size), *("" if v is None else f"{v:.6g}" for v in values)]


def _write_live_csv(runtime: LiveRuntime, path: Path) -> list[float]:
    nodes, scale = runtime.nodes, runtime.ex.time_scale
    latencies = []
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(LIVE_COLUMNS)
        for job in runtime.jobs.values():
            for a in job.history:
                first = runtime.start_time + (a.first_step_wall - runtime.wall0) * scale if a.first_step_wall else None
                latency = a.first_step_wall - a.decided_wall if a.first_step_wall else None
                if latency is not None:
                    latencies.append(latency)
                rate = sum(c.status.steps_per_s for c in a.copies if c.status) / scale
                outcome = attempt_outcome(job, a)
                w.writerow(
                    [
                        job.js.job_id,
                        a.number,
                        a.kind,
                        ";".join(f"{nodes[n].name}:{k}" for n, k in a.placement),
                        "+".join(sorted({nodes[n].gpu_model for n, _ in a.placement})),
                        len(a.copies),
                        fmt(a.decided_sim),
                        fmt(first),
                        fmt(first - a.decided_sim if first is not None else None),
                        fmt(latency),
                        a.steps,
                        fmt(rate),
                        int(runtime.executor.emulated),
                        outcome,
                        attempt_cause(a),
                        *_gradient_columns([c.status for c in a.copies if c.status], rate),
                    ]
                )
    return latencies


def _timings(runtime: LiveRuntime, latencies: list[float]) -> dict[str, Any]:
    def pct(values: list[float], p: float) -> float | None:
        if not values:
            return None
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

    return {
        "launch_latency_p50_s": pct(latencies, 50),
        "launch_latency_p95_s": pct(latencies, 95),
        "decisions": len(runtime.decision_s),
        "policy_decision_mean_s": statistics.fmean(runtime.decision_s) if runtime.decision_s else None,
        "runtime_overhead_mean_s": statistics.fmean(runtime.overhead_s) if runtime.overhead_s else None,
    }


def read_jct(run_dir: Path) -> dict[str, float]:
    """job_id -> JCT of a result directory's jobs.csv (completed jobs only)."""
    path = Path(run_dir) / "jobs.csv"
    records = csv_rows(read_input_text(path, what="jobs.csv of a run").splitlines(), file=path)
    header = next(records, [])
    check_unique_columns(header, file=path)
    if "jct" not in header or "job_id" not in header:
        raise InputError("not a gpuweave result (no job_id and jct columns)", file=path)
    job_col, jct_col = header.index("job_id"), header.index("jct")
    jct = {}
    for row, record in enumerate(records, 1):
        if not record:  # a blank line
            continue
        if len(record) != len(header):
            raise InputError(f"{len(record)} fields, the header has {len(header)}", file=path, row=row)
        if record[jct_col]:
            jct[record[job_col]] = parse(record[jct_col], RESULT, file=path, row=row, field="jct")
    return jct


def compare_jct(sim_dir: Path, live_dir: Path) -> list[tuple[str, float | None, float | None, float | None]]:
    """(job, simulated JCT, live JCT, live/sim) for every job of either run."""
    sim, live = read_jct(sim_dir), read_jct(live_dir)
    rows = []
    for job_id in sorted(set(sim) | set(live)):
        s, v = sim.get(job_id), live.get(job_id)
        rows.append((job_id, s, v, v / s if s and v is not None else None))
    return rows
