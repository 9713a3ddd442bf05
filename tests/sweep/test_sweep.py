from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from sweep_helpers import executed, fake_runner, square

from gpuweave.errors import InputError
from gpuweave.sweep import (
    LocalExecutor,
    RayExecutor,
    TaskFailed,
    expand,
    load_sweep,
    make_executor,
    parse_sweep,
    run_sweep,
)

SMALL = {
    "base": {"jobs": 6, "cluster": "gavel-60", "rate_per_hour": 20},
    "grid": {"policy": ["fifo", "sjf"], "seed": [0, 1], "rate_per_hour": [30, 60]},
}


def spec_at(tmp_path, data=SMALL, name="small"):
    return parse_sweep(data, f"{name}.yaml", out=tmp_path / name)


def test_grid_expansion_is_the_cartesian_product_over_base(tmp_path):
    cells = expand(spec_at(tmp_path))
    assert len(cells) == 8
    assert [c.params for c in cells[:3]] == [
        {"policy": "fifo", "seed": 0, "rate_per_hour": 30},
        {"policy": "fifo", "seed": 0, "rate_per_hour": 60},
        {"policy": "fifo", "seed": 1, "rate_per_hour": 30},
    ]
    assert all(c.config.jobs == 6 and c.config.cluster == "gavel-60" for c in cells)
    assert {c.config.rate_per_hour for c in cells} == {30.0, 60.0}  # the grid overrides base
    assert len({c.key for c in cells}) == 8 and all(c.key == c.config.key() for c in cells)
    assert cells[5].describe() == "policy=sjf, seed=0, rate_per_hour=60"


def test_load_sweep_default_out_and_override(tmp_path):
    path = tmp_path / "mysweep.yaml"
    path.write_text("base: {jobs: 5}\ngrid:\n  policy: [fifo]\n")
    spec = load_sweep(path)
    assert spec.out == Path("gpuweave-out/sweeps/mysweep")
    assert len(expand(spec)) == 1
    assert load_sweep(path, out=tmp_path / "x").out == tmp_path / "x"
    path.write_text("grid: {policy: [fifo]}\nout: elsewhere/run1\n")
    assert load_sweep(path).out == Path("elsewhere/run1")


def test_bundled_example_sweep():
    spec = load_sweep(Path(__file__).parents[2] / "examples" / "sweeps" / "small.yaml")
    cells = expand(spec)
    assert len(cells) == 12
    assert {c.config.policy for c in cells} == {"fifo", "sjf", "yarn-cs"}
    assert {c.config.cluster for c in cells} == {"gavel-60"} and {c.config.jobs for c in cells} == {50}


@pytest.mark.parametrize(
    "data, field, message",
    [
        ([1, 2], None, "expected a mapping"),
        ({"grid": {}, "bogus": 1}, "bogus", "unknown key"),
        ({"base": [1]}, "base", "expected a mapping"),
        ({"base": {"polcy": "fifo"}}, "base.polcy", "unknown SimulationConfig field"),
        ({"grid": {"colour": [1]}}, "grid.colour", "unknown SimulationConfig field"),
        ({"grid": {"policy": "fifo"}}, "grid.policy", "expected a non-empty list"),
        ({"grid": {"policy": []}}, "grid.policy", "expected a non-empty list"),
        ({"grid": {"policy": ["fifo", "fifo"]}}, "grid.policy", "duplicate value fifo"),
        (
            {"base": {"policy": "fifo"}, "grid": {"rate_per_hour": [30, -1]}},
            "rate_per_hour",
            "cell rate_per_hour=-1: Input should be greater than or equal to 0.001",
        ),
        ({"grid": {"seed": [0]}}, "policy", "cell seed=0: Field required"),
        ({"grid": {"policy": ["fifo"], "rate_per_hour": [30, 30.0]}}, "grid", "are the same config"),
        ({"grid": {"policy": ["fifo"]}, "out": 3}, "out", "expected a file or directory name"),
    ],
)
def test_bad_sweep_specs(data, field, message):
    with pytest.raises(InputError) as exc:
        parse_sweep(data, "bad.yaml")
    assert exc.value.file == "bad.yaml" and exc.value.field == field
    assert message in exc.value.message


