"""Alibaba PAI 2020 converter: task and job tables written in the layout of the trace's README (the tables themselves
are not in the shared data: their blobs are absent from the snapshot), headerless as published; the real machine
list (pai_machine_spec.csv, in the shared data) as a cluster."""

from __future__ import annotations

import json

import pytest

from gpuweave.errors import InputError
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces import detect_format, load_trace_frame, read_pai_tasks, read_trace
from gpuweave.workload.traces.pai import JOB_COLUMNS, TASK_COLUMNS

from .conftest import assert_names
from .test_trace_cli import run

# job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type
TASKS = [
    "jobA,worker,2.0,Terminated,1000.0,4600.0,600.0,29.296875,100.0,V100M32",
    "jobA,ps,1.0,Terminated,1000.0,4600.0,400.0,10.0,,",  # a parameter server: no GPU
    "jobB,tensorflow,1.0,Failed,2000.0,2600.0,400.0,8.0,50.0,T4",  # half a GPU: one whole GPU here
    "jobC,worker,4.0,Terminated,100.0,900.0,800.0,16.0,,",  # CPU only: left out
    "jobD,worker,1.0,Waiting,,,600.0,8.0,100.0,",  # never launched: left out
    "jobE,worker,1.0,Running,3000.0,,600.0,8.0,100.0,P100",  # no end: left out
    "jobF,worker,1.0,Failed,3500.0,3500.0,600.0,8.0,100.0,P100",  # 0 s: left out
    "jobG,worker,1.0,Terminated,450.0,1450.0,600.0,8.0,100.0,P100",
    "jobG,evaluator,1.0,Failed,500.0,1500.0,600.0,8.0,25.0,MISC",  # two GPU types: no model
    "jobH,worker,1.0,Terminated,5000.0,5060.0,600.0,8.0,100.0,V100",  # submitted 5100 by the job table
    "jobI,worker,1.0,Terminated,6000.0,6100.0,600.0,8.0,100.0,V100",  # not in the job table
]
# job_name,inst_id,user,status,start_time,end_time
JOBS = [
    "jobA,instA,u1,Terminated,900.0,4600.0",
    "jobB,instB,u2,Failed,1500.0,2600.0",
    "jobC,instC,u1,Terminated,50.0,900.0",
    "jobG,instG,u3,Failed,400.0,1500.0",
    "jobH,instH,u2,Terminated,5100.0,5060.0",
]


def write_tables(tmp_path, tasks=TASKS, jobs=JOBS, header=False):
    task_file = tmp_path / "pai_task_table.csv"
    task_file.write_text((",".join(TASK_COLUMNS) + "\n" if header else "") + "\n".join(tasks) + "\n", encoding="utf-8")
    if jobs is not None:
        (tmp_path / "pai_job_table.csv").write_text(
            (",".join(JOB_COLUMNS) + "\n" if header else "") + "\n".join(jobs) + "\n", encoding="utf-8"
        )
    return task_file


