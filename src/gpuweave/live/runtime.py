"""The live runtime: the simulator's policy loop on the wall clock, with workers instead of predicted progress.

Problem: drive real jobs with the very policy objects the simulator drives. Each poll (``poll_interval``) the
runtime reads the workers' reports into the :class:`~gpuweave.live.book.LiveBook`, admits arrivals, and calls
the policy when the simulator would (round ticks on the grid ``k * L`` while jobs are active; after arrivals,
completions and failures for event-driven policies). A tick waits until the attempts launched before it have
reported their first step (:meth:`LiveRuntime._launching`): a real launch can outlast a scaled round. The
decision is validated and applied by the book; its starts, stops and moves become executor actions. A stop asks
for a checkpoint (SIGTERM) and commits what the checkpoint holds; a move starts the job elsewhere once the stop
is done. HadarE copies end their round once they have stepped for a round length; they are consolidated and
started again from the consolidated checkpoint. Simulated time is
``first arrival + (wall - start) * time_scale``. Complexity per poll: O(workers) plus the policy's decision.

Open-ended use (the service, :mod:`gpuweave.service`): the runtime starts with no jobs (or those it is given),
:meth:`LiveRuntime.add_job` hands it jobs while it runs, :meth:`LiveRuntime.cancel` ends one, and
:meth:`LiveRuntime.set_policy` swaps the policy between steps. Every transition goes through ``journal`` before it
is acted on (:class:`~gpuweave.live.journal_contract.RunJournal`): the file :class:`~gpuweave.live.journal.Journal`
by default, the service's database otherwise, which reads the runtime only through its public API (``now``,
``time_scale``, ``is_running``, ``resume_clock``, ``mark_done``, ``usage``, ``add_job``, ``cancel``, ...).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.forking import copy_nodes, is_forked
from gpuweave.cluster.placements import make_run_placement
from gpuweave.cluster.policies import check_runs_anywhere
from gpuweave.cluster.run import build_policy, prepare
from gpuweave.cluster.state import JobState, Placement
from gpuweave.errors import InputError, InvalidDecisionError
from gpuweave.live.agents import LiveAgents
from gpuweave.live.attempts import Attempt, Copy, LiveJob, Worker, commit, split_steps
from gpuweave.live.book import Action, LiveBook
from gpuweave.live.channel import read_failure
from gpuweave.live.config import LiveConfig, program_argv
from gpuweave.live.executor import Executor, LaunchSpec, log_tail
from gpuweave.live.gang import agent_argv, agent_env, gang_sizes, single_rank_env
from gpuweave.live.journal import Journal
from gpuweave.live.journal_contract import RunJournal
from gpuweave.live.names import job_folder_name
from gpuweave.live.rates import MeasuredProfiles, RateKey, emulated_rate, measured_key
from gpuweave.workload.job import Job
from gpuweave.workload.profile_source import ProfileSource

#: seconds the crash verdict on a gang waits for its other workers' ends once one has failed (LiveRuntime._settling)
CRASH_SETTLE_S = 3.0
MIN_MEASURE_STEPS = 5  # a rate is measured once a copy has done this many steps
#: simulated seconds between an adaptive attempt's samples for adaptation.csv (Pollux's simulator logs every 60 s)
ADAPTATION_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class ClusterUsage:
    """The cluster as the runtime's book sees it at simulated time ``now`` (:meth:`LiveRuntime.usage`)."""

    now: float
    waiting: int  # jobs in the policy's queue
    running: int  # jobs holding GPUs
    busy: dict[str, float]  # GPUs in use per GPU model (a shared run: the shares held, in GPUs)
    total: dict[str, int]  # GPUs per GPU model
    power_w: float
    energy_j: float  # since the start (a restarted service's included)
    cost: float


