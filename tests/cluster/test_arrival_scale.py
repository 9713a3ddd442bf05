"""The run setting ``arrival_scale`` (``cluster simulate --arrival-scale``): the same jobs on a compressed or
stretched clock of arrivals, their work and run times unchanged; 1 changes nothing, not a byte."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from gpuweave.cluster.config import parse_config
from gpuweave.cluster.run import prepare
from gpuweave.errors import InputError
from gpuweave.results import config_key
from gpuweave.workload.job import Job, scale_arrivals
from tests.cli_harness import run_cli
from tests.test_cli_bad_input import check_one_error

JOB_TYPE = "ResNet-18 (batch size 32)"
#: arrivals 100, 700, 1900 (gaps 600 and 1200), run times 3600, 1800, 600: on gavel-60 none of them waits
TRACE = f"job_id,arrival,num_gpus,job_type,duration\na,100,1,{JOB_TYPE},3600\nb,700,1,{JOB_TYPE},1800\n"
TRACE += f"c,1900,2,{JOB_TYPE},600\n"
RESULT_FILES = ("jobs.csv", "allocations.csv", "timeseries.csv", "summary.json")


def gpuweave(*args, cwd):
    return run_cli(*args, cwd=cwd, timeout=120)


def jobs_of(run_dir: Path) -> dict[str, dict[str, str]]:
    with open(run_dir / "jobs.csv", newline="") as fh:
        return {row["job_id"]: row for row in csv.DictReader(fh)}


@pytest.fixture
def trace_dir(tmp_path):
    (tmp_path / "t.csv").write_text(TRACE)
    return tmp_path


def test_half_the_scale_halves_the_gaps_and_keeps_the_run_times(trace_dir):
    base = ["cluster", "simulate", "-p", "fifo", "-t", "t.csv", "--profiles", "traced"]
    for out, extra in (("plain", []), ("dense", ["--arrival-scale", "0.5"])):
        r = gpuweave(*base, *extra, "--out", out, "--json", cwd=trace_dir)
        assert r.returncode == 0, r.stderr
    plain, dense = jobs_of(trace_dir / "plain"), jobs_of(trace_dir / "dense")
    assert {k: float(v["arrival"]) for k, v in dense.items()} == {"a": 100.0, "b": 400.0, "c": 1000.0}
    for job_id in "abc":
        run_time = float(dense[job_id]["end"]) - float(dense[job_id]["start"])
        assert run_time == float(plain[job_id]["end"]) - float(plain[job_id]["start"])  # the trace's duration
        assert dense[job_id]["jct"] == plain[job_id]["jct"]  # nobody waits, so JCT = run time in both
    summary = json.loads((trace_dir / "dense" / "summary.json").read_text())
    assert summary["config"]["arrival_scale"] == 0.5  # the result says what it is
    assert json.loads((trace_dir / "plain" / "summary.json").read_text())["config"]["arrival_scale"] == 1.0


def test_scale_one_is_byte_identical_to_no_setting(trace_dir):
    base = ["cluster", "simulate", "-p", "fifo", "-t", "t.csv", "--json"]
    assert gpuweave(*base, "--out", "none", cwd=trace_dir).returncode == 0
    assert gpuweave(*base, "--arrival-scale", "1", "--out", "one", cwd=trace_dir).returncode == 0
    (trace_dir / "one.yaml").write_text("policy: fifo\ntrace: t.csv\narrival_scale: 1.0\n")
    assert gpuweave("cluster", "simulate", "one.yaml", "--out", "yaml", "--json", cwd=trace_dir).returncode == 0
    for name in RESULT_FILES:
        none = (trace_dir / "none" / name).read_bytes()
        assert (trace_dir / "one" / name).read_bytes() == none, name
        assert (trace_dir / "yaml" / name).read_bytes() == none, name
    # the sweep cache key and the default result directory (POLICY-KEY) are the ones of before the setting
    config = parse_config({"policy": "fifo", "trace": "t.csv"})
    assert config.key() == config_key(
        config.model_dump(mode="json", exclude={"placement", "placement_rule", "sharing", "arrival_scale"})
    )
    assert parse_config({"policy": "fifo", "trace": "t.csv", "arrival_scale": 0.5}).key() != config.key()


def test_scale_one_leaves_the_jobs_untouched():
    jobs = [Job("a", 0.1, 1, 10.0, JOB_TYPE, deadline=0.7), Job("b", 0.30000000000000004, 1, 10.0, JOB_TYPE)]
    before = [(j.arrival, j.deadline, j.work) for j in jobs]
    scale_arrivals(jobs, 1.0)
    assert [(j.arrival, j.deadline, j.work) for j in jobs] == before


def test_scale_keeps_work_duration_order_and_deadline_slack():
    jobs = [
        Job("late", 900.0, 1, 50.0, JOB_TYPE, deadline=1000.0, duration=50.0),
        Job("first", 100.0, 2, 70.0, JOB_TYPE, duration=70.0),
        Job("tie", 900.0, 1, 30.0, JOB_TYPE),
    ]
    scale_arrivals(jobs, 0.25)
    assert [j.arrival for j in jobs] == [300.0, 100.0, 300.0]
    assert jobs[0].deadline == 400.0  # 100 s after its arrival, as before
    assert [(j.work, j.duration, j.num_gpus) for j in jobs] == [(50.0, 50.0, 1), (70.0, 70.0, 2), (30.0, None, 1)]
    stretched = [Job("x", 10.0, 1, 1.0, JOB_TYPE), Job("y", 20.0, 1, 1.0, JOB_TYPE)]
    scale_arrivals(stretched, 3.0)
    assert [j.arrival for j in stretched] == [10.0, 40.0]
    with pytest.raises(InputError, match="arrival_scale"):
        scale_arrivals([Job("x", 0.0, 1, 1.0, JOB_TYPE), Job("y", 1e9, 1, 1.0, JOB_TYPE)], 100.0)


def test_generated_traces_are_scaled_too():
    plain = prepare(parse_config({"policy": "fifo", "jobs": 30}))
    dense = prepare(parse_config({"policy": "fifo", "jobs": 30, "arrival_scale": 0.5}))
    first = min(j.arrival for j in plain.jobs)
    assert [j.arrival for j in dense.jobs] == [first + (j.arrival - first) * 0.5 for j in plain.jobs]
    assert [j.work for j in dense.jobs] == [j.work for j in plain.jobs]


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("0", "greater than 0"),
        ("-1", "greater than 0"),
        ("nan", "finite"),
        ("inf", "finite"),
        ("fast", "--arrival-scale"),
        ("1e300", "within 1e+10 s"),
    ],
)
def test_bad_scales_are_one_line(trace_dir, value, needle):
    r = gpuweave(
        "cluster", "simulate", "-p", "fifo", "-t", "t.csv", "--arrival-scale", value, "--out", "r", cwd=trace_dir
    )
    line = check_one_error(r, needle)
    if value != "fast":  # click's own message names the option, the config's the field
        assert "field 'arrival_scale'" in line
    assert not (trace_dir / "r").exists()


@pytest.mark.parametrize(("value", "needle"), [("0", "greater than 0"), ("'fast'", "valid number"), (".nan", "finite")])
def test_bad_scales_in_a_run_config(trace_dir, value, needle):
    (trace_dir / "run.yaml").write_text(f"policy: fifo\ntrace: t.csv\narrival_scale: {value}\n")
    check_one_error(
        gpuweave("cluster", "simulate", "run.yaml", "--out", "r", cwd=trace_dir),
        "run.yaml",
        "field 'arrival_scale'",
        needle,
    )


def test_a_shared_run_with_a_scale(tmp_path):
    """Tasks with gpu_milli under best-fit: arrivals twice as dense, each task still runs its traced duration."""
    rows = ["job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli,memory_mib"]
    durations = {}
    for i in range(24):
        gpus, milli = ((1, 250), (1, 500), (1, 1000), (2, 1000))[i % 4]
        durations[f"t{i}"] = 60 + (i * 37) % 200
        rows.append(f"t{i},{50 + i * 10},{gpus},any,{durations[f't{i}']},{milli},2000,4096")
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "cluster.yaml").write_text(
        "name: one-a100\nnodes:\n- count: 1\n  gpu: A100\n  gpus_per_node: 4\n  cpu_milli: 16000\n"
        "  memory_mib: 65536\n  sharing: fraction\n"
    )
    (tmp_path / "run.yaml").write_text(
        "policy: fifo\ntrace: trace.csv\ncluster: cluster.yaml\nprofiles: traced\nplacement_rule: best-fit\n"
    )
    for out, extra in (("plain", []), ("dense", ["--arrival-scale", "0.5"])):
        r = gpuweave("cluster", "simulate", "run.yaml", *extra, "--out", out, "--json", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    plain, dense = jobs_of(tmp_path / "plain"), jobs_of(tmp_path / "dense")
    for i in range(24):
        row = dense[f"t{i}"]
        assert float(row["arrival"]) == 50 + i * 5
        assert float(row["end"]) - float(row["start"]) == durations[f"t{i}"]
    assert (tmp_path / "dense" / "sharing.csv").is_file()
    waits = [sum(float(r["queueing_delay"]) for r in run.values()) for run in (plain, dense)]
    assert waits[1] > waits[0]  # the same tasks, twice as dense, on one node: more waiting
    assert json.loads((tmp_path / "dense" / "summary.json").read_text())["config"]["arrival_scale"] == 0.5


def test_an_openb_replay_keeps_the_pods_run_times(tmp_path):
    """openb pods converted by ``trace convert`` (run time = deletion - scheduled): compressed arrivals, and each
    pod still runs for its own run time, not up to its recorded deletion."""
    header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    header += "scheduled_time"
    # (creation, scheduled, deletion): run times 500, 300, 900, 50
    times = [(0, 10, 510), (400, 400, 700), (1000, 1100, 2000), (3000, 3000, 3050)]
    lines = [header] + [
        f"p{i},4000,8192,1,{(500, 1000)[i % 2]},,LS,Succeeded,{c},{d},{s}" for i, (c, s, d) in enumerate(times)
    ]
    (tmp_path / "pods.csv").write_text("\n".join(lines) + "\n")
    r = gpuweave("trace", "convert", "pods.csv", "t.csv", "--from", "alibaba-pods", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "c.yaml").write_text(
        "name: one-v100\nnodes:\n- count: 1\n  gpu: V100\n  gpus_per_node: 2\n  cpu_milli: 32000\n  memory_mib: 65536\n"
    )
    base = ["cluster", "simulate", "-p", "fifo", "-t", "t.csv", "-c", "c.yaml", "--profiles", "traced"]
    r = gpuweave(*base, "--placement-rule", "fgd", "--arrival-scale", "0.1", "--out", "r", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = jobs_of(tmp_path / "r")
    for i, (creation, scheduled, deletion) in enumerate(times):
        row = rows[f"p{i}"]
        assert math.isclose(float(row["arrival"]), creation * 0.1)
        assert math.isclose(float(row["end"]) - float(row["start"]), deletion - scheduled)
