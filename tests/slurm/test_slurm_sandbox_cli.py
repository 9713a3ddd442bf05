"""``gpuweave slurm sandbox start|status|stop``: the documented way to try the slurm executor (docs/slurm.md).

The end-to-end test starts its own sandbox through the CLI (not the session's fixture), runs a short live run of
examples/slurm/try.yaml on it, stops it and checks that no daemon of it is left. It needs root and Debian's
Slurm packages and is skipped without them (under CI as root a missing Slurm fails, as in conftest.py). The
bad-input tests run everywhere.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuweave.cli import run
from gpuweave.live import slurm_sandbox

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "slurm"


def _cli(*args: str, env: dict | None = None, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}  # the sandbox's own Slurm, not the session's
    full.update({"PYTHONPATH": str(ROOT / "src"), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _need_slurm() -> None:
    reason = slurm_sandbox.missing_requirements()
    if reason:
        if os.environ.get("CI") and os.name == "posix" and os.geteuid() == 0:
            pytest.fail(f"CI runs as root and .ci/run installs Slurm, yet: {reason}")
        pytest.skip(reason)


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(f"{proc.name}: {cmdline}")
    return found


def _short_run_config(tmp_path: Path) -> Path:
    """examples/slurm/try.yaml as it is, on its first three jobs (a quarter of a minute instead of one)."""
    for name in ("try.yaml", "cluster.yaml"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    lines = (EXAMPLE / "try-trace.csv").read_text().splitlines()
    (tmp_path / "try-trace.csv").write_text("\n".join(lines[:4]) + "\n")
    return tmp_path / "try.yaml"


def test_start_status_run_stop_leaves_no_daemon(tmp_path):
    _need_slurm()
    box = tmp_path / "box"
    started = _cli("slurm", "sandbox", "start", "--dir", str(box), "--json")
    try:
        assert started.returncode == 0, started.stderr
        state = json.loads(started.stdout)
        assert state["state"] == "running" and state["already_running"] is False
        assert [d["name"] for d in state["daemons"]] == ["munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"]
        again = _cli("slurm", "sandbox", "start", "--dir", str(box))
        assert again.returncode == 0 and f"a sandbox already runs in {box}; started nothing" in again.stdout
        status = json.loads(_cli("slurm", "sandbox", "status", "--dir", str(box), "--json").stdout)
        assert status["state"] == "running" and all(d["running"] for d in status["daemons"])
        assert [d["pid"] for d in status["daemons"]] == [d["pid"] for d in state["daemons"]]  # no second sandbox

        config = _short_run_config(tmp_path)
        assert yaml.safe_load(config.read_text())["executor"]["kind"] == "slurm"
        out = tmp_path / "run"
        live = _cli("cluster", "run", str(config), "--executor", "slurm", "--out", str(out), "--json", env=state["env"])
        assert live.returncode == 0, live.stderr[-3000:]
        summary = json.loads((out / "summary.json").read_text())
        assert summary["executor"] == "slurm" and summary["metrics"]["completed"] == 3
        (box / "notes.txt").write_text("mine\n")  # a file of the user's in the folder stays
    finally:
        stopped = _cli("slurm", "sandbox", "stop", "--dir", str(box))
    assert stopped.returncode == 0 and stopped.stdout.startswith(f"stopped the sandbox in {box}"), stopped.stderr
    for daemon in state["daemons"]:  # each recorded pid is gone (a zombie awaiting init's reaping counts as gone)
        assert slurm_sandbox._start_ticks(daemon["pid"]) is None, daemon
    assert _processes_mentioning(str(box)) == []
    assert (box / "notes.txt").read_text() == "mine\n" and (box / "etc" / "slurm.conf").is_file()
    after = _cli("slurm", "sandbox", "status", "--dir", str(box), "--json")
    assert json.loads(after.stdout)["state"] == "stopped"
    twice = _cli("slurm", "sandbox", "stop", "--dir", str(box))
    assert twice.returncode == 0 and "is not running: nothing to stop" in twice.stdout


# ----------------------------------------------------------------------------- bad input: no Slurm needed
def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_stop_on_a_folder_that_does_not_exist_is_one_line_and_exit_2(tmp_path, capsys):
    code, out, err = _run(capsys, "slurm", "sandbox", "stop", "--dir", str(tmp_path / "nowhere"))
    assert code == 2 and out == ""
    assert err == f"error: no folder {tmp_path / 'nowhere'}: no sandbox was started there, nothing to stop\n"


def test_stop_and_status_on_a_folder_without_a_sandbox_do_nothing(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("x")
    code, out, _ = _run(capsys, "slurm", "sandbox", "stop", "--dir", str(tmp_path))
    assert code == 0 and out == f"no sandbox in {tmp_path} (no sandbox.json): nothing to stop\n"
    code, out, _ = _run(capsys, "slurm", "sandbox", "status", "--dir", str(tmp_path / "nowhere"), "--json")
    assert code == 0 and json.loads(out)["state"] == "none"
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_start_refuses_a_folder_of_someone_else_s_and_a_file(tmp_path, capsys):
    (tmp_path / "etc").mkdir()
    code, _, err = _run(capsys, "slurm", "sandbox", "start", "--dir", str(tmp_path))
    assert code == 2 and err.startswith(f"error: {tmp_path} is not empty and holds no sandbox (sandbox.json)")
    assert err.count("\n") == 1 and (tmp_path / "etc").is_dir()
    (tmp_path / "f").write_text("")
    code, _, err = _run(capsys, "slurm", "sandbox", "start", "--dir", str(tmp_path / "f"))
    assert code == 2 and err == f"error: {tmp_path / 'f'} is not a folder\n"


def test_start_without_root_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    code, out, err = _run(capsys, "slurm", "sandbox", "start", "--dir", str(tmp_path / "box"))
    assert (code, out) == (2, "")
    assert err == "error: a local Slurm needs root (slurmd starts jobs as their user)\n"
    assert not (tmp_path / "box").exists()


def test_start_with_a_slurm_program_missing_names_the_apt_get_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(slurm_sandbox.shutil, "which", lambda name: None if name == "slurmd" else "/usr/bin/x")
    code, _, err = _run(capsys, "slurm", "sandbox", "start", "--dir", str(tmp_path / "box"))
    assert code == 2 and err.startswith("error: Slurm is not installed (slurmd missing): apt-get install slurm-wlm")


def test_a_damaged_state_file_is_one_line(tmp_path, capsys):
    (tmp_path / "sandbox.json").write_text('{"dir": "x"}')
    code, _, err = _run(capsys, "slurm", "sandbox", "status", "--dir", str(tmp_path))
    assert code == 2 and err.startswith("error: ") and "sandbox.json" in err and err.count("\n") == 1
