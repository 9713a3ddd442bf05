"""The CLI a user types: help, version, and bad input as one line with exit code 2."""

from __future__ import annotations

import subprocess

from gpuweave import __version__
from tests.cli_harness import run_cli


def gw(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd)


def test_help_lists_the_command_groups():
    res = gw("--help")
    assert res.returncode == 0
    for word in ("simulate", "repro", "bench", "demo", "plan"):
        assert word in res.stdout


def test_version():
    res = gw("--version")
    assert res.returncode == 0 and __version__ in res.stdout


def test_unknown_policy_is_one_line_exit_2(tmp_path):
    res = gw("simulate", "--policy", "no-such-policy", "--jobs", "5", "--out", str(tmp_path / "r"))
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "unknown cluster policy 'no-such-policy'" in lines[0]
    assert not (tmp_path / "r").exists()


def test_bad_config_names_the_field(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("policy: fifo\nrestart_delay: -3\n")
    res = gw("simulate", str(cfg))
    assert res.returncode == 2
    assert "bad.yaml" in res.stderr and "restart_delay" in res.stderr
    assert "Traceback" not in res.stderr


def test_unknown_reproduction_exit_2():
    res = gw("repro", "run", "nope")
    assert res.returncode == 2 and "unknown reproduction" in res.stderr
