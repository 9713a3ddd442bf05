"""Without root (or without Slurm) the tests on a real Slurm are skipped with a one-line reason; the rest run."""

import os
import re
import subprocess
import sys
from pathlib import Path

from gpuweave.live import slurm_sandbox

ROOT = Path(__file__).resolve().parents[2]


def test_missing_requirements_is_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert slurm_sandbox.missing_requirements() == "a local Slurm needs root (slurmd starts jobs as their user)"
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(slurm_sandbox.shutil, "which", lambda name: None if name == "slurmdbd" else "/usr/bin/x")
    reason = slurm_sandbox.missing_requirements()
    assert reason.startswith("Slurm is not installed (slurmdbd missing): apt-get install") and "\n" not in reason


def test_slurm_tests_skip_for_a_user_without_root():
    """The Slurm test modules run in a pytest whose process is not root (os.geteuid patched before pytest starts,
    CI unset): every test there is skipped, with the reason in pytest's summary."""
    code = (
        "import os, sys; os.geteuid = lambda: 1000; import pytest; "
        "sys.exit(pytest.main(['-q', '-p', 'no:xdist', '-p', 'no:cacheprovider', '-rs', "
        "'tests/slurm/test_slurm_live.py', 'tests/slurm/test_slurm_capture.py']))"
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(ROOT / "src")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert re.match(r"\d+ skipped", summary) and "passed" not in summary and "failed" not in summary, summary
    assert "a local Slurm needs root (slurmd starts jobs as their user)" in proc.stdout
