"""The live runtime's journal kept in the service's database: each transition is committed before it is acted on.

The runtime calls these methods at the same points as the file journal (:mod:`gpuweave.live.journal`):

- ``launching``: the job becomes ``running`` on its placement and an ``attempts`` row (with the worker channels
  it will use) is inserted, in one transaction, *before* any worker starts. The update is conditional on the job
  being active and not cancelled, so a cancellation committed by the API a moment earlier wins: the launch is
  refused. ``attempt_started`` then adds the workers' process ids.
- ``stopping``: ``checkpointing`` before the workers are asked to checkpoint and exit.
- ``attempt_ended``: the steps the checkpoints hold are committed; a job the policy stopped becomes
  ``preempted`` (waiting again). ``job_done``, ``job_failed``, ``job_cancelled``: the terminal states.

:meth:`Ledger.resume` restarts a killed service: every active job goes back into the runtime with its committed
steps; the workers of attempts that never ended are found (the processes whose ``GPUWEAVE_CHANNEL`` is one of the
attempt's channels: this finds a launch cut short before its ids were written, and never an unrelated process that
reused a journalled id), asked to checkpoint,
awaited and their checkpoints committed before anything is launched again, so no job runs twice and none is lost.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection, Engine, Row

from gpuweave.cluster.state import Placement
from gpuweave.live.attempts import Attempt, LiveJob
from gpuweave.live.executor import Executor
from gpuweave.live.journal import attempt_copies, end_orphans
from gpuweave.live.journal_contract import RunJournal
from gpuweave.live.local import WorkerLimits
from gpuweave.service.db import ACTIVE_STATES, attempts, events, jobs, reading, samples, settings, users, writing
from gpuweave.service.jobs import check_program, runtime_job

if TYPE_CHECKING:
    from gpuweave.live.book import Action
    from gpuweave.live.runtime import LiveRuntime
    from gpuweave.service.metrics import ServiceMetrics

log = logging.getLogger("gpuweave.service.ledger")


def add_event(
    conn: Connection,
    kind: str,
    *,
    job_id: int | None = None,
    user_id: int | None = None,
    sim: float | None = None,
    **detail: Any,
) -> None:
    conn.execute(
        insert(events).values(
            at=time.time(), sim=sim, kind=kind, job_id=job_id, user_id=user_id, detail=json.dumps(detail)
        )
    )


def get_setting(conn: Connection, key: str) -> Any:
    row = conn.execute(select(settings.c.value).where(settings.c.key == key)).first()
    return json.loads(row.value) if row else None


def put_setting(conn: Connection, key: str, value: Any) -> None:
    text = json.dumps(value, sort_keys=True)
    if conn.execute(update(settings).where(settings.c.key == key).values(value=text)).rowcount == 0:
        conn.execute(insert(settings).values(key=key, value=text))


def placement_json(placement: Placement) -> str:
    return json.dumps([[int(n), int(k)] for n, k in placement])


class Ledger(RunJournal):
    """The runtime's journal on the database (see module docstring)."""

    def __init__(
        self, engine: Engine, metrics: ServiceMetrics | None = None, worker_limits: WorkerLimits | None = None
    ) -> None:
        self.engine = engine
        self.metrics = metrics
        self.worker_limits = worker_limits  # the host quota of a job of a user who is not an admin
        self.runtime: LiveRuntime | None = None
        self.finished: list[str] = []  # job ids that reached a terminal state since the last drain
        self.origin = 0.0

    # ------------------------------------------------------------------ helpers
    def limits_of(self, row: Row[Any]) -> WorkerLimits | None:
        """The host quota of a job row read with its user's ``admin`` column: none for an admin's job."""
        return None if row.admin else self.worker_limits

    def _ids(self, job: LiveJob) -> tuple[int, int | None]:
        return int(job.js.job_id), job.js.job.attrs.get("user")  # type: ignore[return-value]  # the user's id

    def _sim(self) -> float | None:
        return self.runtime.now if self.runtime is not None else None

    def _count(self, state: str) -> None:
        if self.metrics is not None:
            self.metrics.transitions.labels(state).inc()

    # ------------------------------------------------------------------ transitions
    def launching(
        self, job: LiveJob, number: int, kind: str, placement: Placement, forked: bool, copies: list[dict[str, Any]]
    ) -> bool:
        job_id, user_id = self._ids(job)
        now = time.time()
        with writing(self.engine) as conn:
            result = conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id, jobs.c.state.in_(ACTIVE_STATES), jobs.c.cancel_requested.is_(False))
                .values(
                    state="running",
                    placement=placement_json(placement),
                    attempts=number,
                    started_at=func.coalesce(jobs.c.started_at, now),
                    first_start=job.js.first_start,
                    restarts=job.js.restarts,
                )
            )
            if result.rowcount != 1:
                return False
            conn.execute(
                insert(attempts).values(
                    job_id=job_id,
                    number=number,
                    kind=kind,
                    placement=placement_json(placement),
                    forked=forked,
                    copies=json.dumps(copies),
                    started_at=now,
                )
            )
            add_event(conn, kind, job_id=job_id, user_id=user_id, sim=self._sim(), attempt=number, placement=placement)
        self._count("running")
        return True

    def attempt_started(self, job: LiveJob, attempt: Attempt, executor: Executor[Any]) -> None:
        job_id, _ = self._ids(job)
        with writing(self.engine) as conn:
            conn.execute(
                update(attempts)
                .where(attempts.c.job_id == job_id, attempts.c.number == attempt.number)
                .values(copies=json.dumps(attempt_copies(attempt, executor)))
            )

    def stopping(self, job: LiveJob, attempt: Attempt) -> None:
        job_id, user_id = self._ids(job)
        with writing(self.engine) as conn:
            conn.execute(
                update(jobs).where(jobs.c.id == job_id, jobs.c.state == "running").values(state="checkpointing")
            )
            add_event(conn, "checkpointing", job_id=job_id, user_id=user_id, sim=self._sim(), attempt=attempt.number)
        self._count("checkpointing")

    def attempt_ended(self, job: LiveJob, attempt: Attempt, saved: int) -> None:
        job_id, user_id = self._ids(job)
        outcome = _outcome(job, attempt)
        runtime = self.runtime
        assert runtime is not None, "resume() comes first"
        waiting = not job.finished and job.committed < job.target and not runtime.is_running(job.js.job_id)
        js = job.js
        values: dict[str, Any] = {
            "committed": job.committed,
            "crashes": job.crashes,
            "first_start": js.first_start,
            "restarts": js.restarts,
            "gpu_seconds": js.attained_gpu_seconds,  # so far: the segments closed until now
            "energy_j": js.energy_j,
            "cost": js.cost,
        }
        with writing(self.engine) as conn:
            conn.execute(
                update(attempts)
                .where(attempts.c.job_id == job_id, attempts.c.number == attempt.number)
                .values(ended_at=time.time(), saved=saved, outcome=outcome)
            )
            query = update(jobs).where(jobs.c.id == job_id)
            if waiting:
                query = query.where(jobs.c.state.in_(ACTIVE_STATES))
                values.update(state="preempted", placement=None)
            conn.execute(query.values(**values))
            detail: dict[str, Any] = {"attempt": attempt.number, "saved": saved, "outcome": outcome}
            if attempt.crash:
                detail["reason"] = attempt.crash[:500]
            add_event(conn, "preempted" if waiting else "attempt-ended", job_id=job_id, user_id=user_id, **detail)
        if waiting:
            self._count("preempted")

    def _terminal(self, job: LiveJob, state: str, reason: str = "", only_from: Collection[str] = ACTIVE_STATES) -> bool:
        job_id, user_id = self._ids(job)
        js = job.js
        with writing(self.engine) as conn:
            result = conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id, jobs.c.state.in_(only_from))
                .values(
                    state=state,
                    placement=None,
                    committed=job.committed,
                    ended_at=time.time(),
                    end_sim=js.end,
                    reason=reason[:2000],
                    gpu_seconds=js.attained_gpu_seconds,
                    energy_j=js.energy_j,
                    cost=js.cost,
                )
            )
            if result.rowcount:
                add_event(conn, state, job_id=job_id, user_id=user_id, sim=self._sim(), reason=reason[:500])
        self.finished.append(js.job_id)
        if result.rowcount:
            self._count(state)
        return bool(result.rowcount)

    def job_done(self, job: LiveJob) -> None:
        self._terminal(job, "done")

    def job_failed(self, job: LiveJob) -> None:
        self._terminal(job, "failed", job.failed)

    def job_cancelled(self, job: LiveJob) -> None:
        # The API may have committed "cancelled" already (a waiting job); then this changes nothing.
        self._terminal(job, "cancelled", "cancelled by its user")

    def decided(self, now: float, seconds: float, actions: list[Action]) -> None:
        if self.metrics is not None:
            self.metrics.decision_seconds.observe(seconds)
        if not actions:
            return
        counts = {"start": 0, "move": 0, "stop": 0}
        for action in actions:
            counts[action.kind] += 1
        with writing(self.engine) as conn:
            add_event(conn, "decision", sim=now, seconds=round(seconds, 6), **counts)

    # ------------------------------------------------------------------ restart
    def resume(self, runtime: LiveRuntime, wall_now: float) -> float:
        """Restore the runtime from the database (see module docstring); returns the clock's origin."""
        self.runtime = runtime
        scale = runtime.time_scale
        with writing(self.engine) as conn:
            clock = get_setting(conn, "clock")
            if clock is None:
                clock = {"origin": wall_now, "time_scale": scale}
            elif clock["time_scale"] != scale:  # keep simulated time continuous across a change of scale
                sim_then = (wall_now - clock["origin"]) * clock["time_scale"]
                clock = {"origin": wall_now - sim_then / scale, "time_scale": scale}
            put_setting(conn, "clock", clock)
            last = conn.execute(select(samples).order_by(samples.c.id.desc()).limit(1)).first()
        origin: float = clock["origin"]
        self.origin = origin
        runtime.resume_clock((wall_now - origin) * scale, last.energy_j if last else 0.0, last.cost if last else 0.0)
        with reading(self.engine) as conn:
            rows = conn.execute(
                select(jobs, users.c.admin, users.c.slurm_account, users.c.slurm_qos)
                .join(users, users.c.id == jobs.c.user_id)
                .where(jobs.c.admitted.is_(True), jobs.c.state.in_(ACTIVE_STATES))
                .order_by(jobs.c.arrival, jobs.c.id)
            ).all()
            open_attempts = conn.execute(select(attempts).where(attempts.c.ended_at.is_(None))).all()
        log.info(
            f"recovering: {len(rows)} unfinished job(s) in the database; stopping the orphaned workers of "
            f"{len(open_attempts)} attempt(s) the last run left open"
            if rows or open_attempts
            else "recovering: nothing left over from the last run",
            extra={"fields": {"jobs": len(rows), "open_attempts": len(open_attempts)}},
        )
        for row in rows:
            self.restore(runtime, row)
        adopted = sum(self._end_orphan_attempt(runtime, a) for a in open_attempts)
        requeued = self._requeue_interrupted(runtime)
        with writing(self.engine) as conn:
            add_event(conn, "service-resumed", sim=runtime.now, jobs=len(rows), orphans=adopted, requeued=requeued)
        log.info("resumed", extra={"fields": {"jobs": len(rows), "orphan_attempts": adopted, "requeued": requeued}})
        return origin

    def restore(self, runtime: LiveRuntime, row: Row[Any]) -> LiveJob:
        """Hand a database job to the runtime with what it has committed."""
        job = runtime.add_job(
            runtime_job(row, self.origin, runtime.time_scale, self.limits_of(row)), check_program(row.program)
        )
        job.committed, job.attempts, job.crashes = row.committed, row.attempts, row.crashes
        job.js.first_start, job.js.restarts = row.first_start, row.restarts
        job.js.remaining = float(job.remaining)
        return job

    def _end_orphan_attempt(self, runtime: LiveRuntime, row: Row[Any]) -> int:
        """End one attempt the killed service left open: stop its workers (checkpoint first), commit what they
        saved. Returns 1."""
        began = time.monotonic()
        copies = json.loads(row.copies or "[]")
        for copy in copies:
            # The processes are found by their channel, not only by the journalled ids: a launch cut short before
            # its ids were written is found too, and an id reused by an unrelated process since is never signalled.
            copy["pids"] = find_worker_pids(copy.get("channels") or [copy["channel"]])
        job = runtime.jobs.get(str(row.job_id))
        if job is None:  # the job is over (cancelled before the crash): its workers only need to end
            for pid in (p for c in copies for p in c["pids"] if p):
                _kill(pid)
            saved = [0]
        else:
            saved = end_orphans(job, copies, bool(row.forked))
        with writing(self.engine) as conn:
            conn.execute(
                update(attempts)
                .where(attempts.c.id == row.id)
                .values(ended_at=time.time(), saved=sum(saved), outcome="orphan")
            )
            if job is not None:
                conn.execute(update(jobs).where(jobs.c.id == row.job_id).values(committed=job.committed))
            add_event(conn, "orphan-ended", job_id=row.job_id, attempt=row.number, saved=sum(saved))
        pids = sum(1 for c in copies for p in c["pids"] if p)
        seconds = round(time.monotonic() - began, 3)
        log.info(
            f"recovering: stopped job {row.job_id}'s attempt {row.number} ({pids} worker process(es)) at its "
            f"checkpoint: {sum(saved)} step(s) saved, {seconds} s",
            extra={
                "fields": {
                    "job_id": row.job_id,
                    "attempt": row.number,
                    "pids": pids,
                    "saved": sum(saved),
                    "seconds": seconds,
                }
            },
        )
        return 1

    def _requeue_interrupted(self, runtime: LiveRuntime) -> int:
        """Jobs that held GPUs when the service died wait again (or are done, if their checkpoints say so)."""
        count = 0
        for job in list(runtime.jobs.values()):
            if job.committed >= job.target:
                runtime.mark_done(job)
                self.job_done(job)
                continue
            with writing(self.engine) as conn:
                result = conn.execute(
                    update(jobs)
                    .where(jobs.c.id == int(job.js.job_id), jobs.c.state.in_(("running", "checkpointing")))
                    .values(state="preempted", placement=None)
                )
                if result.rowcount:
                    count += 1
                    add_event(conn, "requeued", job_id=int(job.js.job_id), committed=job.committed)
        return count


def _outcome(job: LiveJob, attempt: Attempt) -> str:
    if attempt.crash:
        return "crash"
    if attempt.node_lost:
        return "node-lost"
    if job.cancelled:
        return "cancelled"
    return "stopped" if attempt.stopping else "done"


def find_worker_pids(channels: list[str]) -> list[int]:
    """Processes on this machine whose ``GPUWEAVE_CHANNEL`` is one of ``channels`` (workers whose launch was
    journalled but whose ids were not). Reads ``/proc``; an empty list where there is none."""
    wanted = {f"GPUWEAVE_CHANNEL={c}".encode() for c in channels}
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if wanted.intersection(environ):
            found.append(int(entry.name))
    return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
