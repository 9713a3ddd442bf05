"""The runtime's journal: enough to restart after ``kill -9`` with no job lost, from scratch, or run twice.

``journal.jsonl`` in the run's ``--out`` gets one JSON line per launch, attempt end, completion and failure,
flushed and fsynced before the runtime acts on it. A restarted runtime reads it back: finished and failed jobs
stay so; the committed steps and first start of every other job are restored; workers of attempts that never
ended (orphans of the killed runtime) are asked to checkpoint (SIGTERM), awaited, and their checkpoints committed
before anything is launched again. The simulated clock keeps its origin, so arrivals keep their times.
Worker process ids are journalled by the ``local`` executor only; a Ray run restarts its orphans' jobs from
their last committed checkpoint. O(journal lines) to resume.

The runtime calls every method of :class:`~gpuweave.live.journal_contract.RunJournal` (each says when);
``launching``, ``stopping`` and ``decided`` matter to the service's database journal
(:mod:`gpuweave.service.ledger`), which commits each transition before the runtime acts on it.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gpuweave.cluster.state import Placement
from gpuweave.live.attempts import Attempt, LiveJob, commit_saved
from gpuweave.live.channel import read_status
from gpuweave.live.executor import Executor
from gpuweave.live.journal_contract import RunJournal

if TYPE_CHECKING:
    from gpuweave.live.book import Action
    from gpuweave.live.runtime import LiveRuntime

ORPHAN_WAIT_S = 15.0


class Journal(RunJournal):
    """The file journal: ``journal.jsonl`` (see module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fh: TextIO | None = None

    def _write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a")
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def launching(
        self, job: LiveJob, number: int, kind: str, placement: Placement, forked: bool, copies: list[dict[str, Any]]
    ) -> bool:
        """Before attempt ``number`` is launched (``copies``: checkpoint and channels of each copy, no pids yet);
        False stops the launch (the file journal never does)."""
        return True

    def stopping(self, job: LiveJob, attempt: Attempt) -> None:
        """Before the attempt's workers are asked to checkpoint and exit."""

    def decided(self, now: float, seconds: float, actions: list[Action]) -> None:
        """After a policy decision was applied (``actions``: the book's starts, moves and stops)."""

    def job_cancelled(self, job: LiveJob) -> None:
        self._write({"ev": "cancelled", "job": job.js.job_id})

    def attempt_started(self, job: LiveJob, attempt: Attempt, executor: Executor[Any]) -> None:
        copies = attempt_copies(attempt, executor)
        self._write(
            {
                "ev": "launch",
                "job": job.js.job_id,
                "attempt": attempt.number,
                "kind": attempt.kind,
                "forked": attempt.forked,
                "committed": job.committed,
                "copies": copies,
            }
        )

    def attempt_ended(self, job: LiveJob, attempt: Attempt, saved: int) -> None:
        js = job.js
        self._write(
            {
                "ev": "end",
                "job": js.job_id,
                "attempt": attempt.number,
                "saved": saved,
                "committed": job.committed,
                "first_start": js.first_start,
                "restarts": js.restarts,
                "crashes": job.crashes,
            }
        )

    def job_done(self, job: LiveJob) -> None:
        self._write({"ev": "done", "job": job.js.job_id, "end": job.js.end})

    def job_failed(self, job: LiveJob) -> None:
        self._write({"ev": "failed", "job": job.js.job_id, "reason": job.failed})

    def resume(self, runtime: LiveRuntime, wall_now: float) -> float:
        """Restore the runtime from an earlier journal; returns the wall-clock origin of simulated time."""
        records = _read(self.path)
        origin: float | None = next((r["wall0"] for r in records if r["ev"] == "run"), None)
        if origin is None:
            self._write({"ev": "run", "wall0": wall_now})
            return wall_now
        open_attempts: dict[str, dict[str, Any]] = {}
        for r in records:
            job = runtime.jobs.get(r.get("job", ""))
            if job is None:
                continue
            if r["ev"] == "launch":
                open_attempts[job.js.job_id] = r
                job.attempts = r["attempt"]
            elif r["ev"] == "end":
                open_attempts.pop(job.js.job_id, None)
                job.committed, job.crashes = r["committed"], r["crashes"]
                job.js.first_start, job.js.restarts = r["first_start"], r["restarts"]
            elif r["ev"] == "done":
                job.done, job.js.end, job.js.remaining = True, r["end"], 0.0
            elif r["ev"] == "failed":
                job.failed = r["reason"]
            elif r["ev"] == "cancelled":
                job.cancelled = True
        for job_id, launch in open_attempts.items():
            job = runtime.jobs[job_id]
            self._adopt_orphans(job, launch)
            if job.done:
                job.js.end = runtime.start_time + (wall_now - origin) * runtime.time_scale
                self.job_done(job)
        for job in runtime.jobs.values():
            job.js.remaining = float(job.remaining)
        self._write({"ev": "resumed", "wall": wall_now})
        return origin

    def _adopt_orphans(self, job: LiveJob, launch: dict[str, Any]) -> None:
        """End the killed runtime's workers of this attempt (checkpoint first) and commit what they saved."""
        saved = end_orphans(job, launch["copies"], launch["forked"])
        self._write(
            {
                "ev": "end",
                "job": job.js.job_id,
                "attempt": launch["attempt"],
                "saved": sum(saved),
                "committed": job.committed,
                "first_start": job.js.first_start,
                "restarts": job.js.restarts,
                "crashes": job.crashes,
                "orphan": True,
            }
        )
        if job.committed >= job.target:
            job.done = True


def attempt_copies(attempt: Attempt, executor: Executor[Any]) -> list[dict[str, Any]]:
    """What a restarted runtime needs of an attempt's copies: checkpoint, channel and worker pids."""
    return [
        {
            "checkpoint": str(c.checkpoint),
            "channel": str(c.channel),
            "pids": [executor.pid(w.handle) for w in c.workers],
        }
        for c in attempt.copies
    ]


def end_orphans(job: LiveJob, copies: list[dict[str, Any]], forked: bool) -> list[int]:
    """End a killed runtime's workers of one attempt (SIGTERM so they checkpoint, SIGKILL after
    ``ORPHAN_WAIT_S``) and commit the steps their checkpoints hold to ``job``; returns the steps per copy.
    Every worker is gone when this returns, so a relaunch never runs beside an orphan."""
    _end_pids([p for c in copies for p in c["pids"] if p])
    saved = []
    for c in copies:
        status = read_status(Path(c["channel"]))
        saved.append(status.checkpoint_steps if status else 0)
    commit_saved(job, forked, [Path(c["checkpoint"]) for c in copies], saved)
    return saved


def end_journalled_workers(path: Path) -> int:
    """End the workers of every attempt that ``path`` (a killed runtime's journal) launched and never ended,
    without committing anything: the run is about to be deleted (``cluster run --replace``). Returns how many
    worker processes were signalled."""
    open_attempts: dict[str, dict[str, Any]] = {}
    for r in _read(path):
        if r.get("ev") == "launch":
            open_attempts[str(r.get("job"))] = r
        elif r.get("ev") == "end":
            open_attempts.pop(str(r.get("job")), None)
    pids = [p for r in open_attempts.values() for c in r.get("copies", []) for p in c.get("pids", []) if p]
    _end_pids(pids)
    return len(pids)


def _end_pids(pids: list[int]) -> None:
    """SIGTERM, up to ``ORPHAN_WAIT_S`` for them to exit, then SIGKILL."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.time() + ORPHAN_WAIT_S
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.05)
    for pid in pids:
        _signal(pid, signal.SIGKILL)


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # the last line of a killed runtime may be cut short
            break
    return records


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
