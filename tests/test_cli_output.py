"""CLI habits: every listing and summary command's --json parses; progress bars appear on a terminal and never in
piped output; tables fit 80 columns without breaking a word (the shared helper gpuweave.cli.output)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from gpuweave.cli.output import fit_tables

ROOT = Path(__file__).resolve().parent.parent
KERNEL_CONFIG = ROOT / "examples" / "kernel" / "two-services.yaml"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


LISTINGS = [
    (("gpus",), lambda d: {"V100", "K80", "H200"} <= {g["name"] for g in d} and any(g["mig_slices"] for g in d)),
    (("gpus", "A100", "--partitions"), lambda d: d["name"].startswith("A100") and len(d["partitions"]) == 19),
    (("cluster", "policies"), lambda d: {"fifo", "hadar", "gavel"} <= {e["name"] for e in d}),
    (("cluster", "list"), lambda d: "gavel-60" in {c["name"] for c in d} and all(c["gpus"] > 0 for c in d)),
    (("cluster", "show", "gavel-60"), lambda d: d["gpus"] == 60 and d["node_groups"]),
    (("mig", "algos"), lambda d: "far" in {e["name"] for e in d}),
    (("packs", "algos"), lambda d: "pack-by-pack-9" in {e["name"] for e in d}),
    (("kernel", "modes"), lambda d: "fikit" in {e["name"] for e in d}),
    (("repro", "list"), lambda d: {"far", "hadar", "packs"} <= {r["name"] for r in d}),
]


@pytest.mark.parametrize("args, check", LISTINGS, ids=[" ".join(a) for a, _ in LISTINGS])
def test_listing_json_parses(args, check):
    res = cli(*args, "--json")
    assert res.returncode == 0, res.stderr
    assert check(json.loads(res.stdout))


def test_summary_commands_json_parse(tmp_path):
    res = cli("cluster", "simulate", "--policy", "sjf", "--jobs", "40", "--out", str(tmp_path / "run"), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["policy"] == "sjf" and data["metrics"]["jobs"] == 40 and data["results"] == str(tmp_path / "run")

    trace = tmp_path / "jobs.csv"
    assert cli("trace", "generate", str(trace), "--jobs", "30", "--seed", "1").returncode == 0
    info = json.loads(cli("trace", "info", str(trace), "--json").stdout)
    assert info["jobs"] == 30 and sum(info["gpus_per_job"].values()) == 30

    kernel = json.loads(cli("kernel", "simulate", str(KERNEL_CONFIG), "--mode", "fikit", "--json").stdout)
    assert kernel["mode"] == "fikit" and kernel["metrics"]["kernels"] > 0

    bench = json.loads(cli("bench", "sim", "--jobs", "50", "--gpus", "24", "--json").stdout)
    assert bench["bench"] == "sim" and bench["jobs"] == 50


def test_progress_bar_only_on_a_terminal(tmp_path):
    args = ("cluster", "simulate", "--policy", "fifo", "--jobs", "300")
    piped = cli(*args, "--out", str(tmp_path / "piped"))
    assert piped.returncode == 0, piped.stderr
    for stream in (piped.stdout, piped.stderr):
        assert "jobs done" not in stream and "\x1b[" not in stream and "\r" not in stream
    assert "results:" in piped.stdout

    on_tty = _run_on_a_pty([sys.executable, "-m", "gpuweave.cli", *args, "--out", str(tmp_path / "tty")])
    assert b"jobs done" in on_tty  # the bar is drawn on a terminal ...
    quiet = _run_on_a_pty([sys.executable, "-m", "gpuweave.cli", *args, "--out", str(tmp_path / "q"), "--quiet"])
    assert b"jobs done" not in quiet and b"results:" in quiet  # ... and not with --quiet


def _run_on_a_pty(argv: list[str]) -> bytes:
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        try:
            data = os.read(master, 65536) if ready else b""
        except OSError:  # the child closed the terminal
            data = b""
        if not data:
            break
        out += data
    os.close(master)
    assert proc.wait(timeout=120) == 0, out[-2000:]
    return out


TABLES = [("cluster", "policies"), ("gpus",), ("cluster", "list"), ("repro", "list"), ("mig", "algos")]


@pytest.mark.parametrize("args", TABLES, ids=[" ".join(a) for a in TABLES])
def test_tables_fit_80_columns_without_breaking_words(args):
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    listing = json.loads(cli(*args, "--json").stdout)
    for name in [e["name"] for e in listing]:  # names never folded over two lines
        assert any(name in line for line in lines), name


def test_fit_tables_splits_columns_and_keeps_words():
    columns = ["policy", *(f"metric number {i} (h)" for i in range(8))]
    rows = [["gavel-min-total-duration", *("123456.789" for _ in range(8))], ["hadar[slack-srpt]", *("1" * 8)]]
    tables = fit_tables("wide", columns, rows, 80)
    assert len(tables) > 1 and all(t.columns[0].header.plain == "policy" for t in tables)
    console = Console(width=80, record=True)
    for table in tables:
        console.print(table)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "gavel-min-total-duration" in text and "hadar[slack-srpt]" in text and "123456.789" in text
