"""Run ``gpuweave`` commands fast and bounded: a clean process imports the CLI once and forks one child per command.

Why: the user-error contract (exit 2 and one line, or exit 0 with sane results; never a traceback) must hold
within a time and memory bound, for many generated inputs. A fresh interpreter per command costs about a
second; a fork of one that has already imported gpuweave, numpy, pandas and rich costs milliseconds. The
server is a separate process (not the pytest worker), so no state of other tests (a Ray connection, threads,
changed globals) leaks into the commands, and a command that hangs or grows is killed without harm.

Each child runs :func:`gpuweave.cli.run` in its own session (so the whole process group can be killed), with
stdout/stderr in files, and an address-space cap of the server's size plus ``HARD_CAP_MB`` as a backstop. The
reply gives the exit code, the output, the wall time and the child's peak resident memory *above* its own at
the start (``ru_maxrss`` minus the RSS the child reads right after the fork, which counts the inherited pages
it has mapped so far).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARD_CAP_MB = 3072
#: the contract: each command within 10 s of CPU and 500 MB of memory. CPU time, not wall time, is asserted, so
#: that a shared, loaded machine does not fail it; a command still running after WALL_KILL_S is killed (a hang).
TIME_BOUND_S = 10.0
MEMORY_BOUND_MB = 500.0
WALL_KILL_S = 60.0
OUTPUT_TAIL = 200_000  # characters of stdout and stderr kept per command


@dataclass
class Outcome:
    args: list[str]
    code: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    growth_mb: float
    timed_out: bool

    def describe(self) -> str:
        return (
            f"gpuweave {' '.join(self.args)[:300]}: exit {self.code}, {self.cpu_s:.2f} s CPU, "
            f"{self.wall_s:.2f} s wall, +{self.growth_mb:.0f} MB"
            f"{' (killed: time)' if self.timed_out else ''}\n--- stderr\n{self.stderr[-3000:]}\n"
            f"--- stdout\n{self.stdout[-1500:]}"
        )


class CliServer:
    """The forking server; ``run(args, cwd)`` runs one command. Use as a context manager (or call close)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env.update(
            PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")]),
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            COLUMNS="80",
            RAY_USAGE_STATS_ENABLED="0",
        )
        env.pop("GPUWEAVE_LIMITS", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from tests.cli_harness import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        ready = self.proc.stdout.readline()
        if ready.strip() != "ready":
            raise RuntimeError(f"the CLI server did not start: {ready!r}")

    def run(
        self, args: list[str], cwd: Path | str, *, timeout: float = WALL_KILL_S, env: dict | None = None
    ) -> Outcome:
        request = {"args": [str(a) for a in args], "cwd": str(cwd), "timeout": timeout, "env": env or {}}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return Outcome(request["args"], **reply)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)

    def __enter__(self) -> CliServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --------------------------------------------------------------------------- the server side