def test_gpu_jobs_that_ran_become_trace_rows_with_pai_facts(tmp_path):
    path = write_tables(tmp_path)
    assert detect_format(path) == "pai"
    frame = load_trace_frame(path, profiles=load_profiles())
    assert frame["job_id"].tolist() == ["jobG", "jobA", "jobB", "jobH", "jobI"]  # by arrival
    # origin: jobG's submission (400); jobH submitted after its launch, jobI missing from the job table: launches
    assert frame["arrival"].tolist() == [0.0, 500.0, 1_100.0, 4_600.0, 5_600.0]
    assert frame["num_gpus"].tolist() == [2, 2, 1, 1, 1]  # jobG: 1 + ceil(0.25); jobA: 2 x 1 (the ps has none)
    assert frame["gpu_request"].tolist() == [1.25, 2.0, 0.5, 1.0, 1.0]
    assert frame["run_time"].tolist() == [1_050.0, 3_600.0, 600.0, 60.0, 100.0]
    assert frame["start"].tolist() == [50.0, 600.0, 1_600.0, 4_600.0, 5_600.0]
    assert frame["end"].tolist() == [1_100.0, 4_200.0, 2_200.0, 4_660.0, 5_700.0]
    assert frame["pai_gpu_type"].tolist() == ["MISC|P100", "V100M32", "T4", "V100", "V100"]
    assert frame["user"].tolist() == ["u3", "u1", "u2", "u2", None]
    assert frame["state"].tolist() == ["Failed", "Terminated", "Failed", "Terminated", "Terminated"]
    assert frame["tasks"].tolist() == [2, 2, 1, 1, 1] and frame["instances"].tolist() == [2, 3, 1, 1, 1]
    assert frame["cpu_num"].tolist() == [12.0, 16.0, 4.0, 6.0, 6.0]
    # V100 jobs: the run time is V100 time and work = run time x the V100 rate; T4 and mixed types keep run time
    store = load_profiles()
    for _, job in frame.iterrows():
        if job["pai_gpu_type"] in ("V100", "V100M32"):
            rate = store.rate(job["job_type"], "V100", job["num_gpus"], True)
            assert job["duration"] == job["run_time"] and job["work"] == pytest.approx(job["run_time"] * rate)
        else:
            assert job["duration"] == job["run_time"] and job["work"] != job["work"]  # NaN: derived on reading
    assert frame.attrs["notes"] == [
        "left out 1 job without a GPU task (plan_gpu empty or 0)",
        "left out 1 job on GPUs whose tasks never launched (no start_time)",
        "left out 1 job on GPUs with a task without end_time (still running at the trace's end)",
        "left out 1 job on GPUs that ran for 0 s",
        "1 job without a submission time in pai_job_table.csv: arrival = the first task's launch",
        "1 job submitted after the first task launched: arrival = the launch",
        "2 jobs on a GPU type without a profile (or several types): their run time is taken as V100 time",
        "trace start = PAI time 400 s = arrival 0 s",
    ]


def test_a_p100_job_is_converted_to_v100_time(tmp_path):
    path = write_tables(tmp_path, ["jobP,worker,1.0,Terminated,0.0,1000.0,600.0,8.0,100.0,P100"], None)
    frame = read_pai_tasks(path)
    store = load_profiles()
    job_type = frame["job_type"].iloc[0]
    p100, v100 = (store.rate(job_type, gpu, 1, True) for gpu in ("P100", "V100"))
    assert frame["work"].iloc[0] == pytest.approx(1_000 * p100, abs=1e-3)
    assert frame["duration"].iloc[0] == pytest.approx(1_000 * p100 / v100, abs=1e-3)
    assert frame.attrs["notes"][0].startswith("no pai_job_table.csv beside the task table")


def test_the_header_line_may_be_there_or_not(tmp_path):
    (tmp_path / "bare").mkdir(), (tmp_path / "headed").mkdir()
    bare = read_pai_tasks(write_tables(tmp_path / "bare"))
    headed = read_pai_tasks(write_tables(tmp_path / "headed", header=True))
    assert bare.drop(columns=["note"]).equals(headed.drop(columns=["note"]))
    assert bare["note"].str.replace("bare", "").equals(headed["note"].str.replace("headed", ""))


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("jobX,worker,two,Terminated,0.0,10.0,600.0,8.0,100.0,V100", "inst_num", "expected an integer"),
        ("jobX,worker,0.0,Terminated,0.0,10.0,600.0,8.0,100.0,V100", "inst_num", ">= 1"),
        ("jobX,worker,1.0,Terminated,0.0,10.0,600.0,8.0,-5.0,V100", "plan_gpu", ">= 0"),
        ("jobX,worker,1.0,Terminated,soon,10.0,600.0,8.0,100.0,V100", "start_time", "'soon'"),
        ("jobX,worker,1.0,Terminated,0.0,10.0,600.0,8.0,100.0,Z9000", "gpu_type", "unknown GPU model 'Z9000'"),
        (",worker,1.0,Terminated,0.0,10.0,600.0,8.0,100.0,V100", "job_name", "empty"),
        ("jobX,worker,2000000.0,Terminated,0.0,10.0,600.0,8.0,100.0,V100", "plan_gpu", "2,000,000 GPUs"),
    ],
)
def test_bad_cells_are_named_by_line(tmp_path, row, field, words):
    """Headerless: data row N is line N of the file."""
    path = write_tables(tmp_path, [TASKS[0], row], None)
    with pytest.raises(InputError) as exc:
        read_pai_tasks(path)
    assert_names(exc, path, 2, field)
    assert words in str(exc.value)


