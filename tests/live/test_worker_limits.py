"""Issue 39, class 8: a local worker under :class:`WorkerLimits` cannot take more of this host than its quota.

A worker that allocates past its memory limit, or spins past its CPU-time limit, ends (this process is untouched)
and the last line of its log, which the attempt's crash reason quotes, names the limit and who set it.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

from gpuweave.hardware.cluster_spec import Node
from gpuweave.live.executor import LOG_FILE, LaunchSpec, log_tail
from gpuweave.live.local import LIMITS_ATTR, LocalExecutor, WorkerLimits

MiB = 2**20


def _run(tmp_path: Path, code: str, limits: WorkerLimits | None, timeout: float = 30) -> tuple[int, str]:
    executor = LocalExecutor()
    executor.check_cluster([Node(0, "n0", "V100", 1, 0.1, 1.0)])
    channel = tmp_path / "channel"
    attrs = {LIMITS_ATTR: limits} if limits is not None else {}
    spec = LaunchSpec("j", 1, 0, 0, 0, "n0", "V100", 1, (sys.executable, "-c", code), channel, {}, attrs)
    handle = executor.launch(spec)
    deadline = time.monotonic() + timeout
    while (code_ := executor.exit_code(handle)) is None:
        assert time.monotonic() < deadline, "the worker did not end"
        time.sleep(0.02)
    return code_, log_tail(channel)


def test_memory_past_the_quota_fails_naming_it(tmp_path):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, reason = _run(tmp_path, "b = bytearray(512 * 2**20); print('allocated')", WorkerLimits(64 * MiB, None))
    assert code != 0
    assert "MemoryError" in reason and "allocated" not in reason
    assert reason.endswith("gpuweave: memory limit 64 MiB (service quota) exceeded")
    # the allocation was refused in the worker: this process did not grow by it
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 256 * 1024


def test_cpu_time_past_the_quota_ends_the_worker_naming_it(tmp_path):
    started = time.monotonic()
    code, reason = _run(tmp_path, "while True: pass", WorkerLimits(None, 1))
    assert code < 0 and time.monotonic() - started < 15
    assert reason.endswith("gpuweave: CPU time limit 1 s (service quota) exceeded")


def test_a_worker_within_its_quota_runs_as_without(tmp_path):
    code, reason = _run(tmp_path, "b = bytearray(8 * 2**20); print('fine')", WorkerLimits(256 * MiB, 60))
    assert code == 0 and reason == "fine"
    assert (tmp_path / "channel" / LOG_FILE).read_text() == "fine\n"


def test_no_limits_no_wrapper(tmp_path):
    assert WorkerLimits().wrap(["prog", "arg"]) == ["prog", "arg"]
    code, reason = _run(tmp_path, "import resource; print(resource.getrlimit(resource.RLIMIT_DATA)[0])", None)
    assert code == 0 and int(reason) == resource.getrlimit(resource.RLIMIT_DATA)[0]


def test_an_unrelated_crash_is_not_blamed_on_the_quota(tmp_path):
    code, reason = _run(tmp_path, "raise SystemExit('boom')", WorkerLimits(256 * MiB, 60))
    assert code == 1 and reason == "boom"
