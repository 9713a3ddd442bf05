"""The database journal's restart helpers, on their own."""

from __future__ import annotations

import os
import subprocess
import sys

from gpuweave.service.ledger import find_worker_pids


def test_workers_whose_ids_were_never_written_are_found_by_their_channel(tmp_path):
    channel = tmp_path / "channels" / "7" / "a1-c0-r0"
    other = tmp_path / "channels" / "8" / "a1-c0-r0"
    env = dict(os.environ, GPUWEAVE_CHANNEL=str(channel))
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    mine = subprocess.Popen(sleeper, env=env)
    theirs = subprocess.Popen(sleeper, env=dict(env, GPUWEAVE_CHANNEL=str(other)))
    try:
        assert find_worker_pids([str(channel)]) == [mine.pid]
        assert find_worker_pids([str(tmp_path / "nothing")]) == []
    finally:
        for proc in (mine, theirs):
            proc.kill()
            proc.wait()
