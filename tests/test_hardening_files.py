"""Issue 39, classes 5 and 6: writers write only what the loader reads back; every reader refuses what is not a
regular file before opening it, and sizes (header fields, generated lines) are bounded before work.

Each case here was a hang, a traceback, a quadratic step or a file the next command refused (exit 0 first)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.files import parse_yaml, read_input_bytes
from gpuweave.hardware.cluster_spec import check_cluster_yaml, load_cluster
from gpuweave.workload.traces.slurm_nodes import parse_gpu_map
from tests.cli_harness import run_cli
from tests.test_cli_bad_input import GOOD_TRACE, check_one_error

FAST_S = 20  # a command refused for a FIFO or a size must answer in seconds, never block


def gpuweave(*args, cwd, timeout: float = 60):
    return run_cli(*args, cwd=cwd, timeout=timeout)


def timed(*args, cwd, bound: float = FAST_S):
    start = time.monotonic()
    result = gpuweave(*args, cwd=cwd, timeout=bound)
    return result, time.monotonic() - start


# ------------------------------------------------------------------ class 6: things that are not regular files
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


@needs_fifo
def test_a_fifo_given_as_an_input_is_refused_not_opened(tmp_path):
    # before: open() blocked until a writer came (forever)
    os.mkfifo(tmp_path / "t.csv")
    os.mkfifo(tmp_path / "c.yaml")
    for args in (
        ("trace", "info", "t.csv"),
        ("trace", "validate", "t.csv"),
        ("trace", "import-slurm", "t.csv", "--out", "o.csv"),
        ("cluster", "import-slurm", "t.csv"),
        ("simulate", "t.csv"),
    ):
        r, _ = timed(*args, cwd=tmp_path)
        check_one_error(r, "t.csv", "named pipe (FIFO)")
    r, _ = timed("cluster", "show", "c.yaml", cwd=tmp_path)
    check_one_error(r, "c.yaml", "expected a cluster spec, got a named pipe")
    with pytest.raises(InputError, match="named pipe"):
        read_input_bytes(tmp_path / "t.csv")  # would block in open() if the check came after it


@needs_fifo
def test_report_on_a_run_directory_with_a_fifo_table(tmp_path):
    run = tmp_path / "run"
    r = gpuweave("simulate", "--policy", "fifo", "--jobs", 4, "--out", run, "-q", cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    (run / "jobs.csv").unlink()
    os.mkfifo(run / "jobs.csv")
    r, _ = timed("report", run, "--out", tmp_path / "r.html", cwd=tmp_path)
    check_one_error(r, "jobs.csv", "named pipe")


@needs_fifo
def test_an_output_path_that_is_a_fifo_or_device_is_not_written(tmp_path):
    os.mkfifo(tmp_path / "o.csv")
    r, _ = timed("trace", "generate", "o.csv", "--jobs", 3, cwd=tmp_path)
    check_one_error(r, "o.csv", "named pipe")
    assert (tmp_path / "o.csv").is_fifo()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc")
def test_output_paths_under_proc_are_one_line(tmp_path):
    # before: FileNotFoundError tracebacks from mkstemp/mkdir under /proc
    (tmp_path / "nodes.txt").write_text("NodeName=gw0 Gres=gpu:v100:4\n")
    for args, field in (
        (("trace", "generate", "/proc/x.csv", "--jobs", 3), "out"),
        (("simulate", "--policy", "fifo", "--jobs", 3, "--out", "/proc/gpuweave-run"), "out"),
        (("cluster", "import-slurm", "nodes.txt", "--out", "/proc/self/c.yaml"), "out"),
        (("trace", "convert", "t.csv", "/proc/o.csv"), "out"),
    ):
        (tmp_path / "t.csv").write_text(GOOD_TRACE)
        r, _ = timed(*args, cwd=tmp_path, bound=60)
        check_one_error(r, "/proc", f"field '{field}'")


# ------------------------------------------------------------------ class 6: unbounded sizes
def _sacct_header(fields: int) -> str:
    return "|".join(["JobID", "State", "Submit", *(f"F{i}" for i in range(fields - 3))]) + "\n"


def test_a_200000_field_sacct_header_is_refused_fast(tmp_path):
    (tmp_path / "big.sacct").write_text(_sacct_header(200_000))
    r, took = timed("trace", "import-slurm", "big.sacct", "--out", "o.csv", cwd=tmp_path)
    check_one_error(r, "big.sacct, row 0", "table_columns")
    assert not (tmp_path / "o.csv").exists()
    # with the limit raised, the duplicate check is linear (it was a list scan per field: minutes)
    r, took = timed(
        "--limit", "table_columns=300000", "trace", "import-slurm", "big.sacct", "--out", "o.csv", cwd=tmp_path
    )
    check_one_error(r, "lacks 'Start'")
    assert took < FAST_S


def test_the_sacct_duplicate_check_is_linear():
    from gpuweave.limits import ENV
    from gpuweave.workload.traces.slurm import sacct_frame

    text = _sacct_header(200_000).replace("F7|", "JobID|", 1)
    old = os.environ.get(ENV)
    os.environ[ENV] = "table_columns=300000"
    try:
        start = time.monotonic()
        with pytest.raises(InputError, match="'JobID' appears twice"):
            sacct_frame(text, source="s")
        assert time.monotonic() - start < 5
    finally:
        if old is None:
            del os.environ[ENV]
        else:
            os.environ[ENV] = old


def test_a_table_of_a_million_columns(tmp_path):
    # before: `report` on a jobs.csv of 10^6 columns ran for minutes in pandas
    run = tmp_path / "run"
    r = gpuweave("simulate", "--policy", "fifo", "--jobs", 4, "--out", run, "-q", cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    names = ",".join(f"c{i}" for i in range(1_000_000))
    (run / "jobs.csv").write_text(names + "\n" + ",".join("1" for _ in range(1_000_000)) + "\n")
    r, _ = timed("report", run, "--out", tmp_path / "r.html", cwd=tmp_path)
    check_one_error(r, "jobs.csv, row 0", "table_columns = 10,000")
    (tmp_path / "wide.csv").write_text(names + "\n")
    r, _ = timed("trace", "validate", "wide.csv", "--format", "schema", cwd=tmp_path)
    check_one_error(r, "wide.csv, row 0", "table_columns")


def test_bench_import_slurm_lines_are_bounded_before_generating(tmp_path):
    # before: --lines 10^9 generated gigabytes of text before anything was checked
    r, _ = timed("bench", "import-slurm", "--lines", 1_000_000_000, cwd=tmp_path)
    check_one_error(r, "field 'lines'", "trace_jobs")


# ------------------------------------------------------------------ class 6: YAML keys and types
@pytest.mark.parametrize(
    "text, needle",
    [
        ("name: x\nnodes:\n  - {count: 2, gpu: V100, gpus_per_node: 4}\nname: y\n", "duplicate key 'name'"),
        ("name: x\nnodes:\n  - {count: 2, count: 200, gpu: V100, gpus_per_node: 4}\n", "duplicate key 'count'"),
        ("name: x\nnodes:\n  - {count: true, gpu: V100, gpus_per_node: 4}\n", "nodes[0].count"),
        ("name: x\nnodes:\n  - {count: 1, gpu: V100, gpus_per_node: 4, pue: false}\n", "boolean false"),
        ("name: x\npue: '1.2'\nnodes:\n  - {count: 1, gpu: V100, gpus_per_node: 4}\n", "got the text '1.2'"),
    ],
)
def test_cluster_show_refuses_duplicate_keys_and_wrong_types(tmp_path, text, needle):
    (tmp_path / "c.yaml").write_text(text)
    check_one_error(gpuweave("cluster", "show", "c.yaml", cwd=tmp_path), "c.yaml", needle)


def test_yaml_merge_keys_may_still_be_overridden():
    doc = parse_yaml("base: &b {count: 1, gpu: V100}\nnode: {<<: *b, count: 2}\n")
    assert doc["node"] == {"count": 2, "gpu": "V100"}
    with pytest.raises(InputError, match="duplicate key 'a'"):
        parse_yaml("x:\n  a: 1\n  b: 2\n  a: 3\n", source="f.yaml")


# ------------------------------------------------------------------ class 5: writers write what the loader reads
def test_import_slurm_refuses_a_node_listed_twice_and_writes_nothing(tmp_path):
    (tmp_path / "n.txt").write_text(
        "NodeName=gw0 Gres=gpu:v100:4 State=IDLE\nNodeName=gw1 Gres=gpu:v100:4\nNodeName=gw0 Gres=gpu:v100:2\n"
    )
    r = gpuweave("cluster", "import-slurm", "n.txt", "--out", "c.yaml", cwd=tmp_path)
    check_one_error(r, "n.txt, row 3", "'gw0' would be used twice")
    assert not (tmp_path / "c.yaml").exists() and not r.stdout
    # a multi-type node's <node>-<type> name meeting another node's name
    (tmp_path / "m.txt").write_text("NodeName=gw0 Gres=gpu:v100:4,gpu:k80:2\nNodeName=gw0-v100 Gres=gpu:v100:4\n")
    check_one_error(gpuweave("cluster", "import-slurm", "m.txt", cwd=tmp_path), "'gw0-v100' would be used twice")


def test_conflicting_gpu_map_entries_are_an_error(tmp_path):
    (tmp_path / "n.txt").write_text("NodeName=gw0 Gres=gpu:a6000:4\n")
    r = gpuweave("cluster", "import-slurm", "n.txt", "--gpu-map", "a6000=A10", "--gpu-map", "A6000=V100", cwd=tmp_path)
    check_one_error(r, "field 'gpu-map'", "two models")
    (tmp_path / "pai_machine_spec.csv").write_text(
        "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm1,MISC,96,512,8\nm2,T4,96,512,2\n"
    )
    r = gpuweave(
        "trace", "cluster", "pai_machine_spec.csv", "--gpu-map", "MISC=K80", "--gpu-map", "misc=T4", cwd=tmp_path
    )
    check_one_error(r, "field 'gpu-map'", "two models")
    # the same mapping twice (in another case) is one mapping
    r = gpuweave(
        "cluster",
        "import-slurm",
        "n.txt",
        "--gpu-map",
        "a6000=A10",
        "--gpu-map",
        "A6000=a10",
        "-o",
        "c.yaml",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert load_cluster(tmp_path / "c.yaml").gpus_by_model() == {"A10": 4}


def test_parse_gpu_map():
    assert parse_gpu_map(["a=V100", "A=v100", "b=K80"]) == {"a": "V100", "b": "K80"}
    with pytest.raises(InputError, match="two models"):
        parse_gpu_map(["a=V100", "A=K80"])


def test_trace_cluster_over_the_gpu_limit_writes_nothing_and_agrees_with_the_loader(tmp_path):
    # before: 13,000 nodes x 8 GPUs were written (exit 0) and `cluster show` refused the file
    rows = "".join(f"n{i},96000,262144,8,V100M16\n" for i in range(13_000))
    (tmp_path / "openb_node_list_big.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n" + rows)
    r = gpuweave("trace", "cluster", "openb_node_list_big.csv", "big.yaml", cwd=tmp_path)
    check_one_error(r, "openb_node_list_big.csv", "would not load", "cluster_gpus")
    assert not (tmp_path / "big.yaml").exists()
    raised = ("--limit", "cluster_gpus=200000")
    assert gpuweave(*raised, "trace", "cluster", "openb_node_list_big.csv", "big.yaml", cwd=tmp_path).returncode == 0
    assert gpuweave(*raised, "cluster", "show", "big.yaml", cwd=tmp_path).returncode == 0


def test_check_cluster_yaml_is_the_loaders_verdict(tmp_path):
    good = "name: x\nnodes:\n  - {count: 2, gpu: V100, gpus_per_node: 4, names: [a, b]}\n"
    assert check_cluster_yaml(good, source="src").total_gpus == 8
    twice = "name: x\nnodes:\n  - {count: 2, gpu: V100, gpus_per_node: 4, names: [a, a]}\n"
    with pytest.raises(InputError, match="would not load: node name 'a' is used twice") as info:
        check_cluster_yaml(twice, source="src")
    assert info.value.file == "src"
    (tmp_path / "twice.yaml").write_text(twice)
    with pytest.raises(InputError, match="node name 'a' is used twice"):
        load_cluster(tmp_path / "twice.yaml")


def test_a_simulation_config_refuses_non_finite_policy_options(tmp_path):
    from gpuweave.cluster.config import parse_config
    from gpuweave.errors import InputError

    with pytest.raises(InputError, match="policy option 'x' must be a finite number"):
        parse_config({"policy": "fifo", "policy_options": {"x": float("inf")}})
