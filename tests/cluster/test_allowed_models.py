"""A GPU-type constraint is a field of the job (``Job.allowed_models``), read from the trace's ``allowed_models``
column or from a job type written as ``TYPE @only:A+B`` (how the service wrote it before), kept by ``write_trace``,
and honoured by every policy through the book: a constrained job runs only on its models."""

from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

from gpuweave.cli import app
from gpuweave.cluster.config import SimulationConfig
from gpuweave.cluster.run import run_simulation
from gpuweave.errors import InputError
from gpuweave.workload.traces.schema import read_trace, write_trace

RESNET = "ResNet-18 (batch size 32)"


def _trace(tmp_path, rows: list[str]):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,arrival,num_gpus,job_type,work,allowed_models\n" + "\n".join(rows) + "\n")
    return path


def test_the_column_and_the_old_suffix_become_the_field(tmp_path):
    path = _trace(
        tmp_path,
        [
            f"a,0,1,{RESNET},1000,k80+v100",
            f"b,0,1,{RESNET} @only:P100,1000,",
            f"c,0,1,{RESNET},1000,",
        ],
    )
    jobs = {job.job_id: job for job in read_trace(path)}
    assert jobs["a"].allowed_models == ("K80", "V100")  # canonical names, sorted
    assert jobs["b"].allowed_models == ("P100",) and jobs["b"].job_type == RESNET
    assert jobs["c"].allowed_models is None
    assert "allowed_models" not in jobs["a"].attrs
    out = tmp_path / "again.csv"
    write_trace(jobs.values(), out)
    again = {job.job_id: job for job in read_trace(out)}
    assert {k: (j.job_type, j.allowed_models) for k, j in again.items()} == {
        k: (j.job_type, j.allowed_models) for k, j in jobs.items()
    }


def test_an_unknown_model_is_one_line_naming_the_row(tmp_path):
    path = _trace(tmp_path, [f"a,0,1,{RESNET},1000,V100+Z9"])
    with pytest.raises(InputError) as exc:
        read_trace(path)
    assert exc.value.row == 1 and exc.value.field == "allowed_models"  # data rows count from 1


@pytest.mark.parametrize(
    "policy", ["fifo", "sjf", "yarn-cs", "tiresias", "gavel", "hadar", "hadare", "andreas", "edf", "priority"]
)
def test_every_policy_runs_a_constrained_job_only_on_its_models(tmp_path, policy):
    rows = [f"only-k80-{i},{i * 10},1,{RESNET},20000,K80" for i in range(6)]
    rows += [f"any-{i},{i * 10},1,{RESNET},20000," for i in range(6)]
    out = tmp_path / "run"
    args = ["cluster", "simulate", "--policy", policy, "--trace", str(_trace(tmp_path, rows)), "--cluster"]
    result = CliRunner().invoke(app, [*args, "gavel-60", "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    with open(out / "allocations.csv") as fh:
        placed = [(r["job_id"], r["gpu_model"]) for r in csv.DictReader(fh) if int(r["gpus"]) > 0]
    assert {model for job, model in placed if job.startswith("only-k80")} == {"K80"}
    assert {model for job, model in placed if job.startswith("any")} - {"K80"}  # the others take faster GPUs


def test_a_job_whose_models_cannot_hold_it_is_refused_before_the_run(tmp_path):
    out = tmp_path / "run"
    trace = _trace(tmp_path, [f"a,0,1,{RESNET},1000,A100"])
    with pytest.raises(InputError, match="cannot run on any GPU model of the cluster .*allowed_models: A100") as exc:
        run_simulation(SimulationConfig(policy="fifo", trace=str(trace)), out)
    assert exc.value.field == "allowed_models" and not out.exists()


@pytest.mark.parametrize("policy, options", [("sjf", {}), ("fifo", {"strict": False}), ("yarn-cs", {})])
def test_a_waiting_job_of_one_model_does_not_hold_back_one_of_another(tmp_path, policy, options):
    """Jobs of one type and GPU count but different constraints are different start classes of the pending index:
    a V100-only job that cannot start says nothing of a K80-only one behind it (found by Slurm's advisor mode)."""
    cluster = tmp_path / "two.yaml"
    cluster.write_text(
        "name: two\nnodes:\n  - {count: 1, gpu: V100, gpus_per_node: 1}\n  - {count: 1, gpu: K80, gpus_per_node: 1}\n"
    )
    trace = _trace(
        tmp_path,
        [f"v-running,0,1,{RESNET},50000,V100", f"v-waiting,1,1,{RESNET},1000,V100", f"k-next,2,1,{RESNET},1000,K80"],
    )
    out = tmp_path / "run"
    run_simulation(SimulationConfig(policy=policy, policy_options=options, trace=str(trace), cluster=str(cluster)), out)
    with open(out / "jobs.csv") as fh:
        starts = {r["job_id"]: float(r["start"]) for r in csv.DictReader(fh)}
    assert starts["k-next"] == pytest.approx(2.0)  # at its arrival, on the free K80
    assert starts["v-waiting"] > starts["k-next"]
