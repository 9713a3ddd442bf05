"""`gpuweave gpus` and `gpuweave cluster show|list`: output, and exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpuweave.cli import app as root_app
from gpuweave.errors import InputError

runner = CliRunner()


@pytest.fixture(scope="module")
def app():
    """The real root app (the gpus and cluster commands are in gpuweave.cli.gpus and gpuweave.cli.cluster)."""
    return root_app


def _ok(app, *args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_gpus_table(app):
    out = _ok(app, "gpus")
    for name in ("K80", "A100-40GB", "H100-80GB", "B200", "RTX3090"):
        assert name in out
    assert "MIG slices" in out


def test_gpus_partitions_and_tree(app):
    out = _ok(app, "gpus", "A100", "--partitions", "--tree")
    assert "19 maximal MIG partitions" in out
    for label in ("4-2-1", "3-3", "1-1-1-1-2-1", "1-1-1-1-1-1-1"):
        assert f" {label} " in out
    assert "Node(start=0, size=3, occ={S0,S1,S2,S3})" in out
    assert "7 non-leaf nodes" in out
    assert "5 maximal MIG partitions" in _ok(app, "gpus", "a30", "--partitions")


def test_gpu_detail_shows_sources(app):
    out = _ok(app, "gpus", "h200")
    assert "141" in out and "stand-in" in out


def test_cluster_list_and_show(app):
    out = _ok(app, "cluster", "list")
    assert "gavel-60" in out and "mixed-1024" in out
    out = _ok(app, "cluster", "show", "gavel-60")
    assert "15 nodes, 60 GPUs" in out and "K80" in out and "v100-0 .. v100-4" in out


def test_gpus_say_which_sharing_modes_each_model_supports(app):
    lines = {line.split()[1]: line for line in _ok(app, "gpus").splitlines() if line.startswith("│")}
    assert "whole, fraction, mig" in lines["A100-40GB"] and "whole, fraction, mig" in lines["A30"]
    assert "whole, fraction" in lines["T4"] and "mig" not in lines["T4"]
    catalog = {g["name"]: g for g in json.loads(_ok(app, "gpus", "--json"))}
    assert catalog["H200"]["sharing"] == ["whole", "fraction", "mig"] and catalog["K80"]["sharing"] == [
        "whole",
        "fraction",
    ]
    assert catalog["K80"]["mig_profiles"] == [] and catalog["A30"]["mig_profiles"] == ["1g.6gb", "2g.12gb", "4g.24gb"]


def test_gpu_detail_names_its_mig_profiles(app):
    out = _ok(app, "gpus", "A100")
    assert "1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb" in out and "whole, fraction, mig" in out
    assert "mig profiles" not in _ok(app, "gpus", "T4")
    detail = json.loads(_ok(app, "gpus", "H200", "--json"))
    assert detail["mig_profiles"] == ["1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"]


MIG_SPEC = (
    "name: mixed\nnodes:\n"
    "  - {count: 2, gpu: A100, gpus_per_node: 8, cpu_milli: 128000, memory_mib: 1048576, sharing: mig}\n"
    "  - {count: 3, gpu: T4, gpus_per_node: 4, sharing: fraction}\n"
)


def test_cluster_show_gives_sharing_resources_and_mig_partitions(app, tmp_path):
    spec = tmp_path / "mixed.yaml"
    spec.write_text(MIG_SPEC)
    out = _ok(app, "cluster", "show", str(spec))
    groups = [line for line in out.splitlines() if line.startswith("│ 0 ") or line.startswith("│ 1 ")]
    assert " mig " in groups[0] and " 128 " in groups[0] and " 1024 " in groups[0]
    assert " fraction " in groups[1] and " - " in groups[1]  # no cpu_milli, memory_mib: not a limit
    assert "MIG partitions" in out and "19: 7, 4-3, 4-2-1" in out and "1g.5gb, 2g.10gb" in out
    shown = json.loads(_ok(app, "cluster", "show", str(spec), "--json"))["node_groups"]
    partitions = json.loads(_ok(app, "gpus", "A100", "--partitions", "--json"))["partitions"]
    assert shown[0]["sharing"] == "mig" and shown[0]["mig_partitions"] == partitions
    assert (shown[0]["cpu_milli"], shown[0]["memory_mib"]) == (128000, 1048576)
    assert shown[0]["mig_profiles"] == ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    assert shown[1]["sharing"] == "fraction"
    assert not {"cpu_milli", "memory_mib", "mig_partitions", "mig_profiles"} & set(shown[1])
    assert "MIG partitions" not in _ok(app, "cluster", "show", "gavel-60")


@pytest.mark.parametrize(
    "args",
    [
        ["gpus", "NoSuchGPU"],
        ["gpus", "V100", "--tree"],
        ["gpus", "--partitions"],
        ["cluster", "show", "no-such-cluster"],
    ],
)
def test_bad_input_raises_input_error(app, args):
    result = runner.invoke(app, args)
    assert isinstance(result.exception, InputError), result.output


def _main(args: list[str]) -> tuple[int, str]:
    """Run the real console entry point (gpuweave.cli:main) in a subprocess and return its exit code."""
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from gpuweave.cli import main; sys.argv[0] = 'gpuweave'; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stderr


def test_main_exit_code_2_on_unknown_gpu_and_bad_cluster(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("name: c\nnodes:\n  - {gpu: V100, gpus_per_node: 1}\n  - {gpu: Q1, gpus_per_node: 1}\n")
    code, err = _main(["gpus", "NoSuchGPU"])
    assert code == 2 and err.startswith("error:") and "NoSuchGPU" in err and "Traceback" not in err
    code, err = _main(["cluster", "show", str(bad)])
    assert code == 2 and "nodes[1].gpu" in err and "c.yaml" in err and len(err.strip().splitlines()) == 1
