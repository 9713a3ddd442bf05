"""Issue 39, class 7: joining a Ray at ``--address`` is bounded in time and fails in one line naming the address.

A closed port is refused at once (one TCP connection attempt); a port that accepts TCP but never speaks Ray (a
plain listening socket) is given up after GPUWEAVE_RAY_JOIN_TIMEOUT seconds. Both for ``gpuweave sweep`` and
``gpuweave cluster run``, in subprocesses (this process may hold the session's Ray connection).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
JOIN_TIMEOUT = 3


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), GPUWEAVE_RAY_JOIN_TIMEOUT=str(JOIN_TIMEOUT))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def _run(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *argv], capture_output=True, text=True, env=_env(), timeout=90
    )
    return proc, time.monotonic() - started


def _one_line(proc: subprocess.CompletedProcess[str], address: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: ") and f"Ray cluster at {address}" in proc.stderr


def _sweep(tmp_path: Path, address: str) -> list[str]:
    sweep = ROOT / "examples" / "sweeps" / "small.yaml"
    return ["sweep", str(sweep), "--executor", "ray", "--address", address, "--out", str(tmp_path / "sweep")]


def _live(tmp_path: Path, address: str) -> list[str]:
    config = ROOT / "examples" / "live" / "synthetic.yaml"
    return ["cluster", "run", str(config), "--executor", "ray", "--address", address, "--out", str(tmp_path / "run")]


@pytest.mark.parametrize("command", [_sweep, _live], ids=["sweep", "cluster-run"])
def test_closed_port_is_one_line_at_once(command, tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    proc, took = _run(command(tmp_path, address))
    _one_line(proc, address)
    assert "cannot reach" in proc.stderr
    assert took < 30


@pytest.mark.parametrize("command", [_sweep, _live], ids=["sweep", "cluster-run"])
def test_port_that_is_not_ray_is_given_up(command, tmp_path, silent_port):
    address = f"127.0.0.1:{silent_port}"
    proc, took = _run(command(tmp_path, address))
    _one_line(proc, address)
    assert f"no Ray answered within {JOIN_TIMEOUT} s" in proc.stderr
    assert took < 30


def test_join_timeout_setting_is_checked(monkeypatch):
    from gpuweave.errors import InputError
    from gpuweave.local_ray import JOIN_TIMEOUT_ENV, JOIN_TIMEOUT_S, join_timeout

    monkeypatch.delenv(JOIN_TIMEOUT_ENV, raising=False)
    assert join_timeout() == JOIN_TIMEOUT_S
    for bad in ("inf", "nan", "0", "-1", "soon", "1e300"):
        monkeypatch.setenv(JOIN_TIMEOUT_ENV, bad)
        with pytest.raises(InputError, match=JOIN_TIMEOUT_ENV):
            join_timeout()
