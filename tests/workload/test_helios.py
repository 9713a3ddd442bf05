"""Helios job-log converter on logs written in the layout of HeliosData's README (the job logs themselves are not in
the shared data: their blobs are absent from the snapshot), through the reader and as a user runs it."""

from __future__ import annotations

import pytest

from gpuweave.errors import InputError
from gpuweave.workload.profiles import load_profiles
from gpuweave.workload.traces import detect_format, load_trace_frame, read_helios_jobs, read_trace
from gpuweave.workload.traces.schema import fill_work, frame_to_jobs

from .conftest import assert_names
from .test_trace_cli import run

HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
LOG = [
    "2001,uAbc1,vcX1,1,4,1,COMPLETED,2020-07-01 10:00:00,2020-07-01 10:00:05,2020-07-01 11:00:05,3600,5",
    # a CPU job, submitted first: left out, and it does not move the trace's start
    "2002,uAbc2,vcX1,0,8,1,COMPLETED,2020-07-01 09:00:00,2020-07-01 09:00:00,2020-07-01 09:05:00,300,0",
    # a GPU job that failed at once: left out
    "2003,uAbc1,vcX2,8,32,1,FAILED,2020-07-01 10:01:00,2020-07-01 10:03:00,2020-07-01 10:03:00,0,120",
    "2004,uAbc3,vcX2,16,64,2,CANCELLED,2020-07-01 10:02:00,2020-07-01 10:12:00,2020-07-01 14:12:00,14400,600",
    "2005,uAbc3,vcX1,2,8,1,TIMEOUT,2020-07-01 09:59:30,2020-07-01 09:59:30,2020-07-02 09:59:30,86400,0",
]


def write_log(tmp_path, rows=LOG, header=HEADER, name="cluster_log.csv"):
    path = tmp_path / name
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_gpu_jobs_that_ran_are_kept_with_their_slurm_facts(tmp_path):
    path = write_log(tmp_path)
    assert detect_format(path) == "helios"
    frame = load_trace_frame(path, profiles=load_profiles())
    assert frame["job_id"].tolist() == ["2005", "2001", "2004"]  # sorted by arrival
    assert frame["arrival"].tolist() == [0.0, 30.0, 150.0]  # from job 2005's submission, not the CPU job's
    assert frame["num_gpus"].tolist() == [2, 1, 16]
    assert frame["duration"].tolist() == [86_400.0, 3_600.0, 14_400.0]
    assert frame["state"].tolist() == ["TIMEOUT", "COMPLETED", "CANCELLED"]
    assert frame["user"].tolist() == ["uAbc3", "uAbc1", "uAbc3"] and frame["vc"].tolist() == ["vcX1", "vcX1", "vcX2"]
    assert frame["start"].tolist() == [0.0, 35.0, 750.0] and frame["end"].tolist() == [86_400.0, 3_635.0, 15_150.0]
    assert frame.attrs["notes"] == [
        "left out 1 job without GPUs (gpu_num 0)",
        "left out 1 job on GPUs that ran for 0 s",
        "trace start 2020-07-01 09:59:30 = arrival 0 s",
    ]
    store = load_profiles()
    assert all(store.rate(t, "V100", min(n, 8), True) > 0 for t, n in zip(frame["job_type"], frame["num_gpus"]))
    jobs = frame_to_jobs(fill_work(frame, load_profiles(extrapolate=True), file=path))
    assert jobs[0].attrs["cpu_num"] == 8 and jobs[2].attrs["node_num"] == 2
    assert all(job.work > 0 for job in jobs)


