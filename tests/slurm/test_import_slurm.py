"""The Slurm importers on files: sacct histories and scontrol node lists captured from the test Slurm
(examples/slurm, made by tools/slurm_capture.py) and hand-written edge cases (tests/slurm/data). No Slurm needed."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from gpuweave.errors import InputError
from gpuweave.hardware.cluster_spec import load_cluster
from gpuweave.live.slurm import match_nodes
from gpuweave.workload.traces.formats import detect_format, load_trace_frame
from gpuweave.workload.traces.slurm import SACCT_FIELDS, sacct_frame
from gpuweave.workload.traces.slurm_nodes import (
    gpu_slots,
    import_cluster,
    parse_gres,
    parse_nodes,
    read_nodes_file,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).with_name("data")
EXAMPLE = ROOT / "examples" / "slurm"
HEADER = "|".join(SACCT_FIELDS)


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *args], capture_output=True, text=True, env=env, input=stdin, cwd=ROOT
    )


def _frame(lines: list[str], **kw):
    return sacct_frame("\n".join([HEADER, *lines]) + "\n", source="t.sacct", **kw)


# ---------------------------------------------------------------- sacct: the history captured from the test Slurm
def test_history_captured_from_the_test_slurm_imports():
    text = (EXAMPLE / "history.sacct").read_text()
    assert detect_format(EXAMPLE / "history.sacct") == "slurm"
    frame = load_trace_frame(EXAMPLE / "history.sacct")
    raw_jobs = {line.split("|")[0] for line in text.splitlines()[1:] if "." not in line.split("|")[0]}
    assert 25 <= len(frame) < len(raw_jobs)  # CPU-only, never-started and 0 s jobs are left out
    assert set(frame["gpu_model"].dropna()) == {"V100", "K80"}
    assert set(frame["slurm_gpu_type"]) <= {"v100", "k80"}
    assert (frame["num_gpus"] >= 1).all() and (frame["duration"] > 0).all()
    assert frame["arrival"].min() == 0 and (frame["arrival"].diff().dropna() >= 0).all()
    array_tasks = frame[frame["job_id"].str.contains("_")]
    assert len(array_tasks) == 4  # the --array=0-3 job: one row per task
    requeued = frame[frame["restarts"] > 0]
    assert len(requeued) == 1 and requeued["state"].iloc[0] == "COMPLETED"
    assert set(frame["state"]) == {"COMPLETED", "FAILED", "TIMEOUT", "RUNNING"}
    running = frame[frame["state"] == "RUNNING"]
    assert running["end"].isna().all() and "lower bound" in running["note"].iloc[0]
    notes = " ".join(frame.attrs["notes"])
    assert "without GPUs" in notes and "never started" in notes and "step line" in notes


def test_history_import_cli_writes_a_trace_the_simulator_reads(tmp_path):
    out = tmp_path / "trace.csv"
    proc = _cli("trace", "import-slurm", str(EXAMPLE / "history.sacct"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and "note: left out" in proc.stdout
    sim = _cli(
        "cluster",
        "simulate",
        "--policy",
        "fifo",
        "--trace",
        str(out),
        "--cluster",
        str(EXAMPLE / "cluster.yaml"),
        "--out",
        str(tmp_path / "run"),
    )
    assert sim.returncode == 0, sim.stderr
    assert (tmp_path / "run" / "jobs.csv").read_text().count("\n") > 25


def test_the_what_if_example_runs_every_policy_on_the_imported_history(tmp_path):
    """README / docs/slurm.md: the committed trace and cluster are the imports of the captured files, and the
    sweep runs every registered policy on them and writes the report."""
    from gpuweave.cluster.policies import policy_names

    trace, cluster = tmp_path / "trace.csv", tmp_path / "cluster.yaml"
    assert _cli("trace", "import-slurm", "examples/slurm/history.sacct", "--out", str(trace)).returncode == 0
    assert trace.read_text() == (EXAMPLE / "trace.csv").read_text()
    made = _cli("cluster", "import-slurm", "examples/slurm/nodes.txt", "--name", "gwsandbox", "--out", str(cluster))
    assert (
        made.returncode == 0
        and yaml.safe_load(cluster.read_text())["nodes"]
        == yaml.safe_load((EXAMPLE / "cluster.yaml").read_text())["nodes"]
    )
    out = tmp_path / "sweep"
    proc = _cli("sweep", "examples/slurm/sweep.yaml", "--out", str(out), "--no-progress", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    grid = yaml.safe_load((EXAMPLE / "sweep.yaml").read_text())["grid"]["policy"]
    assert sorted(grid) == sorted(policy_names())
    rows = pd.read_csv(out / "sweep.csv")
    assert sorted(rows["policy"]) == sorted(policy_names() * 2) and (rows["completed"] == 35).all()
    fifo = rows[(rows["policy"] == "fifo") & rows["round_length"].isna()]["avg_jct_s"].iloc[0]
    trace = pd.read_csv(EXAMPLE / "trace.csv")
    done = trace[trace["end"].notna()]
    slurm_fifo = (done["end"] - done["arrival"]).mean()  # this partition schedules FIFO: the replay matches it
    assert abs(fifo - slurm_fifo) < 0.1 * slurm_fifo
    assert (out / "report" / "report.html").is_file()


# ---------------------------------------------------------------- sacct: hand-written edge cases
def test_edge_cases_map_as_documented():
    frame = load_trace_frame(DATA / "edge-cases.sacct")
    rows = {r["job_id"]: r for r in frame.to_dict("records")}
    assert set(rows) == {"100", "102_0", "102_1", "104", "105", "106", "107", "110", "111+0"}
    assert rows["100"]["num_gpus"] == 2 and rows["100"]["gpu_model"] == "V100" and rows["100"]["duration"] == 3600
    assert rows["100"]["user"] == "alice" and rows["100"]["vc"] == "gpu" and rows["100"]["arrival"] == 0
    assert rows["102_0"]["gpu_model"] == "K80" and rows["102_1"]["run_time"] == 1200  # array tasks
    # 1200 s on a K80: the iterations it did there (work), and the shorter time they take on the V100 reference
    assert rows["102_1"]["work"] > 0 and 0 < rows["102_1"]["duration"] < 1200
    assert rows["106"]["duration"] == rows["106"]["run_time"] == 1800 and pd.isna(rows["106"]["work"])
    requeued = rows["104"]  # two runs merged: first submission, first start, last end, both run times
    assert requeued["restarts"] == 1 and requeued["arrival"] == 180 and requeued["start"] == 180
    assert requeued["end"] == 2700 and requeued["duration"] == 2400 and requeued["state"] == "COMPLETED"
    running = rows["105"]
    assert running["state"] == "RUNNING" and running["duration"] == 5400 and pd.isna(running["end_time"])
    assert "lower bound" in running["note"]
    assert rows["106"]["slurm_gpu_type"] == "a6000" and pd.isna(rows["106"]["gpu_model"])  # unknown type kept as is
    assert rows["107"]["gpu_model"] == "K80"  # asked for any GPU, Slurm gave a K80
    assert rows["110"]["num_gpus"] == 8 and rows["110"]["state"] == "TIMEOUT"
    notes = frame.attrs["notes"]
    assert "skipped 2 job step line(s) (JobID with a '.')" in notes
    assert "left out 2 job(s) without GPUs" in notes
    assert "left out 2 job(s) that never started (pending or cancelled before starting)" in notes
    assert "left out 1 job(s) that ran for 0 s" in notes
    assert any("a6000 (1 jobs)" in n for n in notes)
    assert "1 job(s) on a GPU type without a profile (or several types): their run time is taken as V100 time" in notes


def test_gpu_map_names_unknown_types(tmp_path):
    text = (DATA / "edge-cases.sacct").read_text()
    frame = sacct_frame(text, source="edge", gpu_map={"a6000": "A10"})
    assert frame.loc[frame["job_id"] == "106", "gpu_model"].iloc[0] == "A10"
    with pytest.raises(InputError, match="unknown GPU model 'RTX9999'"):
        sacct_frame(text, source="edge", gpu_map={"a6000": "RTX9999"})


def test_parsable_with_trailing_bar_and_typed_only_tres():
    header = HEADER + "|"
    line = "7|7|x|u|a|p|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:10:00|600||gres/gpu:k80=3|n|"
    frame = sacct_frame(f"{header}\n{line}\n", source="p")
    assert frame["num_gpus"].tolist() == [3] and frame["slurm_gpu_type"].tolist() == ["k80"]


@pytest.mark.parametrize(
    "lines, message",
    [
        (["1|1|x"], "t.sacct, row 1: expected 14 '|'-separated fields like the header, got 3"),
        (["1|1|x|u|a|p|COMPLETED|2024-13-01T00:00:00|Unknown|Unknown|0|||n"], "row 1, field 'Submit': expected a time"),
        (
            ["1|1|x|u|a|p|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:01:00|60||gres/gpu=two|n"],
            "row 1, field 'AllocTRES': expected a GPU count in 'gres/gpu=two'",
        ),
        (
            ["1|1|x|u|a|p|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:00|Unknown|60||gres/gpu=1|n"],
            "row 1, field 'End': a job that is not running has no End time",
        ),
        (
            ["1|1|x|u|a|p|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:01:00|6s||gres/gpu=1|n"],
            "row 1, field 'ElapsedRaw': expected whole seconds, got '6s'",
        ),
        (["1|1|x|u|a|p|COMPLETED|2024-01-01T00:00:00|Unknown|Unknown|0|||n"], "no job with GPUs that ran"),
        ([], "t.sacct: no job with GPUs that ran (no job line after the header)"),  # found by the fuzzer
        (
            ["1.0|1.0|x|u|a|p|COMPLETED|2024-01-01T00:00:00|Unknown|Unknown|0|||n"],
            "no job with GPUs that ran (only 1 job step line(s) after the header)",
        ),
    ],
)
def test_bad_sacct_lines_name_the_row_and_field(lines, message):
    with pytest.raises(InputError, match=".*".join(map(_escape, message.split(".*")))):
        _frame(lines)


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_bad_sacct_header_and_cli_one_line_exit_2(tmp_path):
    with pytest.raises(InputError, match="row 0, field 'AllocTRES': the sacct header lacks 'AllocTRES'"):
        sacct_frame("JobID|State|Submit|Start|End\n", source="h")
    with pytest.raises(InputError, match="not sacct --parsable2 output"):
        sacct_frame("JobID,State\n1,COMPLETED\n", source="h")
    bad = tmp_path / "bad.sacct"
    bad.write_text(HEADER + "\n1|2|3\n")
    proc = _cli("trace", "import-slurm", str(bad), "--out", str(tmp_path / "t.csv"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"{bad}, row 1: expected 14" in proc.stderr and not (tmp_path / "t.csv").exists()


def test_import_reads_stdin(tmp_path):
    proc = _cli(
        "trace", "import-slurm", "-", "--out", str(tmp_path / "t.csv"), stdin=(DATA / "edge-cases.sacct").read_text()
    )
    assert proc.returncode == 0, proc.stderr
    assert "9 jobs" in proc.stdout and "<stdin>" in proc.stdout


def test_without_slurm_commands_asking_slurm_is_one_line_naming_the_command(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PATH=str(tmp_path))
    argv = [sys.executable, "-m", "gpuweave.cli"]
    for args, command in (
        (["trace", "import-slurm", "--out", str(tmp_path / "t.csv")], "sacct"),
        (["cluster", "import-slurm"], "scontrol"),
        (
            ["cluster", "run", "examples/live/synthetic.yaml", "--executor", "slurm", "--out", str(tmp_path / "o")],
            "scontrol",
        ),
    ):
        proc = subprocess.run([*argv, *args], capture_output=True, text=True, env=env, cwd=ROOT)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"`{command}` not found on PATH: is Slurm installed" in proc.stderr


# ---------------------------------------------------------------- nodes
def test_nodes_captured_from_the_test_slurm_make_the_example_cluster():
    for name in ("nodes.txt", "nodes-multiline.txt"):
        nodes = read_nodes_file(EXAMPLE / name)
        assert [(n.name, n.gpus, n.partitions) for n in nodes] == [("gw0", {"v100": 4, "k80": 2}, ["gpu"])]
        spec, notes = import_cluster(nodes, name="gwsandbox", source=name)
        assert spec["nodes"] == [
            {"count": 1, "gpu": "V100", "gpus_per_node": 4, "names": ["gw0-v100"]},
            {"count": 1, "gpu": "K80", "gpus_per_node": 2, "names": ["gw0-k80"]},
        ]
        assert notes == []
    assert load_cluster(EXAMPLE / "cluster.yaml").gpus_by_model() == {"V100": 4, "K80": 2}


def test_node_edge_cases_text_and_json_agree():
    text = read_nodes_file(DATA / "nodes-edge.txt")
    as_json = read_nodes_file(DATA / "nodes.json")
    by_name = {n.name: n for n in text}
    assert by_name["a100-01"].gpus == {"a100": 4} and by_name["a100-01"].partitions == ["gpu", "long"]
    assert by_name["a100-02"].reason == "fan failure, waiting for a part [root@2024-03-01T09:10:00]"
    assert not by_name["a100-02"].healthy and by_name["mixed-01"].healthy
    assert by_name["old-01"].gpus == {"": 2} and by_name["ws-01"].gpus == {"a6000": 2}
    assert by_name["cpu-01"].gpus == {}
    for node in as_json:
        assert node.gpus == by_name[node.name].gpus and node.healthy == by_name[node.name].healthy


def test_node_import_errors_and_options():
    nodes = read_nodes_file(DATA / "nodes-edge.txt")
    with pytest.raises(InputError, match="node old-01 has GPUs without a type: pass --untyped-gpu MODEL"):
        import_cluster(nodes, name="c", source="n")
    with pytest.raises(InputError, match="node ws-01 has unknown GPU type 'a6000': map it with --gpu-map"):
        import_cluster(nodes, name="c", source="n", untyped="P100")
    spec, notes = import_cluster(nodes, name="c", source="n", untyped="P100", gpu_map={"a6000": "A10"})
    names = [n for group in spec["nodes"] for n in group["names"]]
    assert names == ["a100-01", "a100-02", "mixed-01-v100", "mixed-01-t4", "old-01", "ws-01"]
    assert any("without GPU GRES" in n and "cpu-01" in n for n in notes)
    assert any("unavailable" in n and "a100-02 (DOWN+DRAIN)" in n for n in notes)
    spec, notes = import_cluster(nodes, name="c", source="n", untyped="P100", skip_unknown=True, partition="gpu")
    assert [g["gpu"] for g in spec["nodes"]] == ["A100-40GB", "V100", "T4"]
    assert any("a6000" in n for n in notes)
    with pytest.raises(InputError, match="no node has GPU GRES"):
        import_cluster(nodes, name="c", source="n", partition="cpu")
    with pytest.raises(InputError, match="no node is in partition 'nope'"):
        import_cluster(nodes, name="c", source="n", partition="nope")


@pytest.mark.parametrize(
    "gres, expected",
    [
        ("gpu:v100:4(S:0-1)", {"v100": 4}),
        ("gpu:2,mps:200", {"": 2}),
        ("(null)", {}),
        ("gpu:a:1(S:0,2),gpu:b:2", {"a": 1, "b": 2}),
    ],
)
def test_parse_gres(gres, expected):
    assert parse_gres(gres) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("Arch=x86_64 NodeName=n1", "row 1: expected a record starting with NodeName="),
        ("NodeName=n1 Gres=gpu:v100:lots", "cannot read the GPU count in the GRES entry 'gpu:v100:lots'"),
        ("[2024-01-01] slurmd started", "neither `scontrol show node` text nor its --json output"),
        ('{"nodes": [{"gres": "gpu:1"}]}', "row 1, field 'name': expected a node object with a 'name'"),
        ("", "no nodes: the scontrol output is empty"),
    ],
)
def test_bad_node_text_is_an_input_error(text, message):
    with pytest.raises(InputError, match=_escape(message)):
        parse_nodes(text, source="nodes")


def test_cluster_import_cli(tmp_path):
    out = tmp_path / "c.yaml"
    proc = _cli(
        "cluster",
        "import-slurm",
        str(DATA / "nodes.json"),
        "--out",
        str(out),
        "--name",
        "site",
        "--catalog-only",
        "--price-per-kwh",
        "0.2",
    )
    assert proc.returncode == 0, proc.stderr
    spec = yaml.safe_load(out.read_text())
    assert spec["name"] == "site" and spec["price_per_kwh"] == 0.2
    assert load_cluster(out).gpus_by_model() == {"A100-40GB": 8, "V100": 2, "T4": 4}
    printed = _cli("cluster", "import-slurm", "-", stdin=(EXAMPLE / "nodes.txt").read_text())
    assert printed.returncode == 0 and yaml.safe_load(printed.stdout)["nodes"][0]["names"] == ["gw0-v100"]
    bad = _cli("cluster", "import-slurm", str(DATA / "nodes-edge.txt"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--untyped-gpu" in bad.stderr


# ---------------------------------------------------------------- executor node matching (no Slurm needed)
def _slots(text: str):
    nodes = parse_nodes(text, source="t")
    slots, _ = gpu_slots(nodes, skip_unknown=True)
    return slots, {n.name: n for n in nodes}


def _nodes(spec_yaml: str, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(spec_yaml)
    return load_cluster(path).expand()


def test_match_nodes_by_name_then_by_type_with_capacity(tmp_path):
    slots, hosts = _slots("NodeName=gw0 Gres=gpu:v100:4,gpu:k80:2 State=IDLE\nNodeName=gw1 Gres=gpu:v100:2 State=MIXED")
    nodes = _nodes(
        "name: t\nnodes:\n  - {gpu: V100, gpus_per_node: 2, count: 3, name_prefix: v-}\n"
        "  - {gpu: K80, gpus_per_node: 2, names: [gw0-k80]}\n",
        tmp_path,
    )
    chosen = match_nodes(nodes, slots, hosts)
    assert [(chosen[n.index].host, chosen[n.index].slurm_type) for n in nodes] == [
        ("gw0", "v100"),
        ("gw0", "v100"),
        ("gw1", "v100"),
        ("gw0", "k80"),
    ]
    too_many = _nodes("name: t\nnodes:\n  - {gpu: V100, gpus_per_node: 4, count: 2}\n", tmp_path)
    with pytest.raises(InputError, match=r"v100-1 \(4 x V100\) has no Slurm GPUs left"):
        match_nodes(too_many, slots, hosts)
    wrong = _nodes("name: t\nnodes:\n  - {gpu: K80, gpus_per_node: 1, names: [gw1]}\n", tmp_path)
    with pytest.raises(InputError, match="cluster node gw1 has K80 GPUs, Slurm's gw1 has V100"):
        match_nodes(wrong, slots, hosts)


def test_match_nodes_refuses_a_node_slurm_marks_down(tmp_path):
    slots, hosts = _slots((DATA / "nodes-edge.txt").read_text())
    nodes = _nodes("name: t\nnodes:\n  - {gpu: A100, gpus_per_node: 4, names: [a100-02]}\n", tmp_path)
    with pytest.raises(InputError, match=r"Slurm node a100-02 is DOWN\+DRAIN, Reason=fan failure"):
        match_nodes(nodes, slots, hosts)