def test_bad_sweep_files(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_sweep(tmp_path / "missing.yaml")
    (tmp_path / "broken.yaml").write_text("grid: [policy: {\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_sweep(tmp_path / "broken.yaml")


def test_run_sweep_writes_tables_and_caches_finished_cells(tmp_path):
    spec = spec_at(tmp_path)
    df = run_sweep(spec, LocalExecutor(workers=1), progress=False, runner=fake_runner)
    out = tmp_path / "small"
    assert len(executed(out)) == 8
    assert len(df) == 8 and (df["status"] == "ok").all() and not df["cached"].any()
    assert list(df.columns[:5]) == ["policy", "seed", "rate_per_hour", "key", "status"]
    assert {"avg_jct_s", "utilization", "makespan_s", "run_dir"} <= set(df.columns)
    row = df[(df.policy == "sjf") & (df.seed == 1) & (df.rate_per_hour == 60)].iloc[0]
    assert row["avg_jct_s"] == pytest.approx(1000.0 * 0.5 * 1.0 * 1.1)
    assert (out / "runs" / row["key"] / "summary.json").is_file()

    csv = pd.read_csv(out / "sweep.csv")
    parquet = pd.read_parquet(out / "sweep.parquet")
    assert len(csv) == len(parquet) == 8
    assert list(parquet["key"]) == list(df["key"])
    summary = json.loads((out / "sweep_summary.json").read_text())
    assert (summary["cells"], summary["executed"], summary["cached"], summary["failed"]) == (8, 8, 0, 0)
    agg = {(a["policy"], a["rate_per_hour"]): a for a in summary["aggregate"]}
    assert agg[("fifo", 60)]["runs"] == 2
    assert agg[("fifo", 60)]["avg_jct_s"] == pytest.approx(1000.0 * 1.05)
    report = Path(summary["report"]).read_text()
    assert "Sweep aggregate" in report and "<h2>Comparison</h2>" in report and 'src="http' not in report
    assert (out / "report" / "sweep_avg_jct.png").read_bytes()[:4] == b"\x89PNG"

    # second run: everything is reused, nothing executes
    again = run_sweep(spec, LocalExecutor(workers=1), progress=False, runner=fake_runner, report=False)
    assert len(executed(out)) == 8
    assert again["cached"].all()
    pd.testing.assert_series_equal(again["avg_jct_s"], df["avg_jct_s"])
    assert json.loads((out / "sweep_summary.json").read_text())["executed"] == 0

    # a run without summary.json (or with a corrupt one) is run again, and only that one
    (out / "runs" / df.key[0] / "summary.json").unlink()
    (out / "runs" / df.key[1] / "summary.json").write_text("{truncated")
    run_sweep(spec, LocalExecutor(workers=1), progress=False, runner=fake_runner, report=False)
    assert len(executed(out)) == 10

    # a run made by other gpuweave code (its stamp differs) is run again, and only that one
    path = out / "runs" / df.key[2] / "summary.json"
    stale = json.loads(path.read_text())
    stale["gpuweave_code"] = "0" * 16
    path.write_text(json.dumps(stale))
    again = run_sweep(spec, LocalExecutor(workers=1), progress=False, runner=fake_runner, report=False)
    assert len(executed(out)) == 11 and int((~again["cached"]).sum()) == 1


def test_failed_cell_is_reported_and_retried(tmp_path):
    data = {"base": {"jobs": 4}, "grid": {"policy": ["fifo", "boom"], "rate_per_hour": [30, 90]}}
    spec = spec_at(tmp_path, data, "fails")
    df = run_sweep(spec, LocalExecutor(workers=1), progress=False, runner=fake_runner)
    failed = df[df.status == "failed"]
    assert list(failed.policy) == ["boom", "boom"]
    assert failed.error.iloc[1] == "RuntimeError: policy exploded at rate 90"
    assert failed.avg_jct_s.isna().all() and df[df.status == "ok"].avg_jct_s.notna().all()
    for key in failed.key:
        assert not (tmp_path / "fails" / "runs" / key / "summary.json").exists()
    summary = json.loads((tmp_path / "fails" / "sweep_summary.json").read_text())
    assert summary["failed"] == 2 and summary["ok"] == 2
    assert summary["failures"][0]["cell"] == "policy=boom, rate_per_hour=30"
    assert "policy exploded" in summary["failures"][0]["error"] and "Traceback" in summary["failures"][0]["traceback"]
    run_sweep(spec, LocalExecutor(workers=1), progress=False, runner=fake_runner, report=False)
    assert len(executed(tmp_path / "fails")) == 4 + 2  # only the failed cells ran again


def test_many_cells_get_the_aggregate_report(tmp_path):
    data = {"base": {"jobs": 3}, "grid": {"policy": ["fifo", "sjf", "x"], "rate_per_hour": [10, 20, 30, 40, 50]}}
    df = run_sweep(spec_at(tmp_path, data, "many"), LocalExecutor(workers=1), progress=True, runner=fake_runner)
    assert len(df) == 15 and (df.status == "ok").all()
    report = (tmp_path / "many" / "report" / "report.html").read_text()
    assert "Sweep aggregate" in report and "<h2>Summary</h2>" not in report
    assert report.count("data:image/png;base64,") == 1
    assert not (tmp_path / "many" / "report" / "busy_gpus.png").exists()


def test_local_executor_with_two_workers(tmp_path):
    done = []
    with LocalExecutor(workers=2) as ex:
        results = ex.map(square, [1, 2, 3, 4, 5], lambda i, v: done.append(i))
        assert results[:2] == [1, 4] and results[3:] == [16, 25]
        assert isinstance(results[2], TaskFailed) and results[2].error == "ValueError: three is not allowed"
        assert sorted(done) == [0, 1, 2, 3, 4]
        df = run_sweep(spec_at(tmp_path), ex, progress=False, runner=fake_runner, report=False)
    assert (df.status == "ok").all()
    pids = {line.split()[1] for line in executed(tmp_path / "small")}
    assert str(os.getpid()) not in pids and 1 <= len(pids) <= 2


def test_executor_options_are_checked(monkeypatch):
    with pytest.raises(InputError, match="unknown executor 'dask'"):
        make_executor("dask")
    with pytest.raises(InputError, match="--address needs --executor ray"):
        make_executor("local", address="auto")
    with pytest.raises(InputError, match="workers must be at least 1"):
        make_executor("local", workers=0)
    with pytest.raises(InputError, match="applies to a local Ray only"):
        make_executor("ray", workers=2, address="auto")
    assert isinstance(make_executor("ray", workers=2), RayExecutor)
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(InputError, match=r"needs Ray: pip install 'gpuweave\[ray\]'"):
        RayExecutor().map(square, [1])


@pytest.mark.ray
def test_ray_executor_on_a_local_two_cpu_ray(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    if ray.is_initialized():
        ray.shutdown()
    data = {"base": {"jobs": 4}, "grid": {"policy": ["fifo", "boom"], "seed": [0, 1]}}
    executor = RayExecutor(num_cpus=2)
    try:
        df = run_sweep(spec_at(tmp_path, data, "ray"), executor, progress=False, runner=fake_runner, report=False)
        assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2
        assert list(df.status) == ["ok", "ok", "failed", "failed"]
        assert df.error.iloc[2] == "RuntimeError: policy exploded at rate 60"
        results = executor.map(square, [2, 3])
        assert results[0] == 4 and isinstance(results[1], TaskFailed) and "three is not allowed" in results[1].error
    finally:
        executor.close()
        ray.shutdown()
    assert not ray.is_initialized()
    summary = json.loads((tmp_path / "ray" / "sweep_summary.json").read_text())
    assert summary["executor"] == "ray" and summary["ok"] == 2


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_cli_rejects_a_bad_sweep_file(tmp_path):
    (tmp_path / "bad.yaml").write_text("grid:\n  policy: fifo\n")
    res = _cli("sweep", "bad.yaml", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip() == "error: bad.yaml, field 'grid.policy': expected a non-empty list of values"


def test_cli_sweep_with_the_real_simulator(tmp_path, monkeypatch):
    pytest.importorskip("gpuweave.workload.profiles")
    pytest.importorskip("gpuweave.workload.traces.generate")
    from gpuweave.hardware.cluster_spec import bundled_clusters

    if "gavel-60" not in bundled_clusters():
        pytest.skip("bundled cluster gavel-60 not landed yet")
    from typer.testing import CliRunner

    from gpuweave.cli import app

    (tmp_path / "s.yaml").write_text("base: {jobs: 8}\ngrid:\n  policy: [fifo, sjf]\n  rate_per_hour: [30, 60]\n")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["sweep", "s.yaml", "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "gpuweave-out" / "sweeps" / "s"
    assert "4 cells: 4 run, 0 reused, 0 failed" in res.output
    assert f"wrote {Path('gpuweave-out/sweeps/s/report/report.html')}" in res.output
    df = pd.read_parquet(out / "sweep.parquet")
    assert len(df) == 4 and (df.status == "ok").all() and (df.jobs == 8).all()
    res = CliRunner().invoke(app, ["sweep", "s.yaml", "--workers", "1", "--no-progress"])
    assert res.exit_code == 0 and "4 cells: 0 run, 4 reused, 0 failed" in res.output


@pytest.mark.ray
def test_sweep_on_a_local_ray_listens_on_loopback_only(tmp_path):
    """Issue 13, item 4: `gpuweave sweep --executor ray` without --address starts its own Ray; every listening TCP
    socket of the sweep's process tree, sampled while it runs, is on 127.0.0.1 or ::1 (and Ray was seen up)."""
    import subprocess
    import time

    pytest.importorskip("ray")
    from tests.sockets import is_loopback, listening_sockets

    spec = tmp_path / "s.yaml"
    spec.write_text(f"base: {{cluster: gavel-60, jobs: 10}}\ngrid: {{policy: [fifo]}}\nout: {tmp_path / 'out'}\n")
    argv = [sys.executable, "-m", "gpuweave.cli", "sweep", str(spec), "--executor", "ray", "--workers", "1"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.Popen([*argv, "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    seen: dict[str, str] = {}
    while proc.poll() is None:
        seen.update(listening_sockets(proc.pid))
        time.sleep(0.2)
    out, err = proc.communicate()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert any("gcs_server" in owner for owner in seen.values()), seen
    assert not {address: owner for address, owner in seen.items() if not is_loopback(address)}