def test_job_types_follow_the_seed(tmp_path):
    rows = [
        f"{3000 + i},u{i % 3},vc{i % 2},{[1, 2, 4, 8][i % 4]},4,1,COMPLETED,"
        f"2020-08-0{1 + i % 5} 12:00:{i:02d},2020-08-0{1 + i % 5} 12:00:{i:02d},2020-08-09 00:00:00,{60 + i},0"
        for i in range(40)
    ]
    path = write_log(tmp_path, rows)
    assert read_helios_jobs(path, seed=1)["job_type"].tolist() == read_helios_jobs(path, seed=1)["job_type"].tolist()
    assert read_helios_jobs(path, seed=1)["job_type"].tolist() != read_helios_jobs(path, seed=2)["job_type"].tolist()


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("2009,u,vc,1,4,1,COMPLETED,2020-07-01 25:00:00,,,60,0", "submit_time", "YYYY-MM-DD HH:MM:SS"),
        ("2009,u,vc,1,4,1,COMPLETED,2020-07-01 10:00:00,yesterday,,60,0", "start_time", "'yesterday'"),
        ("2009,u,vc,1,4,1,COMPLETED,2020-07-01 10:00:00,,2020/07/01,60,0", "end_time", "'2020/07/01'"),
        ("2009,u,vc,1,4,1,COMPLETED,2020-07-01 10:00:00,,,-60,0", "duration", ">= 0"),
        ("2009,u,vc,two,4,1,COMPLETED,2020-07-01 10:00:00,,,60,0", "gpu_num", "expected an integer"),
        ("2009,u,vc,1,4.5,1,COMPLETED,2020-07-01 10:00:00,,,60,0", "cpu_num", "expected an integer"),
        (",u,vc,1,4,1,COMPLETED,2020-07-01 10:00:00,,,60,0", "job_id", "empty"),
        ("2009,u,vc,1,4,1, ,2020-07-01 10:00:00,,,60,0", "state", "empty"),
    ],
)
def test_bad_rows_are_named(tmp_path, row, field, words):
    path = write_log(tmp_path, [LOG[0], row])
    with pytest.raises(InputError) as exc:
        read_helios_jobs(path)
    assert_names(exc, path, 2, field)
    assert words in str(exc.value)


def test_a_log_without_a_gpu_job_that_ran_is_refused(tmp_path):
    path = write_log(tmp_path, [LOG[1], LOG[2]])
    with pytest.raises(InputError, match="no GPU job that ran"):
        read_helios_jobs(path)
    path = write_log(tmp_path, [LOG[0]], header=HEADER.replace("end_time", "finish"), name="renamed.csv")
    with pytest.raises(InputError) as exc:
        read_helios_jobs(path)
    assert_names(exc, path, 0, "end_time")


