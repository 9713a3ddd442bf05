"""Closing-note figures for the live runtime (issue 12), measured the same way every time; never asserted in tests.

    PYTHONPATH=src .venv/bin/python tools/bench_live.py overhead   # 100 jobs, 16 declared nodes, local executor
    PYTHONPATH=src .venv/bin/python tools/bench_live.py latency    # launch latency on a local Ray (synthetic, torch)
    PYTHONPATH=src .venv/bin/python tools/bench_live.py compare    # examples/live/synthetic.yaml, sim vs live JCT

Overhead: the wall time of each runtime poll (reading workers, admitting, deciding, launching) split into the
policy's own ``schedule`` call and the rest, per round tick. Latency: decision to first reported step, from each
run's ``summary.json``. Compare: the per-job live/sim JCT ratio of ``gpuweave cluster compare``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESNET = "ResNet-18 (batch size 128)"


def _write_inputs(folder: Path, nodes_v100: int, nodes_k80: int, rows: list[str]) -> tuple[Path, Path]:
    cluster = folder / "cluster.yaml"
    cluster.write_text(
        "name: bench\nnodes:\n"
        f"  - {{gpu: V100, gpus_per_node: 2, count: {nodes_v100}, name_prefix: v100-}}\n"
        f"  - {{gpu: K80, gpus_per_node: 2, count: {nodes_k80}, name_prefix: k80-}}\n"
    )
    trace = folder / "trace.csv"
    trace.write_text("\n".join(["job_id,arrival,num_gpus,job_type,duration", *rows]) + "\n")
    return cluster, trace


def _runtime(folder: Path, rows: list[str], executor, nodes=(2, 1), **settings):
    from gpuweave.live.config import LiveConfig
    from gpuweave.live.runtime import LiveRuntime

    cluster, trace = _write_inputs(folder, *nodes, rows)
    run = {"policy": "hadar", "round_length": 60, "restart_delay": 10, "cluster": str(cluster), "trace": str(trace)}
    ex = {"program": "synthetic", "time_scale": 100, "checkpoint_every": 1.0, "poll_interval": 0.05}
    ex.update(settings)
    return LiveRuntime(LiveConfig.model_validate({**run, "executor": ex}), executor, folder / "out")


def overhead() -> dict:
    from gpuweave.live.local import LocalExecutor

    rows = [f"j{i},{i * 20},{1 + i % 2},{RESNET},{300 + 50 * (i % 7)}" for i in range(100)]
    with tempfile.TemporaryDirectory() as tmp:
        rt = _runtime(Path(tmp), rows, LocalExecutor(), nodes=(12, 4), time_scale=200)
        step_s: list[float] = []
        step = rt.step

        def timed() -> None:
            t0 = time.perf_counter()
            step()
            step_s.append(time.perf_counter() - t0)

        rt.step = timed
        t0 = time.perf_counter()
        rt.run()
        wall = time.perf_counter() - t0
    ticks = max(1, len(rt.decision_s))
    return {
        "jobs": 100,
        "nodes": 16,
        "done": sum(j.done for j in rt.jobs.values()),
        "wall_s": round(wall, 1),
        "polls": len(step_s),
        "decisions": len(rt.decision_s),
        "poll_mean_ms": round(1e3 * statistics.fmean(step_s), 2),
        "runtime_per_round_ms": round(1e3 * (sum(step_s) - sum(rt.decision_s)) / ticks, 2),
        "policy_decision_mean_ms": round(1e3 * statistics.fmean(rt.decision_s), 2),
        "decision_bookkeeping_mean_ms": round(1e3 * statistics.fmean(rt.overhead_s), 2),
    }


def latency() -> dict:
    from gpuweave.live.ray_executor import RayExecutor
    from gpuweave.live.results import write_live_run

    rows = [f"l{i},{i * 30},1,{RESNET},{200 + 40 * i}" for i in range(8)]
    result = {}
    for program in ("synthetic", "torch"):
        with tempfile.TemporaryDirectory() as tmp:
            executor = RayExecutor(None)
            rt = _runtime(Path(tmp), rows, executor, time_scale=20, program=program)
            rt.run()
            write_live_run(rt, Path(tmp) / "out")
            meta = json.loads((Path(tmp) / "out" / "summary.json").read_text())["runtime"]
            timings = {k: round(meta[k], 3) for k in ("launch_latency_p50_s", "launch_latency_p95_s")}
            timings["attempts"] = sum(len(j.history) for j in rt.jobs.values())
            result[program] = timings
    return result


def compare() -> list:
    from gpuweave.cluster.config import SimulationConfig
    from gpuweave.cluster.run import run_simulation
    from gpuweave.live.config import load_live_config
    from gpuweave.live.launch import run_live
    from gpuweave.live.results import compare_jct

    example = ROOT / "examples" / "live" / "synthetic.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        live = Path(tmp) / "live"
        run_live(example, "local", None, live)
        sim_config = load_live_config(example).model_dump(exclude={"executor"})
        run_simulation(SimulationConfig.model_validate(sim_config), Path(tmp) / "sim")
        return [
            (job, s, round(v, 1), round(r, 3)) for job, s, v, r in compare_jct(Path(tmp) / "sim", live) if r is not None
        ]


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "overhead"
    result = {"overhead": overhead, "latency": latency, "compare": compare}[what]()
    for line in result if isinstance(result, list) else [result]:
        print(json.dumps(line))
