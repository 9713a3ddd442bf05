"""docs/replay.md's steps on the head of the real Philly list: convert, inspect, simulate on a cluster YAML with
--extrapolate, compare in a report (the page's figures are from the whole list; this checks that the steps work)."""

from __future__ import annotations

import json

from .test_trace_cli import run

CLUSTER = """name: philly-v100
description: 128 nodes of 8 V100 (1,024 GPUs), to replay the Philly job list
nodes:
  - {count: 128, gpu: V100, gpus_per_node: 8}
"""


def test_the_replay_guide_runs_on_the_head_of_philly(monkeypatch, capsys, tmp_path, shared_data):
    lines = (shared_data / "philly" / "philly.csv").read_text(encoding="utf-8").splitlines()
    big = next(i for i, line in enumerate(lines) if i and int(line.split(",")[2]) > 8)  # a job past the profiles
    source = tmp_path / "philly.csv"
    source.write_text("\n".join(lines[: max(2_001, big + 1)]) + "\n", encoding="utf-8")
    trace, cluster = tmp_path / "philly.parquet", tmp_path / "philly-v100.yaml"
    cluster.write_text(CLUSTER, encoding="utf-8")
    code, out, err = run(monkeypatch, capsys, "trace", "convert", str(source), str(trace))
    assert code == 0 and "(philly)" in out, err
    code, out, _ = run(monkeypatch, capsys, "trace", "info", str(trace), "--json")
    info = json.loads(out)
    assert code == 0 and info["vcs"] >= 1 and info["gpu_hours_on_reference_gpu"] > 0
    runs = []
    for policy in ("fifo", "yarn-cs"):
        runs.append(str(tmp_path / "runs" / policy))
        args = ["cluster", "simulate", "--policy", policy, "--trace", str(trace), "--cluster", str(cluster)]
        code, out, err = run(monkeypatch, capsys, *args, "--extrapolate", "--out", runs[-1], "--quiet", "--json")
        assert code == 0, err
        assert json.loads(out)["metrics"]["completed"] == info["jobs"]
    code, _, err = run(monkeypatch, capsys, "report", *runs, "--out", str(tmp_path / "cmp"), "--quiet")
    assert code == 0, err
    assert (tmp_path / "cmp" / "report.html").is_file() and (tmp_path / "cmp" / "jct_cdf.csv").is_file()
