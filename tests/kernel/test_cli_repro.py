"""CLI commands, trace files, torch.profiler import, synthetic models, reproduction plumbing, demo, benchmark."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpuweave.cli import app
from gpuweave.errors import InputError
from gpuweave.kernel.models import DEFAULT_PAIRS, model_names, model_trace
from gpuweave.kernel.torch_import import import_chrome_trace
from gpuweave.kernel.trace_format import Trace
from gpuweave.kernel.traces import hi_trace

runner = CliRunner()


def _cli(*args):
    """Run the console entry point in a subprocess (exit code 2 and one line for InputError)."""
    return subprocess.run(
        [sys.executable, "-c", "from gpuweave.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_trace_file_roundtrip_and_validation(tmp_path):
    p = tmp_path / "hi.json"
    hi_trace().save(p)
    assert Trace.load(p) == hi_trace()
    bad = {
        "format": "gpuweave.kernel.trace",
        "version": 1,
        "name": "x",
        "kernels": [
            {"id": "a", "dur": 1.0, "cpu_before": 0.0, "sync_after": True},
            {"id": "b", "dur": -1, "cpu_before": 0, "sync_after": True},
        ],
    }
    with pytest.raises(InputError, match="row 2.*dur"):
        Trace.from_dict(bad, file="t.json")
    bad["kernels"][1] = {"id": "b", "dur": 1.0, "sync_after": True}
    with pytest.raises(InputError, match="cpu_before"):
        Trace.from_dict(bad)
    gap = {
        "format": "gpuweave.kernel.trace",
        "version": 1,
        "name": "g",
        "kernels": [{"id": "a", "dur": 1.0, "gap_after": 2.0}, {"id": "b", "dur": 0.5, "gap_after": 0.0}],
    }
    t = Trace.from_dict(gap)
    assert [o.cpu_before for o in t.ops] == [0.0, 2.0] and all(o.sync_after for o in t.ops)


def test_synthetic_models():
    assert len(model_names()) == 12 and len(DEFAULT_PAIRS) == 10
    t = model_trace("resnet50")
    assert t.n == 160 and model_trace("resnet50") is t
    with pytest.raises(InputError):
        model_trace("gpt4")


def _chrome(with_launch=True):
    ev = []
    ts = 1000.0
    for i in range(4):
        corr = 10 + i
        if with_launch:
            ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "ts": ts,
                    "dur": 5.0,
                    "args": {"correlation": corr},
                }
            )
        ev.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"void gemm<{i % 2}>",
                "ts": ts + 10,
                "dur": 100.0,
                "args": {"grid": [80, 1, 1], "block": [256, 1, 1], "stream": 7, "correlation": corr},
            }
        )
        if i == 1 and with_launch:
            ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaStreamSynchronize",
                    "ts": ts + 6,
                    "dur": 110.0,
                    "args": {},
                }
            )
            ts += 116 + 40
        else:
            ts += 20
    return {"traceEvents": ev}


def test_torch_profiler_import(tmp_path):
    trace, rep = import_chrome_trace(_chrome())
    assert rep.kernels == 4 and rep.with_launch_events == 4 and rep.syncs == 1 and rep.missing_dims == 0
    assert trace.ops[0].kid == "void gemm<0>|b256,1,1|g80,1,1"
    assert trace.ops[1].sync_after and not trace.ops[0].sync_after
    assert trace.ops[2].cpu_before == pytest.approx(0.04)  # launch 2 at sync end + 40 µs
    assert trace.ops[1].cpu_before == pytest.approx(0.015)  # 20 µs between launches − 5 µs launch call
    assert all(o.dur == pytest.approx(0.1) for o in trace.ops)
    t2, rep2 = import_chrome_trace(_chrome(False))
    assert rep2.with_launch_events == 0 and t2.n == 4
    with pytest.raises(InputError, match="no kernel events"):
        import_chrome_trace({"traceEvents": []})
    broken = _chrome()
    broken["traceEvents"][1]["dur"] = -3
    with pytest.raises(InputError, match="expected a number of µs from 0"):
        import_chrome_trace(broken)
    p = tmp_path / "prof.json"
    p.write_text(json.dumps(_chrome()))
    r = runner.invoke(app, ["kernel", "import-torch", str(p), "--out", str(tmp_path / "t.json")])
    assert r.exit_code == 0, r.output
    assert Trace.load(tmp_path / "t.json").n == 4


def test_kernel_simulate_and_profile_cli(tmp_path):
    cfg = tmp_path / "sim.yaml"
    cfg.write_text(
        "mode: fikit\njitter: 0.0\nservices:\n"
        "  - {name: A, trace: canonical:HI, priority: 0, workload: {kind: back_to_back, n: 2}}\n"
        "  - {name: B, trace: canonical:LO, priority: 1, workload: {kind: back_to_back, n: null}}\n"
    )
    out = tmp_path / "jct.csv"
    r = runner.invoke(app, ["kernel", "simulate", str(cfg), "--out", str(out), "--timeline", str(tmp_path / "t.png")])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(out.open()))
    a = [float(x["jct_ms"]) for x in rows if x["service"] == "A"]
    assert len(a) == 2 and a[0] == pytest.approx(413.64, rel=0.01)
    assert (tmp_path / "t.png").stat().st_size > 1000
    r = runner.invoke(app, ["kernel", "simulate", str(cfg), "--mode", "share_timeslice"])
    assert r.exit_code == 0 and "share_timeslice q=2 ms" in r.output
    runs = []
    for i in range(3):
        p = tmp_path / f"run{i}.json"
        hi_trace().save(p)
        runs.append(str(p))
    r = runner.invoke(app, ["kernel", "profile", *runs, "--task-key", "svc-a", "--out", str(tmp_path / "prof")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "prof" / "svc-a.json").read_text())["runs"] == 3


@pytest.mark.parametrize(
    "yaml_text,needle",
    [
        ("services:\n  - {name: A, trace: canonical:HI, priority: 12}\n", "priority"),
        ("services:\n  - {name: A, trace: canonical:NOPE, priority: 0}\n", "unknown canonical trace"),
        ("services:\n  - {name: A, priority: 0}\n", "trace"),
        ("mode: mps\nservices:\n  - {name: A, trace: canonical:HI, priority: 0}\n", "mode"),
        ("services: [\n", "not valid YAML"),
    ],
)
def test_cli_bad_input_one_line_exit_2(tmp_path, yaml_text, needle):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml_text)
    p = _cli("kernel", "simulate", str(cfg))
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_repro_fikit_plumbing(tmp_path):
    from gpuweave.repro.registry import ReproContext, all_reproductions, run_reproduction

    assert "fikit" in all_reproductions()
    out = tmp_path / "fikit"
    rows = run_reproduction("fikit", ReproContext(out_dir=out, options={"smoke": True}))
    with open(out / "comparison.csv") as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0]) == ["experiment", "metric", "paper", "ours", "unit", "note"]
    assert len(table) == len(rows) > 30
    sim_rows = [r for r in table if r["experiment"].startswith("IV")]
    assert all("share" in r["note"] for r in sim_rows)  # the sharing model is stated on every simulated line
    by = {(r["experiment"], r["metric"]): r for r in table}
    assert float(by[("Table 2", "window (min of four totals)")]["ours"]) == pytest.approx(16.02363, rel=1e-5)
    assert float(by[("Fig. 12", "fillers before holder kernel, with feedback")]["ours"]) == 3
    for png in ("timeline_fig8.png", "timeline_fig12.png", "fikit_experiments.png"):
        assert (out / png).stat().st_size > 1000
    assert (out / "fikit_pairs.csv").exists()


def test_demo_section(tmp_path):
    from gpuweave.demo.sections import DemoContext, demo_sections

    fn = dict(demo_sections())["fikit"]
    sec = fn(DemoContext(out_dir=tmp_path, quick=True))
    assert [r["mode"].split(" ")[0] for r in sec.table] == ["exclusive", "default", "FIKIT"]
    fikit, share = sec.table[2], sec.table[1]
    assert fikit["HI mean JCT ms"] < share["HI mean JCT ms"]
    assert sec.figures and sec.figures[0].path.stat().st_size > 1000 and sec.figures[0].csv.is_file()


def test_fikit_serve_rejects_bad_port():
    p = _cli("fikit", "serve", "--port", "70000")
    assert p.returncode == 2 and "port" in p.stderr


def test_benchmark_simulator_speed(benchmark):
    from gpuweave.kernel.bench import sim_speed

    r = benchmark.pedantic(sim_speed, args=(5,), rounds=1, iterations=1)
    assert r["kernels"] == 5 * 200 + 16 * 300 and r["events"] > r["kernels"]