def test_convert_then_simulate_as_a_user_does(monkeypatch, capsys, tmp_path):
    small = [row for row in LOG if ",16," not in row]  # gavel-60 places at most 4 GPUs on one node
    source = write_log(tmp_path, small)
    target = tmp_path / "venus.csv"
    code, out, err = run(monkeypatch, capsys, "trace", "convert", str(source), str(target))
    assert code == 0, err
    assert "(helios)" in out and "note: left out 1 job without GPUs" in out
    assert [job.job_id for job in read_trace(target)] == ["2005", "2001"]
    code, _, err = run(
        monkeypatch, capsys, "cluster", "simulate", "--policy", "fifo", "--trace", str(target), "--cluster",
        "gavel-60", "--out", str(tmp_path / "run"), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    jobs = (tmp_path / "run" / "jobs.csv").read_text().splitlines()
    assert len(jobs) == 3 and jobs[1].startswith("2005,")


def test_jobs_larger_than_the_profiles_run_with_extrapolate(monkeypatch, capsys, tmp_path):
    """Helios' 16-GPU job: the bundled profiles stop at 8 GPUs; the error names the flag cluster simulate has."""
    source = write_log(tmp_path)
    target = tmp_path / "venus.csv"
    assert run(monkeypatch, capsys, "trace", "convert", str(source), str(target))[0] == 0
    args = ["cluster", "simulate", "--policy", "fifo", "--trace", str(target), "--cluster", "mixed-1024", "--quiet"]
    code, _, err = run(monkeypatch, capsys, *args, "--out", str(tmp_path / "a"))
    assert code == 2 and "row 3, field 'num_gpus'" in err and "--extrapolate" in err
    code, _, err = run(monkeypatch, capsys, *args, "--out", str(tmp_path / "b"), "--extrapolate")
    assert code == 0, err
    jobs = (tmp_path / "b" / "jobs.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in jobs[1:]] == ["2005", "2001", "2004"]


def test_a_raw_log_given_as_a_trace_says_how_to_convert_it(monkeypatch, capsys, tmp_path):
    source = write_log(tmp_path)
    args = ["cluster", "simulate", "--policy", "fifo", "--trace", str(source), "--cluster", "mixed-1024"]
    code, _, err = run(monkeypatch, capsys, *args, "--out", str(tmp_path / "a"), "--quiet")
    assert code == 2 and "this is a helios trace" in err
    assert "gpuweave trace convert cluster_log.csv cluster_log-schema.csv --from helios" in err
    # the hint of an undetectable header ("pass --format") works on convert too
    code, _, err = run(
        monkeypatch, capsys, "trace", "convert", str(source), str(tmp_path / "o.csv"), "--format", "helios"
    )
    assert code == 0, err


def test_trace_info_tells_states_gpu_hours_and_vcs(monkeypatch, capsys, tmp_path):
    import json

    code, out, err = run(monkeypatch, capsys, "trace", "info", str(write_log(tmp_path)), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["format"] == "helios" and info["jobs"] == 3 and info["vcs"] == 2
    assert info["states"] == {"TIMEOUT": 1, "COMPLETED": 1, "CANCELLED": 1}
    assert info["gpu_hours_on_reference_gpu"] == (86_400 * 2 + 3_600 + 14_400 * 16) / 3_600
    code, out, _ = run(monkeypatch, capsys, "trace", "info", str(tmp_path / "cluster_log.csv"))
    assert code == 0 and "final state" in out and "GPU-hours" in out


def test_trace_info_gives_the_recorded_schedule(monkeypatch, capsys, tmp_path):
    """The schedule the source's own Slurm ran, from start/end: docs/slurm.md's figures for the captured history,
    and the Helios sample's by hand (arrivals 0, 30, 150 s; ends 86,400, 3,635, 15,150 s; starts 0, 35, 750 s)."""
    import json
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "slurm" / "trace.csv"
    code, out, err = run(monkeypatch, capsys, "trace", "info", str(example), "--json")
    assert code == 0, err
    recorded = json.loads(out)["recorded_schedule"]
    assert recorded["finished"] == 34 and recorded["unfinished"] == 1
    assert round(recorded["avg_jct_s"]) == 66 and round(recorded["p99_jct_s"]) == 159
    assert recorded["makespan_s"] == 199 and round(recorded["mean_queueing_delay_s"]) == 43
    code, out, _ = run(monkeypatch, capsys, "trace", "info", str(write_log(tmp_path)), "--json")
    recorded = json.loads(out)["recorded_schedule"]
    assert recorded["avg_jct_s"] == (86_400 + 3_605 + 15_000) / 3 and recorded["makespan_s"] == 86_400
    assert recorded["mean_queueing_delay_s"] == (0 + 5 + 600) / 3
    code, out, _ = run(monkeypatch, capsys, "trace", "info", str(example))
    assert "as the source's scheduler ran it" in out


def test_the_venus_vc_file_becomes_a_cluster(monkeypatch, capsys, tmp_path, shared_data):
    """The real Venus VC file (HeliosData): 1,080 GPUs on its last day (135 nodes, as Lucid's vc_config.csv says),
    968 on its first; the GPU model must be given, the day must be in the file."""
    import yaml

    from gpuweave.hardware.cluster_spec import load_cluster

    source = shared_data / "HeliosData" / "Venus" / "cluster_gpu_number.csv"
    out = tmp_path / "venus.yaml"
    code, text, err = run(monkeypatch, capsys, "trace", "cluster", str(source), str(out), "--gpu", "V100")
    assert code == 0 and "1,080 GPUs" in text, err
    spec = load_cluster(str(out))
    assert len(spec.expand()) == 135 and spec.gpus_by_model() == {"V100": 1_080}
    assert yaml.safe_load(out.read_text())["name"] == "helios-venus-2020-09-28"
    code, text, _ = run(monkeypatch, capsys, "trace", "cluster", str(source), "--gpu", "V100", "--date", "2020-04-01")
    assert code == 0 and sum(n["count"] * n["gpus_per_node"] for n in yaml.safe_load(text)["nodes"]) == 968
    code, _, err = run(monkeypatch, capsys, "trace", "cluster", str(source))
    assert code == 2 and "pass --gpu MODEL" in err
    code, _, err = run(monkeypatch, capsys, "trace", "cluster", str(source), "--gpu", "V100", "--date", "2021-01-01")
    assert code == 2 and "2020-04-01 .. 2020-09-28" in err


def test_a_vc_count_off_the_node_size_gets_a_smaller_node_and_the_total_is_checked(tmp_path):
    from gpuweave.workload.traces.helios import read_helios_vcs

    path = tmp_path / "cluster_gpu_number.csv"
    path.write_text("date,vcA,vcB,total\n2020-05-01,20,0,20\n2020-05-02,16,4,21\n", encoding="utf-8")
    cluster = read_helios_vcs(path, gpu="A100-80GB", date="2020-05-01")
    assert [(n["count"], n["gpus_per_node"], n["name_prefix"]) for n in cluster["nodes"]] == [
        (2, 8, "vcA-"),
        (1, 4, "vcA-part-"),
    ]
    with pytest.raises(InputError) as exc:
        read_helios_vcs(path, gpu="A100-80GB")
    assert_names(exc, path, 2, "total")
