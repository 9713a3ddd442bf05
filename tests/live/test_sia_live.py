"""Sia live (issue 38, item 4): the ``sia`` policy drives two adaptive torch jobs on a heterogeneous cluster (a node of
2 emulated V100 and one of 2 emulated K80, the local executor), deciding on what the jobs' workers measure: each
job's agent keeps one throughput fit per GPU type (``fits_per_gpu_type``), projected to a type it has not run on by
the ratio of the profile store's one-GPU rates, as Sia's simulator projects its tables' (gpuweave.cluster.policies.sia).
Unprofiled, a job takes one GPU; measured, it grows; every resize is a stop at a checkpoint and a restart at the
batch its agent picks for the new placement."""

import csv

import pytest
import yaml

pytest.importorskip("torch")

from gpuweave.live.config import load_live_config  # noqa: E402
from gpuweave.live.launch import make_executor  # noqa: E402
from gpuweave.live.results import write_live_run  # noqa: E402
from gpuweave.live.runtime import LiveRuntime  # noqa: E402

RATES = {"V100": 10.0, "K80": 4.0}  # steps/s at batch 32 on one GPU: the emulated GPUs' pace
LATE = 300  # when the second job arrives (simulated s)


def _config(tmp_path):
    nodes = [{"gpu": "V100", "gpus_per_node": 2, "names": ["v100-0"]},
             {"gpu": "K80", "gpus_per_node": 2, "names": ["k80-0"]}]  # fmt: skip
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "hetero", "nodes": nodes}))
    rows = ["job_type,gpu_model,num_gpus,consolidated,throughput"]
    for model, one in RATES.items():
        rows += [f"mlp,{model},{g},{c},{one * g * (1 if c else 0.9):g}" for g in (1, 2) for c in (1, 0)]
    (tmp_path / "profiles.csv").write_text("\n".join(rows) + "\n")
    columns = "job_id,arrival,num_gpus,job_type,work,moldable,batch_size,max_batch_size,min_local_bsz,max_local_bsz"
    jobs = ["a,0,1,mlp,3000,4,32,256,8,64", f"b,{LATE},1,mlp,1500,4,32,256,8,64"]
    (tmp_path / "trace.csv").write_text("\n".join([columns, *jobs]) + "\n")
    executor = {"program": "torch --adascale", "time_scale": 20, "checkpoint_every": 0.5, "report_timeout": 60,
                "launch_timeout": 120, "poll_interval": 0.05}  # fmt: skip
    config = {"policy": "sia", "cluster": "cluster.yaml", "trace": "trace.csv", "profiles": "profiles.csv",
              "restart_delay": 30, "executor": executor}  # fmt: skip
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    return tmp_path / "run.yaml"


def test_sia_decides_live_on_fits_per_gpu_type_measured_by_the_workers(tmp_path):
    path = _config(tmp_path)
    config = load_live_config(path)
    out = tmp_path / "out"
    runtime = LiveRuntime(config, make_executor("local", None, config, out), out, config_dir=tmp_path)
    assert runtime.agents.per_gpu_type  # sia reads a fit per GPU type
    runtime.run()
    summary = write_live_run(runtime, out)
    assert summary["completed"] == 2
    with open(out / "live.csv") as fh:
        rows = list(csv.DictReader(fh))
    print([(r["job_id"], r["placement"], r["batch_size"], r["outcome"], r["planned_start"]) for r in rows])
    gpus = {job: [sum(int(p.split(":")[1]) for p in r["placement"].split(";")) for r in rows if r["job_id"] == job]
            for job in ("a", "b")}  # fmt: skip
    assert gpus["a"][0] == 1 and gpus["b"][0] == 1 and max(gpus["a"]) == 2  # unprofiled one GPU, then grown
    mine = [r for r in rows if r["job_id"] == "a"]
    assert all(r["outcome"] == "stopped" for r in mine[:-1]) and mine[-1]["outcome"] == "done"
    grown = gpus["a"].index(2)
    assert int(mine[grown]["batch_size"]) > 32  # the agent's batch for two GPUs (goodput), handed to the workers
    late = next(r for r in rows if r["job_id"] == "b")
    assert LATE <= float(late["planned_start"]) <= LATE + 2 * 60  # shared within two rounds of its arrival
    # every type a job ran on has its own fit, from its own measurements there; the K80 one is the slower
    states = {js.job.job_id: js for js in runtime.book.states}
    used = {job: {r["placement"].split("-")[0].upper() for r in rows if r["job_id"] == job} for job in ("a", "b")}
    print("types used", used)
    for job, types in used.items():
        agent = runtime.agents.agent(states[job], 0.0)
        assert agent is not None
        assert {t for t in RATES if agent.perf_on(t) is not None} == types, (job, types)
    with open(out / "adaptation.csv") as fh:
        adapted = list(csv.DictReader(fh))
    # a row a minute of each attempt, at its GPU type
    assert {(r["job_id"], r["gpu_model"]) for r in adapted} == {(j, t) for j, types in used.items() for t in types}
    assert len(adapted) > len(rows)
