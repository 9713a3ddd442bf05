"""Pollux live (issue 38, item 4): the ``pollux`` policy drives an adaptive torch job on a multi-node test cluster
(two network namespaces of 2 emulated V100 each, the local executor; on Ray and Slurm in their own gang tests),
deciding on what the job's workers measure (their seconds per step and sync, their gradient noise:
gpuweave.live.agents), as adaptdl's agent reports them. Unprofiled, the job may take 1 GPU, then twice what it was
measured on: it grows from 1 GPU to 4, each time stopped at a checkpoint and resumed at its new size with the batch
its agent picks; a second job arriving shares the GPUs at once; both finish, and the adaptive job's model reaches the
loss one process reaches at its initial batch after the same progress (AdaScale: tests/gang/test_elastic.py)."""

import csv

import pytest
import yaml

torch = pytest.importorskip("torch")

from gpuweave.report.html import render_report  # noqa: E402

from .test_elastic import _checkpoint_loss, reference_losses  # noqa: E402

WORK = 6000  # steps at the initial batch of 32
LATE = 400  # when the second job arrives (simulated s)
PROGRESS_TOLERANCE = 0.1  # the final loss is the reference's after WORK steps, give or take 10 % of them


def pollux_config(tmp_path, nodes: list[dict], executor: dict, late: float = LATE, time_scale: float = 20) -> object:
    """A run of two adaptive jobs under pollux: ``elastic`` (WORK steps) from the start, ``late`` at ``late``."""
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"name": "elastic", "nodes": nodes}))
    # steps/s at batch 32 (the emulated GPU: 1 GPU's rate sets its time per sample; the rest are the book's)
    rows = ["job_type,gpu_model,num_gpus,consolidated,throughput"]
    rows += [f"mlp,V100,{g},{c},{10.0 * g * (1 if c else 0.9):g}" for g in (1, 2, 3, 4) for c in (1, 0)]
    (tmp_path / "profiles.csv").write_text("\n".join(rows) + "\n")
    columns = "job_id,arrival,num_gpus,job_type,work,moldable,batch_size,max_batch_size,min_local_bsz,max_local_bsz"
    jobs = [f"elastic,0,1,mlp,{WORK},4,32,256,8,64", f"late,{late:g},1,mlp,300,4,32,256,8,64"]
    (tmp_path / "trace.csv").write_text("\n".join([columns, *jobs]) + "\n")
    config = {
        "policy": "pollux",
        "policy_options": {"population": 30, "generations": 20},
        "cluster": "cluster.yaml",
        "trace": "trace.csv",
        "profiles": "profiles.csv",
        "restart_delay": 30,
        "executor": {
            "program": "torch --adascale",
            "time_scale": time_scale,
            "checkpoint_every": 0.5,
            "report_timeout": 60,
            "launch_timeout": 120,
            **executor,
        },
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def check_elastic_run(out, most: int, late: float = LATE) -> list[int]:
    """What every executor's run must show (module docstring): the adaptive job grown from 1 GPU to at least
    ``most``; the GPUs of its attempts."""
    with open(out / "live.csv") as fh:
        rows = list(csv.DictReader(fh))
    print([(r["job_id"], r["placement"], r["batch_size"], r["outcome"], r["planned_start"]) for r in rows])
    assert {r["job_id"] for r in rows if r["outcome"] == "done"} == {"elastic", "late"}
    mine = [r for r in rows if r["job_id"] == "elastic"]
    gpus = [sum(int(part.split(":")[1]) for part in r["placement"].split(";")) for r in mine]
    # unprofiled it may take 1 GPU, then twice the most it was measured on
    assert gpus[0] == 1 and max(gpus) >= most
    assert all(b <= 2 * max(gpus[: i + 1]) for i, b in enumerate(gpus[1:]))
    grown = gpus.index(max(gpus))
    assert all(r["outcome"] == "stopped" for r in mine[:-1]) and mine[-1]["outcome"] == "done"
    # each attempt at the batch its agent picked for the placement (the worker ran it: live.csv's batch_size)
    batches = [int(r["batch_size"]) for r in mine]
    assert batches[0] == 32 and batches[grown] > 32 and all(32 <= b <= 256 for b in batches)
    # the late job did not wait for it to finish: pollux shared the GPUs within two rounds of its arrival
    other = next(r for r in rows if r["job_id"] == "late")  # its first attempt (pollux may resize it too)
    assert late <= float(other["planned_start"]) <= late + 2 * 60
    # the loss it reached is the one-process reference's after the same progress, within PROGRESS_TOLERANCE of it
    final = torch.load(out / "checkpoints" / "elastic" / "model.ckpt", map_location="cpu")
    loss, curve = _checkpoint_loss(final), reference_losses(set(range(100, 2 * WORK, 100)))
    equivalent = next(step for step in sorted(curve) if curve[step] <= loss)
    print(f"loss {loss:.6g}: the reference's after {equivalent} steps ({equivalent / WORK - 1:+.1%} of its progress)")
    assert abs(equivalent / WORK - 1) <= PROGRESS_TOLERANCE
    # adaptation.csv as a simulation writes it: rows a minute (simulated) apart, back to back from each attempt's
    # decision to its end, at the attempt's GPUs and batch; the report's batch figure from it
    with open(out / "adaptation.csv") as fh:
        adapted = [r for r in csv.DictReader(fh) if r["job_id"] == "elastic"]
    starts = [float(r["planned_start"]) for r in mine]
    firsts = [i for i, r in enumerate(adapted) if any(abs(float(r["start"]) - t) < 1e-6 for t in starts)]
    assert len(firsts) == len(mine) and firsts[0] == 0, (starts, [r["start"] for r in adapted])
    for attempt, (lo, hi) in enumerate(zip(firsts, [*firsts[1:], len(adapted)])):
        rows_of = adapted[lo:hi]
        assert {(int(r["gpus"]), int(r["batch_size"])) for r in rows_of} == {(gpus[attempt], batches[attempt])}
        assert all(float(a["end"]) == float(b["start"]) for a, b in zip(rows_of, rows_of[1:]))
        assert all(float(r["end"]) - float(r["start"]) <= 90 for r in rows_of[1:-1])  # 60 s, and the polls between
    assert len(adapted) > len(mine)  # the long attempts have a row a minute
    assert all(0 < float(r["stat_efficiency"]) <= 1 and float(r["goodput"]) >= 0 for r in adapted)
    assert float(adapted[-1]["end"]) > float(other["planned_start"])  # it was still running then
    page = render_report([out], out / "report").read_text()
    assert "Adaptive jobs: batch, efficiency and goodput" in page
    return gpus


@pytest.mark.elastic
def test_pollux_grows_an_adaptive_job_from_one_gpu_to_four_on_its_measurements_and_shrinks_it_for_another(
    netns_bed, tmp_path
):
    from gpuweave.live.launch import run_live

    nodes = [{"gpu": "V100", "gpus_per_node": 2, "count": 2, "name_prefix": "n"}]
    local = {"kind": "local", "poll_interval": 0.05, "local": {"namespaces": netns_bed.namespaces[1:]}}
    out = tmp_path / "out"
    summary = run_live(pollux_config(tmp_path, nodes, local), None, None, out)
    assert summary["completed"] == 2
    check_elastic_run(out, 4)