def test_the_wrong_table_is_named(monkeypatch, capsys, tmp_path):
    path = write_tables(tmp_path)
    jobs = tmp_path / "pai_job_table.csv"
    code, _, err = run(monkeypatch, capsys, "trace", "convert", str(jobs), str(tmp_path / "o.csv"))
    assert code == 2 and "convert the task table (pai_task_table.csv)" in err
    code, _, err = run(monkeypatch, capsys, "trace", "convert", str(jobs), str(tmp_path / "o.csv"), "--from", "pai")
    assert code == 2 and "expected a PAI task table (pai_task_table.csv): lines of 10 fields" in err
    assert "the first line has 6" in err
    duplicated = write_tables(tmp_path, jobs=[JOBS[0], JOBS[0]])
    with pytest.raises(InputError) as exc:
        read_pai_tasks(duplicated)
    assert_names(exc, jobs, 2, "job_name")
    # the raw task table given where a schema trace is expected: named, with the command that converts it
    args = ["cluster", "simulate", "--policy", "fifo", "--trace", str(path), "--cluster", "mixed-1024", "--quiet"]
    code, _, err = run(monkeypatch, capsys, *args, "--out", str(tmp_path / "r"))
    assert code == 2 and "this is a pai trace" in err
    assert "gpuweave trace convert pai_task_table.csv pai_task_table-schema.csv --from pai" in err


def test_a_table_without_a_gpu_job_that_ran_is_refused(tmp_path):
    path = write_tables(tmp_path, [TASKS[3], TASKS[4]])
    with pytest.raises(InputError, match="no GPU job that launched and ended"):
        read_pai_tasks(path)


