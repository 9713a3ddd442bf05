"""The service's scheduling loop: the live runtime, fed from the database, in a thread of the service process.

Every ``poll_interval`` the loop runs one step of :class:`~gpuweave.live.runtime.LiveRuntime` (reports in,
policy when due, launches out; each transition committed by :class:`~gpuweave.service.ledger.Ledger` first).
Every ``sync_interval`` it reads what the API committed: rows flagged ``pending_sync`` (new jobs, cancellations)
and a changed policy. Admission: a queued job is handed to the runtime (the policy sees it from then on) only
while its user's admitted GPUs (waiting in the policy's queue or running) stay within ``max_running_gpus``, so the
quota holds whatever the policy decides; a job held back says why (``held``). Complexity per sync: O(flagged rows +
held jobs); per step: the runtime's.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.engine import Engine, Row

from gpuweave.cluster.run import build_policy
from gpuweave.errors import InputError, InvalidDecisionError
from gpuweave.live.executor import Executor
from gpuweave.live.runtime import LiveRuntime
from gpuweave.service.config import ServiceConfig
from gpuweave.service.db import events, jobs, reading, samples, users, writing
from gpuweave.service.jobs import check_program, runtime_job
from gpuweave.service.ledger import Ledger, add_event, get_setting

if TYPE_CHECKING:
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.service.metrics import ServiceMetrics

log = logging.getLogger("gpuweave.service.scheduler")
ADMIT_BATCH = 2000
SHUTDOWN_CHECKPOINT_S = 20.0
ERROR_REPEAT_S = 60.0


class Scheduler:
    def __init__(
        self, engine: Engine, config: ServiceConfig, executor: Executor[Any], metrics: ServiceMetrics | None = None
    ) -> None:
        self.engine = engine
        self.config = config
        self.metrics = metrics
        with reading(engine) as conn:
            policy = get_setting(conn, "policy")
        self.policy_version = policy["version"]
        live = config.live_config(policy["name"], policy["options"])
        live = live.model_copy(update={"round_length": policy.get("round_length")})
        self.ledger = Ledger(engine, metrics, worker_limits=config.worker_limits())
        # A service runs for months: keep no per-segment records.
        self.runtime = LiveRuntime(
            live, executor, config.data_dir / "runtime", jobs=[], journal=self.ledger, record_segments=False
        )
        self.user_gpus: dict[int, int] = {}  # GPUs of admitted, unfinished jobs per user
        self.held = 0
        self.live_steps: dict[int, int] = {}
        self.live_energy: dict[int, tuple[float, float]] = {}
        self.live_totals: dict[str, float] | None = None  # power (W), energy (J) and cost of the cluster now
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.error: str | None = None
        self.next_sync = 0.0
        self.next_sample = 0.0
        self._last_error = ("", 0.0)

    @property
    def nodes(self) -> list[Node]:
        return self.runtime.nodes

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        """Restore from the database (ending the workers a killed service left), then run in a thread."""
        self.runtime.start()
        for job in self.runtime.jobs.values():
            if not job.finished:
                user: Any = job.js.job.attrs.get("user")  # the user's id (an int)
                self.user_gpus[user] = self.user_gpus.get(user, 0) + job.js.num_gpus
        self._drain_finished()
        self.thread = threading.Thread(target=self._loop, name="gpuweave-scheduler", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join()

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def _loop(self) -> None:
        try:
            while not self.stop_event.is_set():
                wall = time.time()
                if wall >= self.next_sync:
                    self.sync()
                    self.next_sync = wall + self.config.sync_interval
                self._step()
                self._drain_finished()
                self._publish(wall)
                self.stop_event.wait(self.config.poll_interval)
        except Exception as exc:  # the loop must not die silently: the service exits (see server.py)
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("scheduling loop failed")
        finally:
            self._shutdown()

    def _step(self) -> None:
        try:
            self.runtime.step()
        except (InvalidDecisionError, InputError) as exc:  # a policy's bad decision: nothing of it was applied
            message = str(exc)
            last, when = self._last_error
            if message != last or time.time() - when > ERROR_REPEAT_S:
                self._last_error = (message, time.time())
                log.error("policy decision rejected", extra={"fields": {"error": message}})
                with writing(self.engine) as conn:
                    add_event(conn, "policy-error", sim=self.runtime.now, error=message[:1000])

    def _shutdown(self) -> None:
        """Ask every worker to checkpoint, commit what they saved; their jobs wait for the next start."""
        try:
            self.runtime.checkpoint_all(SHUTDOWN_CHECKPOINT_S)
            self.ledger._requeue_interrupted(self.runtime)
            with writing(self.engine) as conn:
                add_event(conn, "service-stopped", sim=self.runtime.now)
        except Exception:
            log.exception("shutdown: could not checkpoint every job")
            self.runtime.kill_all()
        finally:
            self.runtime.executor.close()

    # ------------------------------------------------------------------ reading the API's writes
    def sync(self) -> None:
        with reading(self.engine) as conn:
            flagged = conn.execute(
                select(jobs.c.id, jobs.c.state, jobs.c.cancel_requested, jobs.c.api_rev)
                .where(jobs.c.pending_sync.is_(True))
                .order_by(jobs.c.id)
                .limit(ADMIT_BATCH)
            ).all()
            policy = get_setting(conn, "policy")
        for row in flagged:
            if row.cancel_requested or row.state == "cancelled":
                self.runtime.cancel(str(row.id))
        if flagged:
            with writing(self.engine) as conn:
                conn.execute(
                    update(jobs)
                    .where(jobs.c.id == bindparam("b_id"), jobs.c.api_rev == bindparam("b_rev"))
                    .values(pending_sync=False),
                    [{"b_id": r.id, "b_rev": r.api_rev} for r in flagged],
                )
        self._admit()
        if policy and policy["version"] != self.policy_version:
            self._change_policy(policy)

    def _admit(self) -> None:
        default = self.config.default_max_running_gpus
        with reading(self.engine) as conn:
            waiting = conn.execute(
                select(jobs, users.c.max_running_gpus, users.c.admin, users.c.slurm_account, users.c.slurm_qos)
                .join(users, users.c.id == jobs.c.user_id)
                .where(jobs.c.admitted.is_(False), jobs.c.state == "queued")
                .order_by(jobs.c.id)
                .limit(ADMIT_BATCH)
            ).all()
        admit, hold = [], []
        planned = dict(self.user_gpus)
        for row in waiting:
            limit = row.max_running_gpus or default
            used = planned.get(row.user_id, 0)
            if limit is not None and used + row.gpus > limit:
                reason = f"quota: {used} of {limit} GPUs admitted"
                if row.held != reason:
                    hold.append({"b_id": row.id, "b_held": reason})
                continue
            planned[row.user_id] = used + row.gpus
            admit.append(row)
        self.held = len(waiting) - len(admit)
        if not (admit or hold):
            return
        arrival = self.runtime.sim_time(time.time())
        with writing(self.engine) as conn:
            if hold:
                conn.execute(update(jobs).where(jobs.c.id == bindparam("b_id")).values(held=bindparam("b_held")), hold)
            admitted = set()
            if admit:
                result = conn.execute(
                    update(jobs)
                    .where(jobs.c.id.in_([r.id for r in admit]), jobs.c.state == "queued", jobs.c.admitted.is_(False))
                    .values(admitted=True, arrival=arrival, held="")
                    .returning(jobs.c.id)
                )
                admitted = {r.id for r in result}
                if admitted:
                    conn.execute(
                        insert(events),
                        [_event_row("admitted", r, arrival) for r in admit if r.id in admitted],
                    )
        for row in admit:
            if row.id in admitted:
                self._hand_over(row, arrival)

    def _hand_over(self, row: Row[Any], arrival: float) -> None:
        job = runtime_job(row, self.ledger.origin, self.config.time_scale, self.ledger.limits_of(row))
        job.arrival = arrival
        if job.deadline is not None:
            job.deadline = max(job.deadline, arrival + 1e-9)
        try:
            argv = check_program(row.program)
        except InputError as exc:  # the program vanished since it was submitted
            live = self.runtime.add_job(job, [])
            live.failed = exc.message
            self.ledger.job_failed(live)
            return
        self.runtime.add_job(job, argv)
        self.user_gpus[row.user_id] = self.user_gpus.get(row.user_id, 0) + row.gpus

    def _change_policy(self, policy: dict[str, Any]) -> None:
        live = self.runtime.config.model_copy(
            update={
                "policy": policy["name"],
                "policy_options": policy["options"],
                "round_length": policy.get("round_length"),
            }
        )
        try:
            new = build_policy(live)
            # validated by the API; a rigid job admitted meanwhile keeps a policy of agents out (runtime.set_policy)
            self.runtime.set_policy(new)
        except InputError as exc:  # a policy that changed underneath is logged, not fatal
            log.error("policy change refused", extra={"fields": {"error": str(exc)}})
            self.policy_version = policy["version"]
            return
        self.runtime.config = live
        self.policy_version = policy["version"]
        log.info("policy changed", extra={"fields": {"policy": policy["name"], "version": policy["version"]}})

    # ------------------------------------------------------------------ bookkeeping
    def _drain_finished(self) -> None:
        finished, self.ledger.finished = self.ledger.finished, []
        for job_id in finished:
            job = self.runtime.jobs.get(job_id)
            if job is None:
                continue
            user = job.js.job.attrs.get("user")
            if user in self.user_gpus:
                self.user_gpus[user] = max(0, self.user_gpus[user] - job.js.num_gpus)
            self.runtime.forget(job_id)

    def _live_energy(self) -> dict[int, tuple[float, float]]:
        """Energy (J) and cost so far per job holding GPUs, from the runtime's public view."""
        return {int(job_id): figures for job_id, figures in self.runtime.energy_so_far().items()}

    def _publish(self, wall: float) -> None:
        # Steps done per running job (committed + reported by the live attempt), for the API to read: a new dict
        # each time, so a reader never sees one half-updated.
        self.live_steps = {
            int(j.js.job_id): j.committed + j.attempt.steps for j in self.runtime.jobs.values() if j.attempt is not None
        }
        self.live_energy = self._live_energy()
        usage = self.runtime.usage()
        self.live_totals = {"power_w": usage.power_w, "energy_j": usage.energy_j, "cost": usage.cost}
        queued = usage.waiting + self.held
        if self.metrics is not None:
            self.metrics.update_cluster(
                queued=queued,
                running=usage.running,
                busy=usage.busy,
                total=usage.total,
                power_w=usage.power_w,
                energy_j=usage.energy_j,
                cost=usage.cost,
            )
        if wall < self.next_sample:
            return
        self.next_sample = wall + self.config.sample_interval
        with writing(self.engine) as conn:
            conn.execute(
                insert(samples).values(
                    at=wall,
                    sim=usage.now,
                    busy=json.dumps(usage.busy),
                    power_w=usage.power_w,
                    energy_j=usage.energy_j,
                    cost=usage.cost,
                    queued=queued,
                    running=usage.running,
                )
            )


def _event_row(kind: str, row: Row[Any], sim: float) -> dict[str, Any]:
    return {
        "at": time.time(),
        "sim": sim,
        "kind": kind,
        "job_id": row.id,
        "user_id": row.user_id,
        "detail": json.dumps({"name": row.name, "gpus": row.gpus}),
    }
