"""SlurmSandbox.start: a daemon that dies while the sandbox starts gets a fresh sandbox, with its logs kept.

Runs without Slurm: the daemon here is a real process that exits at once (as MariaDB did once, segfaulting under
load in CI); the retry is the sandbox's own code, unchanged.
"""

import sys

import pytest

from gpuweave.live import slurm_sandbox
from gpuweave.live.slurm_sandbox import DaemonExited, SlurmSandbox


class DiesFirst(SlurmSandbox):
    """Its 'mariadbd' exits with status 139 in the first ``deaths`` starts; later starts succeed."""

    deaths = 1
    starts = 0

    def _start_once(self):
        self.starts += 1
        for sub in ("log", "run"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        if self.starts <= self.deaths:
            (self.root / "log" / "mariadb.err").write_text(f"start {self.starts}: signal 11\n")
            self._spawn("mariadbd", [sys.executable, "-c", "raise SystemExit(139)"])
            try:
                self._wait("slurmdbd", lambda: False, timeout=30)
            finally:
                self.stop()
        return self


def test_a_daemon_that_dies_at_start_gets_a_fresh_sandbox_and_its_logs_are_kept(tmp_path):
    box = DiesFirst(tmp_path).start()
    assert box.starts == 2
    assert (tmp_path / "log.failed-1" / "mariadb.err").read_text() == "start 1: signal 11\n"
    assert not (tmp_path / "log" / "mariadb.err").exists()


def test_after_the_last_attempt_the_daemon_s_exit_is_the_error(tmp_path):
    box = DiesFirst(tmp_path)
    box.deaths = slurm_sandbox.START_ATTEMPTS
    with pytest.raises(DaemonExited, match=r"mariadbd exited with status 139 while waiting for slurmdbd"):
        box.start()
    assert box.starts == slurm_sandbox.START_ATTEMPTS
    assert sorted(p.name for p in tmp_path.glob("log.failed-*")) == [
        f"log.failed-{n}" for n in range(1, slurm_sandbox.START_ATTEMPTS)
    ]


def test_a_timeout_is_not_retried(tmp_path):
    class Slow(SlurmSandbox):
        starts = 0

        def _start_once(self):
            self.starts += 1
            (self.root / "log").mkdir(parents=True, exist_ok=True)
            self._wait("slurmctld", lambda: False, timeout=0.2)

    box = Slow(tmp_path)
    with pytest.raises(RuntimeError, match="timed out waiting for slurmctld"):
        box.start()
    assert box.starts == 1