def test_convert_info_and_simulate_as_a_user_does(monkeypatch, capsys, tmp_path):
    source = write_tables(tmp_path)
    target = tmp_path / "pai.parquet"
    code, out, err = run(monkeypatch, capsys, "trace", "convert", str(source), str(target))
    assert code == 0, err
    assert "(pai)" in out and "note: left out 1 job without a GPU task" in out
    assert [job.job_id for job in read_trace(target)] == ["jobG", "jobA", "jobB", "jobH", "jobI"]
    code, out, err = run(monkeypatch, capsys, "trace", "info", str(source), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["format"] == "pai" and info["jobs"] == 5 and info["states"] == {"Terminated": 3, "Failed": 2}
    recorded = info["recorded_schedule"]  # PAI's own schedule: ends 1,100 .. 5,700 s, waits 50, 100, 500, 0, 0 s
    assert recorded["makespan_s"] == 5_700 and recorded["mean_queueing_delay_s"] == (50 + 100 + 500) / 5
    code, _, err = run(
        monkeypatch, capsys, "cluster", "simulate", "--policy", "fifo", "--trace", str(target), "--cluster",
        "gavel-60", "--out", str(tmp_path / "run"), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert len((tmp_path / "run" / "jobs.csv").read_text().splitlines()) == 6


def test_schema_only_leaves_the_source_facts_out(monkeypatch, capsys, tmp_path):
    import pandas as pd

    source = write_tables(tmp_path)
    slim, full = tmp_path / "slim.csv", tmp_path / "full.csv"
    code, _, err = run(monkeypatch, capsys, "trace", "convert", str(source), str(slim), "--schema-only")
    assert code == 0, err
    assert run(monkeypatch, capsys, "trace", "convert", str(source), str(full))[0] == 0
    columns = pd.read_csv(slim).columns.tolist()
    assert columns == ["job_id", "arrival", "num_gpus", "job_type", "work", "duration", "priority", "user", "note"]
    slim_jobs, full_jobs = read_trace(slim), read_trace(full)
    assert [(j.job_id, j.arrival, j.num_gpus, j.work) for j in slim_jobs] == [
        (j.job_id, j.arrival, j.num_gpus, j.work) for j in full_jobs
    ]
    assert full_jobs[0].attrs["state"] == "Failed" and "state" not in slim_jobs[0].attrs


def test_the_real_machine_list_becomes_a_cluster(monkeypatch, capsys, tmp_path, shared_data):
    """pai_machine_spec.csv (1,897 machines, headerless): 1,814 GPU machines with 6,742 GPUs (the README: "over
    6,500 GPUs on about 1,800 machines"), 83 CPU machines left out; MISC is not a catalog model."""
    import yaml

    from gpuweave.hardware.cluster_spec import load_cluster

    source = shared_data / "alibaba-clusterdata" / "cluster-trace-gpu-v2020" / "pai_machine_spec.csv"
    out = tmp_path / "pai.yaml"
    code, text, err = run(monkeypatch, capsys, "trace", "cluster", str(source), str(out))
    # MISC would not load as a cluster spec: named, with the two ways out, and nothing written (issue 39)
    assert code == 2 and "280 x 8 MISC" in err and "--catalog-only" in err and not out.exists(), err
    code, text, err = run(monkeypatch, capsys, "trace", "cluster", str(source), str(out), "--catalog-only")
    assert code == 0 and "3 node groups, 4,502 GPUs" in text, err
    spec = load_cluster(str(out))
    assert spec.gpus_by_model() == {"P100": 1_596, "T4": 994, "V100": 1_912}
    description = yaml.safe_load(out.read_text())["description"]
    assert "left out (GPU model not in the hardware catalog): 280 x 8 MISC" in description
    assert "83 machines without GPUs left out" in description and "135 V100M32 machines" in description


def test_gpu_map_takes_the_older_gpus_as_a_catalog_model(monkeypatch, capsys, tmp_path, shared_data):
    """MISC (K40m, K80, M60 mixed) as K80, by the user's choice: the whole 6,742 GPUs; typos are named."""
    from gpuweave.hardware.cluster_spec import load_cluster

    source = shared_data / "alibaba-clusterdata" / "cluster-trace-gpu-v2020" / "pai_machine_spec.csv"
    out = tmp_path / "pai.yaml"
    code, text, err = run(monkeypatch, capsys, "trace", "cluster", str(source), str(out), "--gpu-map", "MISC=K80")
    assert code == 0 and "4 node groups, 6,742 GPUs" in text, err
    assert load_cluster(str(out)).gpus_by_model() == {"K80": 2_240, "P100": 1_596, "T4": 994, "V100": 1_912}
    for pair, words in (
        ("G2=K80", "no node has GPU type 'G2' (types: MISC, P100, T4, V100)"),
        ("MISC=K81", "'K81' is not a model of the hardware catalog"),
        ("MISC", "expected TYPE=MODEL"),
    ):
        code, _, err = run(monkeypatch, capsys, "trace", "cluster", str(source), "--gpu-map", pair)
        assert code == 2 and words in err, err
    vcs = tmp_path / "cluster_gpu_number.csv"
    vcs.write_text("date,vcA,total\n2020-05-01,8,8\n", encoding="utf-8")
    code, _, err = run(monkeypatch, capsys, "trace", "cluster", str(vcs), "--gpu", "V100", "--gpu-map", "A=B")
    assert code == 2 and "a Helios VC file takes --gpu MODEL" in err


def test_a_machine_list_of_the_wrong_width_is_named(tmp_path):
    from gpuweave.workload.traces.pai import read_pai_machines

    path = tmp_path / "pai_machine_spec.csv"
    path.write_text("m1,T4,96,512\n", encoding="utf-8")
    with pytest.raises(InputError, match="lines of 5 fields"):
        read_pai_machines(path)
    path.write_text("m1,T4,96,512,2\nm2,CPU,96,512,0\nm3,,96,512,8\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_pai_machines(path)
    assert_names(exc, path, 3, "gpu_type")