class LiveRuntime:
    def __init__(
        self,
        config: LiveConfig,
        executor: Executor[Any],
        out: Path,
        *,
        config_dir: Path | None = None,
        jobs: list[Job] | None = None,
        journal: RunJournal | None = None,
        record_segments: bool = True,
    ) -> None:
        """``jobs`` (the service's) replace the config's trace; ``journal`` replaces ``out/journal.jsonl``;
        ``record_segments=False`` keeps no per-segment records (a service runs for months)."""
        self.config = config
        self.ex = config.executor
        self.executor = executor
        self.out = Path(out)
        prepared = prepare(config, jobs)
        self.prepared = prepared
        self.nodes = prepared.nodes
        self.base_profiles = prepared.profiles
        self.agents = LiveAgents()  # adaptive jobs' agents (their trace's batch limits), for pollux
        adaptive = [self.agents.add(job) for job in prepared.jobs]
        _check_policy(config.policy, all(adaptive))  # none yet (the service's): it admits adaptive jobs only
        self.policy = build_policy(config)
        self.agents.per_gpu_type = self.policy.fits_per_gpu_type
        self.book = LiveBook(
            self.nodes,
            prepared.jobs,
            self.policy,
            self.base_profiles,
            prepared.gpu_power,
            restart_delay=config.restart_delay,
            record_segments=record_segments,
            placement=make_run_placement(config.placement_rule),
        )
        self.book.use_agents(self.agents)
        self.config_dir = config_dir
        self.default_argv = program_argv(self.ex.program, config_dir)
        self.jobs: dict[str, LiveJob] = {}
        self.shares_moved = 0  # shared run: tasks whose share the ledger moved to the GPU the cluster gave them
        for js in self.book.states:
            self._track(js)
        if self.book.shared and not executor.shares_gpus:
            raise InputError(
                f"executor {executor.name} cannot run tasks that share GPUs yet (a task placement, "
                f"{config.placement_rule}): use --executor ray or local, or a whole-GPU placement rule",
                field="executor",
            )
        executor.check_cluster(self.nodes)
        if self.book.shared:
            executor.check_shares(self.nodes)
        self.measured: dict[RateKey, float] = {}
        self.measured_changed = False
        self.start_time = self.book.states[0].job.arrival if self.book.states else 0.0
        self.wall0 = 0.0
        self.next_tick = math.inf
        self.arrival_index = 0
        self.decision_s: list[float] = []
        self.overhead_s: list[float] = []
        self.journal: RunJournal = journal if journal is not None else Journal(self.out / "journal.jsonl")
        self.progress: Callable[[int, int], None] | None = None  # progress(done, total) after each step (a bar)
        self.open_ended = jobs is not None  # more jobs may come: an idle queue is not a stuck policy
        self._nudged = False  # a cancellation freed GPUs: event-driven policies decide at the next step

    def _track(self, js: JobState, argv: list[str] | None = None) -> LiveJob:
        if argv is None:
            program = js.job.attrs.get("program")
            if isinstance(program, str) and program.strip():
                argv = program_argv(program, self.config_dir)
            else:
                argv = self.default_argv
        ckpt = self.out / "checkpoints" / job_folder_name(js.job.job_id) / "model.ckpt"
        job = self.jobs[js.job.job_id] = LiveJob(js, list(argv), int(math.ceil(js.job.work)), ckpt)
        return job

    # ------------------------------------------------------------------ open-ended use (the service)
    def add_job(self, job: Job, argv: list[str] | None = None) -> LiveJob:
        """Hand the runtime a job while it runs; it arrives at ``job.arrival``, which must not be in the future
        (jobs are admitted in the order they were added)."""
        if not self.agents.add(job) and self.policy.decides_on_agents:
            name = self.policy.name
            raise InputError(f"job {job.job_id}: policy '{name}' decides on adaptive jobs only", field="job")
        js = self.book.add(job)
        return self._track(js, argv)

    def cancel(self, job_id: str) -> bool:
        """End a job now: journalled first, then its workers are killed (no checkpoint) and it leaves the cluster.
        False when the runtime has no such unfinished job."""
        job = self.jobs.get(job_id)
        if job is None or job.finished:
            return False
        job.cancelled = True
        job.next_start = None
        self.journal.job_cancelled(job)
        attempt = job.attempt
        saved = 0
        if attempt is not None:
            for w in attempt.workers:
                self.executor.kill(w.handle)
                w.code = self.executor.exit_code(w.handle) if w.code is None else w.code
            attempt.stopping = True
            saved = commit(job, attempt)
            job.attempt = None
        self.book.advance(self.sim_time(time.time()))
        self.book.fail(job.js)  # closes its segment: the energy it used is counted
        if attempt is not None:
            self.journal.attempt_ended(job, attempt, saved)
        self._nudged = True
        return True

    def forget(self, job_id: str) -> None:
        """Drop a finished job from the runtime's per-poll scans (the book keeps its record)."""
        job = self.jobs.get(job_id)
        if job is not None and job.finished and job.attempt is None:
            del self.jobs[job_id]

    def set_policy(self, policy: ClusterPolicy) -> None:
        """Drive the cluster with another policy from the next step on (running jobs keep their placements)."""
        _check_policy(policy.name, all(job_id in self.agents for job_id, job in self.jobs.items() if not job.finished))
        self.policy = policy
        self.agents.per_gpu_type = policy.fits_per_gpu_type
        self.book.use_policy(policy)
        self.next_tick = math.inf

    def use_base_profiles(self, profiles: ProfileSource) -> None:
        """Rates for emulation and for the policies from ``profiles`` (measured rates still replace them)."""
        self.base_profiles = profiles
        self.book.use_profiles(MeasuredProfiles(profiles, self.measured) if self.measured else profiles)

    # ------------------------------------------------------------------ what a driver around it reads (the service)
    @property
    def now(self) -> float:
        """Simulated time the book last advanced to."""
        return self.book.now

    @property
    def shared(self) -> bool:
        """Its jobs are tasks sharing GPUs (a task placement: gpuweave.cluster.sharing.ledger)."""
        return self.book.shared

    @property
    def time_scale(self) -> float:
        """Simulated seconds per wall second."""
        return self.ex.time_scale

    @property
    def ideal_placement(self) -> bool:
        """Whether the book runs every placement at the consolidated rate (a live cluster does not: False)."""
        return self.book.cluster.ideal_placement

    def is_running(self, job_id: str) -> bool:
        """True while the job holds GPUs in the book (the policy placed it), launched or not."""
        return job_id in self.book.running

    def resume_clock(self, now: float, energy_j: float = 0.0, cost: float = 0.0) -> None:
        """A restarted service: simulated time goes on from ``now``, with the energy and cost counted so far."""
        self.book.start_clock(now, energy_j, cost)

    def mark_done(self, job: LiveJob) -> None:
        """A job whose checkpoints hold all its steps (found on a restart or a shutdown): done, off the cluster.
        The caller journals it."""
        job.done = True
        self.book.complete(job.js)

    def usage(self) -> ClusterUsage:
        """Jobs and GPUs in use, power, energy and cost now. O(GPU models); a shared run's O(GPUs), its busy GPUs
        being the shares held (a GPU with one half-GPU task is half busy, not busy)."""
        book = self.book.cluster
        if book.shares is None:
            busy: dict[str, float] = {m: book.busy_by_model[i] for i, m in enumerate(book.models)}
        else:
            held = dict.fromkeys(book.models, 0.0)
            for node, spec in enumerate(book.nodes):
                held[spec.gpu_model] += book.shares.held_gpus(node)
            busy = {m: round(b, 3) for m, b in held.items()}
        return ClusterUsage(
            now=book.now,
            waiting=len(book.pending),
            running=len(book.running),
            busy=busy,
            total=book.gpus_by_model,
            power_w=book.power_w,
            energy_j=book.energy_j,
            cost=book.cost,
        )

    def energy_so_far(self) -> dict[str, tuple[float, float]]:
        """Energy (J) and cost so far of each job holding GPUs, its current placement included. O(running jobs'
        nodes)."""
        book = self.book.cluster
        return {job_id: book.energy_so_far(job.js) for job_id, job in self.jobs.items() if job.js.placement is not None}

    # ------------------------------------------------------------------ clock
    def sim_time(self, wall: float) -> float:
        return self.start_time + (wall - self.wall0) * self.ex.time_scale

    # ------------------------------------------------------------------ main loop
    def run(self) -> None:
        self.start()
        try:
            while not all(j.finished for j in self.jobs.values()):
                self.step()
                if self.progress is not None:
                    self.progress(sum(j.finished for j in self.jobs.values()), len(self.jobs))
                time.sleep(self.ex.poll_interval)
        finally:
            self.kill_all()
            self.executor.close()

    def start(self) -> None:
        """Restore what the journal holds (a restarted run) and fix the clock's origin."""
        self.wall0 = self.journal.resume(self, time.time())

    def checkpoint_all(self, timeout: float) -> None:
        """Ask every live attempt to checkpoint and exit, wait up to ``timeout`` wall seconds, kill what is left,
        and commit what the checkpoints hold (a service shutting down; its jobs resume at the next start)."""
        live = [(j, j.attempt) for j in self.jobs.values() if j.attempt is not None]
        for job, attempt in live:
            if not attempt.stopping:
                self._stop(job, attempt)
        deadline = time.time() + timeout
        while time.time() < deadline and not all(a.ended for _, a in live):
            for w in (w for _, a in live for w in a.workers if w.code is None):
                w.code = self.executor.exit_code(w.handle)
            time.sleep(self.ex.poll_interval)
        for job, attempt in live:
            for w in attempt.workers:
                if w.code is None:
                    self.executor.kill(w.handle)
                    w.code = self.executor.exit_code(w.handle)
            saved = commit(job, attempt)
            job.attempt = None
            self.journal.attempt_ended(job, attempt, saved)

    def kill_all(self) -> None:
        """End every worker now (no checkpoint)."""
        for job in self.jobs.values():
            if job.attempt is not None:
                for w in job.attempt.workers:
                    self.executor.kill(w.handle)

    def step(self) -> None:
        wall = time.time()
        now = self.sim_time(wall)
        self.book.advance(now)
        changed = self._poll(wall) or self._nudged
        self._nudged = False
        arrived_at = self._admit(now)
        changed = arrived_at is not None or changed
        book = self.book
        active = bool(book.pending or book.running)
        length = self.policy.round_length
        due = length is not None and active and now >= self.next_tick
        tick = due and not self._launching()
        if due:  # a forked job's round end waits for its own copies' steps, not for other jobs' launches
            self._end_fork_rounds(wall)
        if active and ((changed and self.policy.reacts_to_events) or tick):
            self._decide(wall, now)
        if length is not None:
            if tick:  # ticks sit on the grid k*L, as in the simulator; the first one at ceil(now / L) * L
                self.next_tick = (math.floor(now / length) + 1) * length
            elif active and self.next_tick == math.inf:
                # From the arrival that made the cluster busy, as the simulator does: polling lags the arrival,
                # and ceil(now / L) would push a first tick due at the arrival's instant a whole round later.
                since = now if arrived_at is None else arrived_at
                self.next_tick = math.ceil(since / length) * length
            elif not active:
                self.next_tick = math.inf
        self._launch_ready(wall)
        book.record()
        self._check_stuck(now)

    def _launching(self) -> bool:
        """True while a launched attempt has not reported its first step (nor been stopped or crashed).

        A round tick waits for these: a round begins when its placements run. Without the wait, a policy that
        stops a job and starts it again one round later (Hadar drops an aged job whose utility fell under the
        GPU price, and its starvation guard restarts it on the idle cluster) livelocks whenever a launch takes
        longer than a scaled round: each stop lands before the worker's first step, so nothing is ever saved.
        The wait is bounded by ``launch_timeout`` (default ``report_timeout``; a silent worker is then a crash). A
        decided attempt still waiting for its GPUs counts too (bounded by ``stop_timeout``, after which the worker
        holding them is killed)."""
        for job in self.jobs.values():
            if job.next_start is not None and job.attempt is None and not job.finished:
                return True
            attempt = job.attempt
            if attempt is not None and not attempt.stopping and not attempt.crash:
                if any(c.status is None or c.status.first_step_wall is None for c in attempt.copies):
                    return True
        return False

    def _decide(self, wall: float, now: float) -> None:
        t0 = time.perf_counter()
        if self.ex.measured_rates and self.measured_changed:
            self.book.use_profiles(MeasuredProfiles(self.base_profiles, self.measured))
            self.measured_changed = False
        t1 = time.perf_counter()
        decision = self.policy.schedule(self.book.view)
        t2 = time.perf_counter()
        self.book.decisions += 1
        actions = self.book.apply_decision(decision) if decision else self.book.discard_plan()
        for action in actions:
            self._carry_out(action, wall, now)
        t3 = time.perf_counter()
        self.decision_s.append(t2 - t1)
        self.overhead_s.append((t1 - t0) + (t3 - t2))
        self.journal.decided(now, t2 - t1, actions)

    def _check_stuck(self, now: float) -> None:
        book = self.book
        if self.open_ended or book.running or not book.pending or self.arrival_index < len(book.states):
            return
        if any(j.attempt is not None or j.next_start is not None for j in self.jobs.values()):
            return
        if self.policy.round_length is None:
            stuck = next(iter(book.pending.values()))
            raise InvalidDecisionError(
                f"policy '{self.policy.name}' left {len(book.pending)} job(s) waiting on an "
                f"idle cluster with nothing left to happen (e.g. job '{stuck.job.job_id}')"
            )

    # ------------------------------------------------------------------ events in
    def _admit(self, now: float) -> float | None:
        """Hand every job that has arrived by ``now`` to the book; the first one's arrival time, or None."""
        states = self.book.states
        first = None
        while self.arrival_index < len(states) and states[self.arrival_index].job.arrival <= now:
            js = states[self.arrival_index]
            self.arrival_index += 1
            job = self.jobs.get(js.job.job_id)
            if job is not None and not job.finished:
                self.book.arrive(js)
                self.book.events += 1
                first = js.job.arrival if first is None else first
        return first

    def _poll(self, wall: float) -> bool:
        """Read every live attempt; True when a job completed or failed (a policy event)."""
        changed = False
        for job in [j for j in self.jobs.values() if j.attempt is not None]:
            attempt = job.attempt
            assert attempt is not None, "no other job's poll ends this one's attempt"
            for copy in attempt.copies:
                copy.refresh()
                for w in copy.workers:
                    if w.code is None:
                        w.code = self.executor.exit_code(w.handle)
            changed = self._lose_nodes(self.executor.lost_nodes()) or changed
            if self.book.shared:
                self._follow_given_gpus(job, attempt)
            self._observe(job, attempt, wall)
            self._watch_faults(job, attempt, wall)
            if attempt.ended:
                changed = self._end_attempt(job, attempt, wall) or changed
        return changed

    def _follow_given_gpus(self, job: LiveJob, attempt: Attempt) -> None:
        """A shared run's task on GPU slots the cluster chose (Slurm takes a task's shards from the first GPU with
        room, which may not be the one the task placement picked): the book's ledger moves its share there, once
        per worker, so later placements see what really holds what (:meth:`Executor.given_gpus`)."""
        job_id = job.js.job.job_id
        for copy in attempt.copies:
            for w in copy.workers:
                if w.given is not None or w.spec.gpu_slots is None:
                    continue
                given = self.executor.given_gpus(w.handle)
                if given is None:
                    continue
                w.given = given
                if given != w.spec.gpu_slots and job_id in self.book.running and self.book.move_share(job_id, given):
                    self.shares_moved += 1

    def _observe(self, job: LiveJob, attempt: Attempt, wall: float) -> None:
        firsts = [c.status.first_step_wall for c in attempt.copies if c.status and c.status.first_step_wall]
        if attempt.first_step_wall is None and firsts:
            attempt.first_step_wall = min(firsts)
        steps = attempt.steps
        if steps != attempt.seen_steps:
            attempt.seen_steps = steps
            attempt.last_progress_wall = wall
        js = job.js
        if attempt.stopping or js.job.job_id not in self.book.running or not attempt.first_step_wall:
            return
        scale = self.ex.time_scale
        rate = sum(c.status.steps_per_s for c in attempt.copies if c.status) / scale
        self.book.observe(js, max(0.0, job.remaining - steps), rate)
        if js.job.job_id in self.agents:
            self._measure_adaptive(js.job.job_id, attempt)
        for copy in attempt.copies:
            if copy.status and copy.steps >= MIN_MEASURE_STEPS and copy.status.steps_per_s > 0:
                spec = copy.workers[0].spec
                placement = ((spec.node, js.num_gpus),) if attempt.forked else attempt.placement
                key = measured_key(js.job.job_type, js.num_gpus, self.nodes, placement)
                if key is not None:
                    self.measured[key] = copy.status.steps_per_s / scale
                    self.measured_changed = True

    def _measure_adaptive(self, job_id: str, attempt: Attempt) -> None:
        """An adaptive job's workers' profile and gradient statistics to its agent (times in simulated seconds)."""
        status = attempt.copies[0].status if attempt.copies else None
        if status is None:
            return
        now = self.book.now
        reported = status.grad_sqr is not None and status.grad_var is not None and status.batch_size > 0
        if reported and (not attempt.samples or now - attempt.samples[-1][0] >= ADAPTATION_EVERY_S):
            attempt.samples.append((now, replace(status)))  # a row of adaptation.csv (live.results.adaptations)
        if status.step_time is None or status.sync_time is None:
            return
        scale = self.ex.time_scale
        grad = None if status.grad_sqr is None or status.grad_var is None else (status.grad_sqr, status.grad_var)
        self.agents.measure(job_id, attempt.placement, status.step_time * scale, status.sync_time * scale, grad)

    def _watch_faults(self, job: LiveJob, attempt: Attempt, wall: float) -> None:
        if attempt.stopping and not attempt.crash:
            # A worker that ignores SIGTERM would hold its GPUs for good: past stop_timeout it is killed, and what
            # its last checkpoint holds is kept.
            if attempt.stop_wall is None:  # stopped before a restart of the runtime: the clock starts now
                attempt.stop_wall = wall
            elif wall - attempt.stop_wall > self.ex.stop_timeout:
                self._kill_workers(attempt.workers)
            return
        if attempt.crash or attempt.requeued:
            return
        finished = []  # copies whose lead saved their target: their other workers are stopped, however they end
        for copy in attempt.copies:
            lead = copy.workers[0]
            if lead.code == 0 and copy.steps >= copy.target:
                finished.append(copy)
                for w in copy.workers[1:]:
                    self.executor.terminate(w.handle)
        bad = [w for c in attempt.copies if c not in finished for w in c.workers if w.code not in (None, 0)]
        if bad and self._settling(attempt, wall):
            return
        requeued = [r for r in (self.executor.ended_by_cluster(w.handle) for w in bad) if r]
        if requeued and len(requeued) == len(bad):  # the cluster manager ended it, nothing failed
            attempt.requeued = requeued[0]
        else:
            attempt.crash = self._crash_reason(attempt, bad, wall)
        if attempt.crash or attempt.requeued:
            self._kill_workers(attempt.workers)

    def _settling(self, attempt: Attempt, wall: float) -> bool:
        """Whether the verdict on a gang with a failed worker waits: while one of its workers is undecided (its
        node's fate unknown: :meth:`Executor.undecided`, bounded by the executor), or for up to ``CRASH_SETTLE_S``
        while the failed copy's other workers are still running (a rank's death fails its peers a few milliseconds
        later, each node's agent reports when it has ended its ranks, and the cause is the earliest failure)."""
        if attempt.failed_wall is None:
            attempt.failed_wall = wall
        if any(w.code is None and self.executor.undecided(w.handle) for w in attempt.workers):
            return True
        failed = [c for c in attempt.copies if any(w.code not in (None, 0) for w in c.workers)]
        running = any(w.code is None for c in failed for w in c.workers)
        return running and wall - attempt.failed_wall < CRASH_SETTLE_S

    def _crash_reason(self, attempt: Attempt, bad: list[Worker], wall: float) -> str:
        """Why the attempt counts as crashed now (a worker failed, left early or went silent), or ""."""
        if bad:
            w = root_cause(bad)
            return f"worker {w.spec.label} exited with status {w.code}: {log_tail(w.spec.channel)}"
        early = [c for c in attempt.copies if c.workers[0].code == 0 and c.steps < c.target]
        if early:
            return f"worker {early[0].workers[0].spec.label} exited before its target"
        # before the first step the attempt may take launch_timeout (a gang's ranks import torch and form their
        # process group), after it report_timeout between steps (a hung rank stalls its whole gang)
        launch_timeout = self.ex.launch_timeout
        launching = attempt.first_step_wall is None and launch_timeout is not None
        limit = launch_timeout if launch_timeout is not None and launching else self.ex.report_timeout
        if wall - attempt.last_progress_wall > limit:
            return f"no report from the workers for {limit:g} s" + (" after their launch" if launching else "")
        return ""

    def _kill_workers(self, workers: list[Worker]) -> None:
        for w in workers:
            if w.code is None:
                self.executor.kill(w.handle)
                w.code = self.executor.exit_code(w.handle)

    def _lose_nodes(self, nodes: list[int]) -> bool:
        """Nodes the executor lost: their jobs go back to the queue from their last checkpoint (no crash counted).
        A copy that had a worker there is a gang that lost a member: its other ranks wait in a collective for a
        peer that will never answer (a cut link sends no reset), so they can neither checkpoint nor stop, and are
        killed at once; what the copy's last checkpoint holds is kept. The job's other copies checkpoint and exit.
        True when some job was sent back (a policy event)."""
        sent_back = False
        for index in nodes:
            for job_id in self.book.lose_node(index):
                sent_back = True
                job = self.jobs[job_id]
                job.next_start = None
                attempt = job.attempt
                if attempt is not None and not attempt.crash:
                    attempt.node_lost = True
                    attempt.lost_node = self.nodes[index].name
                    self._stop(job, attempt)
                    for copy in attempt.copies:
                        if any(w.spec.node == index for w in copy.workers):
                            self._kill_workers(copy.workers)
        return sent_back

    # ------------------------------------------------------------------ attempt ends
    def _end_attempt(self, job: LiveJob, attempt: Attempt, wall: float) -> bool:
        saved = commit(job, attempt)
        attempt.ended_sim = self.sim_time(wall)
        job.attempt = None
        self.journal.attempt_ended(job, attempt, saved)
        js, book = job.js, self.book
        book.advance(self.sim_time(wall))
        if job.committed >= job.target:
            job.done = True
            job.next_start = None
            book.complete(js)
            self.journal.job_done(job)
            return True
        if attempt.crash:
            job.crashes += 1
            if job.crashes > self.ex.max_retries:
                job.failed = f"{attempt.crash} (after {job.crashes} attempt(s) ending in a crash)"
                job.next_start = None
                book.fail(js)
                self.journal.job_failed(job)
                return True
        if (attempt.crash or attempt.requeued) and js.job.job_id in book.running:
            job.next_start = (js.placement, "retry", wall, self.sim_time(wall))  # type: ignore[assignment]  # running
        book.set_remaining(js, job.remaining)
        return False

    def _end_fork_rounds(self, wall: float) -> None:
        """HadarE: every forked attempt that has trained for a round ends it; its copies are consolidated and
        started again.

        A copy's round starts at its first step, not at its launch: a worker that is still starting (a torch
        worker spends seconds importing) has nothing to checkpoint, and stopping it would commit nothing. Ending
        rounds on the tick alone livelocked whenever a scaled round was shorter than a worker's start: every round
        restarted the copies from the same checkpoint. So a forked attempt ends its round at the first tick after
        every copy has stepped for one round length (wall seconds ``L / time_scale``). That tick need not be a
        decision's: decisions wait while another job's attempt is still launching (:meth:`_launching`), but a fork
        round's end depends only on its own copies' steps, so it does not wait for other jobs' launches."""
        round_wall = (self.policy.round_length or 0.0) / self.ex.time_scale
        for job in self.jobs.values():
            attempt = job.attempt
            if attempt is None or not attempt.forked or attempt.stopping or attempt.crash:
                continue
            firsts = [c.status.first_step_wall if c.status else None for c in attempt.copies]
            if any(f is None for f in firsts) or wall - max(firsts) < round_wall:  # type: ignore[operator,type-var]  # no None
                continue
            self._stop(job, attempt)
            job.next_start = (attempt.placement, "fork-round", wall, self.sim_time(wall))

    def _stop(self, job: LiveJob, attempt: Attempt) -> None:
        self.journal.stopping(job, attempt)
        attempt.stopping = True
        attempt.stop_wall = time.time()
        for w in attempt.workers:
            if w.code is None:
                self.executor.terminate(w.handle)

    # ------------------------------------------------------------------ decisions out
    def _carry_out(self, action: Action, wall: float, now: float) -> None:
        job = self.jobs[action.job_id]
        if job.attempt is not None and not job.attempt.stopping:
            self._stop(job, job.attempt)
        if action.kind == "stop":
            job.next_start = None
            return
        kind = "start" if job.attempts == 0 else ("move" if action.kind == "move" else "resume")
        job.next_start = (action.placement, kind, wall, now)  # type: ignore[assignment]  # not a stop: a placement

    def _launch_ready(self, wall: float) -> None:
        """Start the decided attempts whose GPUs are free. A job given GPUs that a stopped job's worker still holds
        (it is writing its checkpoint) waits for that worker to exit: started at once it would share the GPU, or,
        on the local executor, find no GPU left to it and train on the CPU (seen on an H200, where the job that
        preempted another ran at half speed). The wait counts in the job's launch latency."""
        for job in self.jobs.values():
            if job.next_start is not None and job.attempt is None and not job.finished:
                placement, kind, decided_wall, decided_sim = job.next_start
                if job.js.job.job_id not in self.book.running or job.js.placement != placement:
                    job.next_start = None
                elif all(self.executor.can_launch(node, k) for node, k in placement):
                    job.next_start = None
                    self._launch(job, placement, kind, decided_wall, decided_sim)

    def _launch(self, job: LiveJob, placement: Placement, kind: str, decided_wall: float, decided_sim: float) -> None:
        js = job.js
        number = job.attempts + 1
        total = sum(k for _, k in placement)
        forked = self.policy.forks_jobs and is_forked(js.num_gpus, placement, total)
        slots = [((node, js.num_gpus),) for node in copy_nodes(placement, js.num_gpus)] if forked else [placement]
        view = self.book.view
        rates = [view.rate(js, s) or 1.0 for s in slots]
        shares = split_steps(job.remaining, rates) if forked else [job.remaining]
        base = job.checkpoint.parent
        plan = []  # (copy index, slot, share, checkpoint, channel per rank)
        for index, (slot, share) in enumerate(zip(slots, shares)):
            if share > 0:
                ckpt = base / f"a{number}-c{index}.ckpt" if forked else job.checkpoint
                folder = self.out / "channels" / job_folder_name(js.job.job_id)
                channels = [folder / f"a{number}-c{index}-r{rank}" for rank in range(len(slot))]
                plan.append((index, slot, share, ckpt, channels))
        planned = [
            {"checkpoint": str(ckpt), "channel": str(ch[0]), "channels": [str(c) for c in ch], "pids": []}
            for _, _, _, ckpt, ch in plan
        ]
        if not self.journal.launching(job, number, kind, placement, forked, planned):
            return  # the journal refused (the job was cancelled meanwhile): nothing starts
        job.attempts = number
        base.mkdir(parents=True, exist_ok=True)
        held = self.book.gpu_slots(js.job.job_id)  # a shared run's GPU slots and share (None: whole GPUs)
        adaptive = self._adaptive_env(js, placement) if js.job.job_id in self.agents else None
        copies = [self._start_copy(job, number, *planned_copy, held, adaptive) for planned_copy in plan]
        attempt = Attempt(number, kind, placement, forked, copies, decided_wall, decided_sim, time.time())
        job.attempt = attempt
        job.history.append(attempt)
        self.journal.attempt_started(job, attempt, self.executor)

    def _adaptive_env(self, js: JobState, placement: Placement) -> dict[str, str]:
        """An adaptive job's batch for ``placement``, picked by its agent, and, on emulated GPUs, the seconds each
        sample takes on the placement's slowest GPU type: one GPU's profiled rate at the job's initial batch."""
        plan = self.agents.launch(js.job.job_id, placement, self.nodes[placement[0][0]].gpu_model)
        agent = self.agents.agent(js, self.book.now)
        assert agent is not None
        init = agent.app.init_batch_size
        env = {
            "GPUWEAVE_BATCH_SIZE": str(plan.batch_size),
            "GPUWEAVE_ACCUM_STEPS": str(plan.accum_steps),
            "GPUWEAVE_INIT_BATCH": str(init),
        }
        if self.executor.emulated:
            one = min(self.base_profiles.rate(js.job.job_type, self.nodes[n].gpu_model, 1, True) for n, _ in placement)
            env["GPUWEAVE_SAMPLE_S"] = f"{1.0 / (one * init * self.ex.time_scale):.9f}"
        return env

    def _start_copy(
        self,
        job: LiveJob,
        number: int,
        index: int,
        slot: Placement,
        share: int,
        ckpt: Path,
        channels: list[Path],
        held: tuple[tuple[int, ...], float] | None,
        adaptive: dict[str, str] | None = None,
    ) -> Copy:
        """Launch one copy of an attempt: a worker per node of ``slot``, all at once (a gang's reservation is the
        executor's: :meth:`Executor.launch_gang`). More than one rank makes each worker a torchrun-style node agent
        (:mod:`gpuweave.live.gang`) that starts its node's ranks, one per GPU."""
        js = job.js
        rate = emulated_rate(self.base_profiles, js.job.job_type, js.num_gpus, self.nodes, slot)
        # an adaptive job's emulated GPUs take time per sample instead (its batch is not the profile's)
        pace = rate * self.ex.time_scale if self.executor.emulated and adaptive is None else 0.0
        sizes = gang_sizes(slot, per_gpu=self.ex.ranks == "per-gpu")
        gang = sum(sizes) > 1
        run_id = f"{js.job.job_id}-a{number}-c{index}"
        argv = tuple(agent_argv(job.argv) if gang else job.argv)
        rendezvous = channels[0].parent / f"a{number}-c{index}.rendezvous.json"
        gpu_slots, part = held if held is not None else (None, 1.0)
        specs = []
        for rank, ((node, k), channel) in enumerate(zip(slot, channels)):
            channel.mkdir(parents=True, exist_ok=True)
            env = {
                "GPUWEAVE_CHANNEL": str(channel),
                "GPUWEAVE_TARGET_STEPS": str(share),
                "GPUWEAVE_PACE": f"{pace:.6f}" if pace else "0",
                "GPUWEAVE_CHECKPOINT_EVERY": str(self.ex.checkpoint_every),
                "GPUWEAVE_CHECKPOINT": str(ckpt if rank == 0 else channel / "rank.ckpt"),
                "GPUWEAVE_CHECKPOINT_DIR": str(job.checkpoint.parent),
                "GPUWEAVE_RESUME_FROM": str(job.checkpoint) if job.checkpoint.exists() else "",
                "GPUWEAVE_ATTEMPT": str(number - 1),
                "GPUWEAVE_RANK": str(rank),
                "GPUWEAVE_COPY": str(index),
                "GPUWEAVE_JOB": js.job.job_id,
            }
            env.update(agent_env(sizes, rank, rendezvous, run_id) if gang else single_rank_env(run_id))
            if adaptive is not None:
                env.update(adaptive)
            if gpu_slots is not None:  # a task on shared GPUs: the ledger's GPUs, told to the worker too
                env["GPUWEAVE_GPU_SLOTS"], env["GPUWEAVE_GPU_SHARE"] = ",".join(map(str, gpu_slots)), f"{part:g}"
            node_spec = self.nodes[node]
            specs.append(
                LaunchSpec(
                    js.job.job_id,
                    number,
                    index,
                    rank,
                    node,
                    node_spec.name,
                    node_spec.gpu_model,
                    k,
                    argv,
                    channel,
                    env,
                    js.job.attrs,
                    gpu_slots,
                    part,
                )  # fmt: skip
            )
        handles = self.executor.launch_gang(specs)
        return Copy(index, share, ckpt, [Worker(spec, handle) for spec, handle in zip(specs, handles)])


def _check_policy(name: str, adaptive: bool) -> None:
    """A policy that decides on the jobs' agents alone (pollux, sia) runs live when every job is adaptive (its agent
    measured live: :mod:`gpuweave.live.agents`); any other policy with needs is refused, as a simulation-only one."""
    check_runs_anywhere(name, "the live runtime", adaptive)


def root_cause(bad: list[Worker]) -> Worker:
    """The failed worker a gang's crash is named after, as torchrun names its root cause: first a worker killed by a
    signal without a failure record (killed from outside, or with its node: its ranks died with it and failed their
    peers), then the earliest rank exit in the node agents' failure records
    (:class:`~gpuweave.live.channel.RankFailure`), then placement order. O(failed workers)."""

    def order(item: tuple[int, Worker]) -> tuple[int, float, int]:
        index, worker = item
        record = read_failure(worker.spec.channel)
        if record is not None:
            return (1, record.time, index)
        return (0 if (worker.code or 0) < 0 else 2, 0.0, index)

    return min(enumerate(bad), key=order)[1]
