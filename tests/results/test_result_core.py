"""The result core: every grain writes a result directory that `gpuweave report` and `gpuweave sweep` read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuweave import __version__
from gpuweave.cli import app
from gpuweave.errors import InputError
from gpuweave.fingerprint import code_fingerprint
from gpuweave.report.grains import report_runs
from gpuweave.results import (
    KINDS,
    ResultCore,
    is_current,
    read_result_dir,
    write_result,
)
from gpuweave.sweep import load_sweep, run_sweep
from gpuweave.sweep.executors import LocalExecutor

ROOT = Path(__file__).parents[2]
CORE_KEYS = {"kind", "config", "seed", "version", "fingerprint", "metrics"}
PROFILE = ROOT / "src" / "gpuweave" / "packs" / "examples" / "burn_profile.csv"
KERNEL_CONFIG = ROOT / "examples" / "kernel" / "two-services.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def assert_core(run_dir: Path, kind: str) -> dict:
    summary = read_result_dir(run_dir)
    assert CORE_KEYS <= set(summary)
    assert summary["kind"] == kind and summary["version"] == __version__
    assert summary["fingerprint"] == code_fingerprint() and is_current(summary)
    assert summary["metrics"] and all(v is None or isinstance(v, (int, float)) for v in summary["metrics"].values())
    return summary


@pytest.fixture(scope="module")
def tasks_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mig") / "batch.csv"
    cli("mig", "generate", str(path), "--n", "6", "--seed", "3")
    return path


def test_mig_result_directory(tmp_path, tasks_csv):
    cli("plan", "mig", str(tasks_csv), "--out", str(tmp_path / "far"), "--json", str(tmp_path / "far.json"))
    summary = assert_core(tmp_path / "far", "mig")
    assert {p.name for p in (tmp_path / "far").iterdir()} == {"schedule.json", "tasks.csv", "summary.json"}
    assert (tmp_path / "far" / "schedule.json").read_bytes() == (tmp_path / "far.json").read_bytes()
    m = summary["metrics"]
    assert m["makespan_s"] >= m["lower_bound_s"] > 0
    assert m["ratio"] == pytest.approx(m["makespan_s"] / m["lower_bound_s"])
    assert summary["config"]["algo"] == "far" and summary["config"]["tasks"] == str(tasks_csv)
    assert len((tmp_path / "far" / "tasks.csv").read_text().splitlines()) == 1 + 6
    cli("mig", "validate", str(tmp_path / "far" / "schedule.json"), "--tasks", str(tasks_csv))
    first = (tmp_path / "far" / "summary.json").read_bytes()
    cli("plan", "mig", str(tasks_csv), "--out", str(tmp_path / "far"))
    assert (tmp_path / "far" / "summary.json").read_bytes() == first  # reruns are byte-identical


def test_packs_result_directory(tmp_path):
    cli("plan", "packs", str(PROFILE), "--out", str(tmp_path / "p"))
    summary = assert_core(tmp_path / "p", "packs")
    assert {p.name for p in (tmp_path / "p").iterdir()} == {"plan.json", "packs.csv", "summary.json"}
    assert {"relative_cost", "packing_ratio", "relative_response_time", "cost_s"} <= set(summary["metrics"])
    assert summary["seed"] == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()}
    cli("plan", "packs", str(PROFILE), "--out", str(tmp_path / "p"))
    assert {p.name: p.read_bytes() for p in (tmp_path / "p").iterdir()} == before  # no measured timing inside


def test_kernel_result_directory_and_csv_spelling(tmp_path):
    cli("kernel", "simulate", str(KERNEL_CONFIG), "--out", str(tmp_path / "k"))
    cli("kernel", "simulate", str(KERNEL_CONFIG), "--out", str(tmp_path / "k.csv"))
    summary = assert_core(tmp_path / "k", "kernel")
    assert {p.name for p in (tmp_path / "k").iterdir()} == {"tasks.csv", "services.csv", "kernels.csv", "summary.json"}
    assert (tmp_path / "k" / "tasks.csv").read_bytes() == (tmp_path / "k.csv").read_bytes()
    assert {"mean_jct_ms[A]", "mean_jct_ms[B]", "busy_fraction"} <= set(summary["metrics"])
    assert summary["config"]["mode"] == "fikit"


def test_cluster_summary_keeps_its_keys_and_gains_the_core(tmp_path):
    from gpuweave.cluster.config import parse_config
    from gpuweave.cluster.run import run_simulation

    run_simulation(parse_config({"policy": "fifo", "jobs": 8}), tmp_path / "c")
    summary = assert_core(tmp_path / "c", "cluster")
    assert {"gpuweave_version", "gpuweave_code", "policy", "cluster", "definitions"} <= set(summary)


def test_failed_run_leaves_nothing(tmp_path):
    def broken(staging: Path) -> None:
        (staging / "tasks.csv").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_result(tmp_path / "r", ResultCore("mig", {}, None, {"makespan_s": 1.0}), broken)
    assert list(tmp_path.iterdir()) == []


def test_core_rejects_unknown_kind_and_non_numbers():
    assert KINDS == ("cluster", "mig", "packs", "kernel", "sharing")
    with pytest.raises(ValueError):
        ResultCore("gpu", {}, None, {})
    with pytest.raises(ValueError):
        ResultCore("mig", {}, None, {"ratio": "high"})


def _report_files(out: Path) -> list[str]:
    assert (out / "report.html").is_file()
    pngs = sorted(out.glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == PNG_MAGIC for p in pngs)
    return [p.name for p in pngs]


def test_report_on_each_grain_and_mixed_kinds_refused(tmp_path, tasks_csv):
    cli("plan", "mig", str(tasks_csv), "--out", str(tmp_path / "mig-far"))
    cli("plan", "mig", str(tasks_csv), "--algo", "miso-opt", "--out", str(tmp_path / "mig-miso"))
    cli("plan", "packs", str(PROFILE), "--out", str(tmp_path / "packs-a"))
    cli("plan", "packs", str(PROFILE), "--algo", "exact", "--out", str(tmp_path / "packs-b"))
    cli("kernel", "simulate", str(KERNEL_CONFIG), "--out", str(tmp_path / "kernel"))

    cli("report", str(tmp_path / "mig-far"), str(tmp_path / "mig-miso"), "--out", str(tmp_path / "r-mig"))
    names = _report_files(tmp_path / "r-mig")
    assert "mig_makespan.png" in names and sum(n.startswith("gantt_") for n in names) == 2
    html = (tmp_path / "r-mig" / "report.html").read_text()
    assert "Comparison" in html and "ratio" in html and "miso-opt" in html

    report_runs([tmp_path / "packs-a", tmp_path / "packs-b"], tmp_path / "r-packs")
    assert "packs_comparison.png" in _report_files(tmp_path / "r-packs")
    assert "relative_response_time" in (tmp_path / "r-packs" / "report.html").read_text()

    report_runs([tmp_path / "kernel"], tmp_path / "r-kernel")
    # the kernel timeline comes from the run's kernels.csv (the first 20 ms)
    assert _report_files(tmp_path / "r-kernel") == ["kernel_jct.png", "kernel_jct_cdf.png", "timeline_00_fikit.png"]

    with pytest.raises(InputError, match="different kinds"):
        report_runs([tmp_path / "mig-far", tmp_path / "packs-a"], tmp_path / "r-mixed")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "kernel"), str(tmp_path / "mig-far")])
    assert isinstance(result.exception, InputError) and "\n" not in result.exception.one_line()
    assert not (tmp_path / "r-mixed").exists()


@pytest.mark.parametrize("example, metric", [("mig-small.yaml", "ratio"), ("packs-small.yaml", "relative_cost")])
def test_sweep_of_a_grain_is_cached(tmp_path, example, metric):
    spec = load_sweep(ROOT / "examples" / "sweeps" / example, out=tmp_path / "s")
    spec.base = {**spec.base, "n": 6}  # small: the example's grid, smaller batches
    spec.grid = {"algo": spec.grid["algo"][:2], "seed": [0, 1]}
    first = run_sweep(spec, LocalExecutor(1), progress=False)
    assert list(first["status"]) == ["ok"] * 4 and not first["cached"].any()
    assert first[metric].notna().all()
    for run_dir in first["run_dir"]:
        assert_core(Path(run_dir), spec.grain)
    summary = json.loads((tmp_path / "s" / "sweep_summary.json").read_text())
    assert summary["grain"] == spec.grain and len(summary["aggregate"]) == 2
    assert (tmp_path / "s" / "report" / "report.html").is_file()
    again = run_sweep(spec, LocalExecutor(1), progress=False, report=False)
    assert again["cached"].all() and again.attrs["summary"]["executed"] == 0
    assert list(again[metric]) == list(first[metric])


def test_sweep_names_a_known_grain_and_checks_names_early(tmp_path):
    from gpuweave.sweep import parse_sweep

    with pytest.raises(InputError, match="unknown grain"):
        parse_sweep({"grain": "gpu", "grid": {"seed": [0]}}, "s.yaml", out=tmp_path / "s")
    with pytest.raises(InputError, match="unknown MIG algorithm"):
        parse_sweep({"grain": "mig", "grid": {"algo": ["far", "nope"]}}, "s.yaml", out=tmp_path / "s")
    with pytest.raises(InputError, match="unknown MigBatchConfig field"):
        parse_sweep({"grain": "mig", "grid": {"policy": ["fifo"]}}, "s.yaml", out=tmp_path / "s")
    with pytest.raises(InputError, match="unknown workload"):
        parse_sweep({"grain": "packs", "base": {"workload": "IV"}}, "s.yaml", out=tmp_path / "s")


@pytest.mark.parametrize("total", [1e-308, 2.5, -8, "64", True])
def test_a_summary_s_gpu_count_is_a_whole_number(tmp_path, total):
    """Found by the report fuzzer: a total of 1e-308 GPUs made the utilisation plots overflow (a warning on stderr
    and nonsense percentages); it is refused as the user error it is, naming the file and field."""
    run = tmp_path / "run"
    run.mkdir()
    summary = {"kind": "cluster", "metrics": {"jobs": 8}, "cluster": {"total_gpus": total, "gpus_by_model": {}}}
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InputError, match="cluster.total_gpus") as err:
        read_result_dir(run)
    assert "summary.json" in str(err.value)
    summary["cluster"]["total_gpus"] = 0  # a live run that lost every node: allowed (the plots fall back)
    (run / "summary.json").write_text(json.dumps(summary))
    assert read_result_dir(run)["cluster"]["total_gpus"] == 0