def _rss_kb() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _vm_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _child(request: dict, out_path: str, err_path: str, rss_path: str) -> None:
    """In the forked child: note its resident memory at the start, run the command, never return."""
    import resource
    import traceback

    code = 99
    try:
        with open(rss_path, "w") as fh:
            fh.write(str(_rss_kb()))
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.update(request["env"])
        out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err_fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        cap = _vm_bytes() + HARD_CAP_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        from gpuweave.cli import run

        code = run(request["args"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # what a user would see as a traceback
        traceback.print_exc()
        code = 98
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def _wait(pid: int, timeout: float) -> tuple[int, float, float, int, bool]:
    import signal
    import time

    started = time.monotonic()
    timed_out = False
    delay = 0.001
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - started > timeout:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    wall = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    return code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, timed_out


def serve() -> None:
    """Read one JSON request per line on stdin, answer one JSON reply per line on stdout."""
    import tempfile

    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import pydantic  # noqa: F401
    import rich.console  # noqa: F401
    import rich.table  # noqa: F401
    import yaml  # noqa: F401

    import gpuweave.cli  # noqa: F401  (imported once, before any fork)

    for name in ("gpuweave.workload.traces.schema", "gpuweave.cluster.run", "gpuweave.mig.far", "gpuweave.kernel.sim"):
        __import__(name)
    scratch = tempfile.mkdtemp(prefix="gpuweave-cli-harness-")
    out_path, err_path = os.path.join(scratch, "out"), os.path.join(scratch, "err")
    rss_path = os.path.join(scratch, "rss")
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, out_path, err_path, rss_path)
        code, wall, cpu, maxrss_kb, timed_out = _wait(pid, request["timeout"])
        with open(rss_path) as fh:
            before = int(fh.read() or 0)
        # The tails only, so a runaway output cannot flood the reply; long enough for a listing 400 columns wide.
        with open(out_path, errors="replace") as fh:
            stdout = fh.read()[-OUTPUT_TAIL:]
        with open(err_path, errors="replace") as fh:
            stderr = fh.read()[-OUTPUT_TAIL:]
        reply = {
            "code": code,
            "stdout": stdout,
            "stderr": stderr,
            "wall_s": wall,
            "cpu_s": cpu,
            "growth_mb": max(0, maxrss_kb - before) / 1024.0,
            "timed_out": timed_out,
        }
        print(json.dumps(reply), flush=True)


# --------------------------------------------------------------------------- the contract
def assert_user_error(outcome: Outcome, *needles: str) -> str:
    """Exit 2, one ``error:`` line on stderr (only short warnings may come before it), no traceback, within the
    time and memory bounds; each needle in the error line. Returns the line."""
    assert not outcome.timed_out and outcome.cpu_s < TIME_BOUND_S, outcome.describe()
    assert outcome.growth_mb < MEMORY_BOUND_MB, outcome.describe()
    assert "Traceback" not in outcome.stderr, outcome.describe()
    assert outcome.code == 2, outcome.describe()
    lines = outcome.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), outcome.describe()
    assert all(line.startswith("warning: ") and len(line) <= 300 for line in lines[:-1]), outcome.describe()
    for needle in needles:
        assert needle in lines[-1], (needle, outcome.describe())
    return lines[-1]


def _words(text: str) -> set[str]:
    """Tokens of letters, digits and ``.+-`` (so "nan" in ``nan,10,6`` or ``│ nan │`` is the word "nan")."""
    import re

    return set(re.findall(r"[a-z0-9_.+-]+", text.lower()))


def assert_bounded(outcome: Outcome, inputs: str = "") -> None:
    """The fuzz contract: within the bounds, and either exit 0 with no traceback and no ``nan``/``inf`` printed as a
    result (unless the input itself holds that word, e.g. a job named "nan"), or a user error."""
    if outcome.code == 0:
        assert not outcome.timed_out and outcome.cpu_s < TIME_BOUND_S, outcome.describe()
        assert outcome.growth_mb < MEMORY_BOUND_MB, outcome.describe()
        assert "Traceback" not in outcome.stderr and "Warning:" not in outcome.stderr, outcome.describe()
        printed = _words(outcome.stdout) - _words(inputs)
        for bad in ("nan", "inf", "-inf"):
            assert bad not in printed, (bad, outcome.describe())
        return
    assert_user_error(outcome)


# --------------------------------------------------------------------------- one server per test process
_shared: CliServer | None = None


def run_cli(*args: object, cwd: Path | str | None = None, timeout: float = WALL_KILL_S) -> subprocess.CompletedProcess:
    """``gpuweave ARGS`` as ``subprocess.run(..., capture_output=True, text=True)`` returns it, forked from this test
    process's one server (started at the first call, ended with the process): milliseconds per command instead of
    an interpreter start (0.8 s), for tests that run many commands and look at their exit code and output."""
    global _shared
    if _shared is None or _shared.proc.poll() is not None:
        import atexit

        _shared = CliServer()
        atexit.register(_shared.close)
    outcome = _shared.run([str(a) for a in args], cwd or os.getcwd(), timeout=timeout)
    assert not outcome.timed_out, outcome.describe()
    return subprocess.CompletedProcess(outcome.args, outcome.code, outcome.stdout, outcome.stderr)
