"""`gpuweave gpus` and `gpuweave cluster show|list`: output, and exit code 2 on bad input."""

from __future__ import annotations

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
