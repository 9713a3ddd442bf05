"""The ``slurm`` executor: every worker is a Slurm batch job that gpuweave's policy places and Slurm runs.

Problem: let a gpuweave policy decide where and when jobs run on a Slurm cluster, with Slurm doing the running and
Slurm's word on every job's state. Everything goes through Slurm's commands (:mod:`.slurm_commands`):

* **nodes** come from ``scontrol show node``: each (Slurm node, GPU type) is a slot (``gw0-v100``); a cluster
  config node is matched to the slot of its name, else to the first slot of its GPU model with room left;
* **start** = ``sbatch --nodelist=<node> --gres=gpu:<type>:<n> --requeue`` (one batch job per worker: per job,
  per forked copy), at decision time; a gang on several nodes with the same GPUs on each is one job over all of
  them (``--nodes=K``, ``srun`` starting each node's gang agent: :meth:`SlurmExecutor.launch_gang`);
* **stop** = ``scancel --batch --signal=TERM``: the worker checkpoints and exits, and Slurm records the job
  COMPLETED; a job stopped before it ran is held instead (``scontrol hold``);
* **start again / move** = requeue the worker's Slurm job: ``scontrol requeuehold``, ``scontrol update`` of its
  nodes and GPU count with ``StartTime=now`` (a requeued job is otherwise not eligible for two minutes), and
  ``scontrol release``. The same Slurm job id runs every attempt of a worker on one GPU type, so
  ``sacct --duplicates`` shows its earlier runs as REQUEUED. A move to another GPU type, or a job gone from the
  controller (older than ``MinJobAge``), is submitted as a new job. The requeue waits for the restart, not the
  stop: half the moves change the GPU type, and a requeue then would only be cancelled (70 ms each, measured);
* **ends** come from ``squeue`` (state) and ``scontrol show job`` (``ExitCode``), polled at most every
  ``executor.slurm.poll_interval`` seconds; a job Slurm requeued by itself (node failure) is cancelled and read as
  ended by the cluster (``live.csv``: ``requeued``, with Slurm's reason), and the runtime starts it again, as a new
  Slurm job, from its checkpoint without counting a crash. A rejected submission fails the attempt with Slurm's
  reason (written to the worker's log); the runtime retries it and then fails the job, and the rest go on.

The batch script is fixed when a job is submitted, so it only runs ``attempt.sh`` from the job's folder, which
the executor rewrites before each (re)start: the attempt's environment and the program, its output appended to
the worker's log. Progress travels through the file channel, so the runtime and the compute nodes share the
``--out`` folder. After ``kill -9`` of the runtime, a new one finds the old one's jobs by their comment
(``gpuweave:<out>``), asks them to checkpoint, waits, cancels them, and the journal commits what they saved.

Why a new job for another GPU type (Slurm 22.05 on Debian 12, found by trying): ``scontrol update
TresPerNode=gres:gpu:k80:2`` on a held job that asked for ``gpu:v100:1`` keeps both (the job then gets three
GPUs); clearing ``TresPerNode=`` first leaves ``gpu:v100:0`` in the request, and such a job still waits until a
V100 is free. Updating the count of the same type works.
"""

from __future__ import annotations

import csv
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuweave.errors import InputError
from gpuweave.hardware.cluster_spec import Node
from gpuweave.live.executor import LOG_FILE, Executor, LaunchSpec
from gpuweave.live.gang import LOCAL_ENV, NODE_ADDR_ENV, NODE_ENV, SIZES_ENV
from gpuweave.live.local import nvml_gpu_count
from gpuweave.live.names import job_folder_name
from gpuweave.live.slurm_commands import TIMINGS, SlurmCommandError, first_line, run_slurm, try_slurm
from gpuweave.workload.traces.slurm_nodes import GpuSlot, SlurmNode, gpu_slots, parse_scontrol_text

ACTIVE = ("RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED", "RESIZING", "SIGNALING", "STAGE_OUT")
WAITING = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD")
KILL_WAIT_S = 15.0
ORPHAN_WAIT_S = 15.0
NODE_CHECK_S = 2.0  # s between reads of scontrol show node while workers run (lost_nodes)
RELAUNCH_GAP_S = 2  # s between an attempt's end and the next launch of the same Slurm job (credential seconds)
SQUEUE_CHUNK = 400  # job ids per squeue call
SLURM_CSV = "slurm.csv"
SLURM_COLUMNS = [
    "job_id",
    "attempt",
    "copy",
    "rank",
    "slurm_job_id",
    "action",
    "node",
    "gres",
    "launch_to_running_s",
    "state",
    "exit_code",
    "stopped",
    "gpus",
]
GIVEN_GPUS = "slurm-gpus"  # a shared run's task: the GPU indices Slurm gave its job (SLURM_JOB_GPUS), in its channel


@dataclass(slots=True)
class _SlurmJob:
    """The Slurm batch job of one worker key (gpuweave job, copy, rank): requeued for every attempt."""

    slurm_id: str
    folder: Path
    slurm_type: str  # the GPU type it asks for: a held job is only requeued onto GPUs of this type
    ended_at: float = 0.0  # wall time its last attempt was seen ending


@dataclass(slots=True)
class _Handle:
    job: _SlurmJob | None  # None when Slurm rejected the submission
    spec: LaunchSpec
    action: str  # submit | requeue | rejected
    host: str
    gres: str
    launched: float  # wall time of the sbatch / release call
    code: int | None = None
    running_at: float | None = None  # first poll that saw the job RUNNING
    stopping: bool = False
    held: bool = False  # stopped before it ran: held in Slurm's queue
    state: str = ""
    requeued: str = ""  # why Slurm requeued it by itself (it did not fail)
    gang: bool = False  # the lead of a gang's one allocation: its ranks run as srun tasks, one per node
    lead: _Handle | None = None  # another node of a gang's allocation: it follows the lead's Slurm job
    given: tuple[int, ...] | None = None  # a shared run's task: the GPU slots Slurm gave it, once read

    @property
    def submitted(self) -> _SlurmJob:
        """The Slurm job of a submission Slurm took (a rejected one has its exit code and is not asked)."""
        assert self.job is not None, "a rejected submission has no Slurm job"
        return self.job


@dataclass(slots=True)
class SlurmOptions:
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    sbatch_args: list[str] = field(default_factory=list)
    gpus: str = "auto"  # auto | emulated | real
    poll_interval: float = 0.2


class SlurmExecutor(Executor["_Handle"]):
    name = "slurm"
    shares_gpus = True  # a share of one GPU is Slurm's gres/shard (GresTypes=gpu,shard)

    def __init__(self, out: Path, options: SlurmOptions | None = None) -> None:
        self.out = Path(out).resolve()
        self.folder = self.out / "slurm"
        self.options = options or SlurmOptions()
        self.tag = f"gpuweave:{self.out}"
        self.emulated = True
        self._slots: dict[int, GpuSlot] = {}
        self._shards: dict[tuple[str, str], int] = {}  # (host, GPU type) -> shards per GPU (gres/shard)
        self._first_gpu: dict[int, int] = {}  # cluster node -> Slurm's index of its first GPU on its Slurm node
        self._jobs: dict[tuple[str, int, int], _SlurmJob] = {}
        self._live: dict[str, _Handle] = {}  # Slurm job id -> the handle of its current attempt
        self._states: dict[str, tuple[str, str]] = {}  # Slurm job id -> (state, reason) from the last poll
        self._polled = 0.0
        self._ended: list[_Handle] = []
        self._addr: dict[str, str] = {}  # Slurm node -> NodeAddr
        self._nodes_checked = 0.0  # monotonic time of the last scontrol show node (lost_nodes)
        self._lost_reported: set[int] = set()

    # ------------------------------------------------------------------ cluster
    def check_cluster(self, nodes: list[Node]) -> None:
        text = run_slurm(["scontrol", "show", "node", "--oneliner"])
        slurm_nodes = parse_scontrol_text(text, source="scontrol show node")
        if self.options.partition:
            slurm_nodes = [n for n in slurm_nodes if self.options.partition in n.partitions]
            if not slurm_nodes:
                raise InputError(f"Slurm partition {self.options.partition!r} has no nodes", field="executor.slurm")
        self._addr = {n.name: n.addr for n in slurm_nodes if n.addr}
        slots, _ = gpu_slots(slurm_nodes, skip_unknown=True, source="scontrol show node")
        self._slots = match_nodes(nodes, slots, {n.name: n for n in slurm_nodes})
        self._shards = shards_per_gpu(text)
        # where a slot's GPUs start among its Slurm node's (SLURM_JOB_GPUS counts over every type, in Gres order)
        hosts = {n.name: n for n in slurm_nodes}
        self._first_gpu = {}
        for index, slot in self._slots.items():
            kinds = list(hosts[slot.host].gpus) if slot.host in hosts else []
            before = kinds[: kinds.index(slot.slurm_type)] if slot.slurm_type in kinds else []
            self._first_gpu[index] = sum(hosts[slot.host].gpus[k] for k in before)
        if self.options.gpus == "auto":
            self.emulated = nvml_gpu_count() == 0
        else:
            self.emulated = self.options.gpus == "emulated"
        self.folder.mkdir(parents=True, exist_ok=True)
        self._end_earlier_runs()

    def _end_earlier_runs(self) -> None:
        """Jobs of an earlier runtime on this ``--out`` (killed with -9): checkpoint and exit, then cancel."""
        text = run_slurm(["squeue", "--noheader", "--format=%i|%T|%k"])
        fields = [line.split("|", 2) for line in text.splitlines() if line.count("|") >= 2]
        mine = [(i, s) for i, s, comment in fields if comment.strip() == self.tag]
        running = [i for i, s in mine if s in ACTIVE]
        if running:
            try_slurm(["scancel", "--batch", "--signal=TERM", *running])
            deadline = time.time() + ORPHAN_WAIT_S
            while time.time() < deadline and any(s in ACTIVE for s, _ in self._query(running).values()):
                time.sleep(0.2)
        if mine:
            try_slurm(["scancel", *[i for i, _ in mine]])

    def check_shares(self, nodes: list[Node]) -> None:
        """A shared run: every node's GPUs must offer Slurm shards (``gres/shard``), what a share of one asks for."""
        for node in nodes:
            slot = self._slots[node.index]
            if self._shards.get((slot.host, slot.slurm_type), 0) <= 0:
                raise InputError(
                    f"Slurm node {slot.host} has no shard GRES for its {slot.slurm_type or 'GPU'}s, so tasks cannot "
                    "share them: GresTypes=gpu,shard, Name=shard Count=N in gres.conf and shard:TYPE:N in the node's "
                    "Gres (docs/slurm.md)",
                    field="cluster",
                )

    def _gres(self, spec: LaunchSpec, slot: GpuSlot) -> str:
        """What the worker's Slurm job asks: its GPUs, or a shared run's share of one GPU as shards (none for a
        CPU-only task)."""
        typed = f"{slot.slurm_type}:" if slot.slurm_type else ""
        if spec.gpu_slots is not None and spec.gpus == 0:
            return ""
        if spec.gpu_slots is not None and spec.gpu_share < 1.0:
            per_gpu = self._shards.get((slot.host, slot.slurm_type), 0)
            return f"shard:{typed}{max(1, round(spec.gpu_share * per_gpu))}"
        return f"gpu:{typed}{spec.gpus}"

    # ------------------------------------------------------------------ launch
    def launch(self, spec: LaunchSpec) -> _Handle:
        slot = self._slots[spec.node]
        gres = self._gres(spec, slot)
        key = (spec.job_id, spec.copy, spec.rank)
        job = self._jobs.get(key)
        folder = job.folder if job else self.folder / f"{job_folder_name(spec.job_id)}-c{spec.copy}-r{spec.rank}"
        folder.mkdir(parents=True, exist_ok=True)
        spec.channel.mkdir(parents=True, exist_ok=True)
        _write_attempt(folder, spec, self.emulated, self._addr.get(slot.host, ""))
        launched = time.time()
        try:
            # (a shared run's task is submitted afresh: its GRES may be shards or none, which a requeue cannot set)
            reusable = job is not None and spec.gpu_slots is None and job.slurm_type == slot.slurm_type
            if job is not None and reusable and self._requeue(job, slot.host, gres):
                action = "requeue"
            else:
                if job is not None:
                    self._drop_if_held(job)
                job = _SlurmJob(self._submit(spec, folder, slot.host, gres), folder, slot.slurm_type)
                self._jobs[key] = job
                action = "submit"
        except SlurmCommandError as exc:
            return self._rejected(spec, slot.host, gres, launched, exc)
        handle = _Handle(job, spec, action, slot.host, gres, launched)
        self._live[job.slurm_id] = handle
        self._states[job.slurm_id] = ("PENDING", "launched")  # until the next poll: never a stale final state
        return handle

    def launch_gang(self, specs: list[LaunchSpec]) -> list[_Handle]:
        """A gang (a job of several ranks, :mod:`gpuweave.live.gang`) on several Slurm nodes: one Slurm job over all
        of them whose batch script starts every rank with one ``srun``, a task per rank running its node's attempt
        script with ``GPUWEAVE_GANG_LOCAL=$SLURM_LOCALID`` (a one-rank agent; ``--kill-on-bad-exit`` ends the gang
        when a rank fails). The same GPUs on every node: one allocation (``sbatch --nodes=K --ntasks-per-node=r
        --nodelist=... --gres=gpu:TYPE:n``). Other counts or types per node: one heterogeneous job, a component per
        node (``--nodes=1 --ntasks=r_i --nodelist=node_i --gres=gpu:TYPE_i:n_i``, components joined by ``:``), its
        ranks started by ``srun --het-group`` over them all. Either way the gang is one job in ``squeue`` and
        ``sacct`` (a heterogeneous one lists a row per component, ``1234+0``, ``1234+1``, each with its GPUs) and
        Slurm starts it whole or not at all. A shared run's task gets one job per node. A gang's job is submitted
        afresh for every attempt (a requeue could not change its nodes)."""
        slots = [self._slots[spec.node] for spec in specs]
        hosts = [slot.host for slot in slots]
        if len(specs) < 2 or len(set(hosts)) < len(hosts) or specs[0].gpu_slots is not None:
            return [self.launch(spec) for spec in specs]
        lead_spec = specs[0]
        folder = self.folder / f"{job_folder_name(lead_spec.job_id)}-c{lead_spec.copy}-a{lead_spec.attempt}"
        folder.mkdir(parents=True, exist_ok=True)
        for spec, host in zip(specs, hosts):
            spec.channel.mkdir(parents=True, exist_ok=True)
            _write_attempt(folder, spec, self.emulated, self._addr.get(host, ""), name=f"attempt-{host}.sh")
        sizes = [int(x) for x in lead_spec.env[SIZES_ENV].split(",")] if SIZES_ENV in lead_spec.env else []
        components = [
            (host, self._gres(spec, slot), sizes[spec.rank] if sizes else 1)
            for spec, slot, host in zip(specs, slots, hosts)
        ]
        launched = time.time()
        try:
            sid = self._submit_gang(lead_spec, folder, components)
        except SlurmCommandError as exc:
            return [self._rejected(spec, host, gres, launched, exc) for spec, (host, gres, _) in zip(specs, components)]
        job = _SlurmJob(sid, folder, slots[0].slurm_type)
        lead = _Handle(job, lead_spec, "submit", hosts[0], components[0][1], launched, gang=True)
        self._live[sid] = lead
        self._states[sid] = ("PENDING", "launched")
        followers = [
            _Handle(job, spec, "submit", host, gres, launched, lead=lead)
            for spec, (host, gres, _) in zip(specs[1:], components[1:])
        ]
        return [lead, *followers]

    def _follow(self, handle: _Handle) -> int | None:
        """A gang's other node: its Slurm job is the lead's, so is its end."""
        lead = handle.lead
        assert lead is not None
        code = self.exit_code(lead)
        if code is not None and handle.code is None:
            handle.code, handle.state, handle.running_at = code, lead.state, lead.running_at
            handle.stopping, handle.requeued = lead.stopping, lead.requeued
            self._ended.append(handle)
        return handle.code

    def _drop_if_held(self, job: _SlurmJob) -> None:
        """A job held after a stop before it ran cannot change GPU type (module docstring): cancel it."""
        if self._state(job.slurm_id)[0] in WAITING:
            try_slurm(["scancel", job.slurm_id])

    def _submit(self, spec: LaunchSpec, folder: Path, host: str, gres: str) -> str:
        """One worker's batch job on ``host``: its script runs the attempt script."""
        batch = folder / "batch.sh"
        batch.write_text(f"#!/bin/sh\nexec /bin/sh {shlex.quote(str(folder / 'attempt.sh'))}\n")
        job = self._job_args(f"gw:{spec.label}", folder)
        return self._sbatch([*job, *self._component(spec, host, gres, ["--nodes=1", "--ntasks=1"])], batch)

    def _submit_gang(self, spec: LaunchSpec, folder: Path, components: list[tuple[str, str, int]]) -> str:
        """A gang's one job (:meth:`launch_gang`): ``components`` are (host, GRES, ranks) per node."""
        each = f'{LOCAL_ENV}=$SLURM_LOCALID exec /bin/sh "$0/attempt-$SLURMD_NODENAME.sh"'
        job = self._job_args(f"gw:{spec.job_id}/a{spec.attempt}/c{spec.copy}", folder)
        if len({(gres, ranks) for _, gres, ranks in components}) == 1:  # the same on every node: one allocation
            _, gres, ranks = components[0]
            hosts = ",".join(host for host, _, _ in components)
            tasks = [f"--nodes={len(components)}", f"--ntasks-per-node={ranks}"]
            args, step = [*job, *self._component(spec, hosts, gres, tasks)], f"--ntasks-per-node={ranks}"
        else:  # a heterogeneous job: a component per node
            args = list(job)
            for i, (host, gres, ranks) in enumerate(components):
                args += [":"] if i else []
                args += self._component(spec, host, gres, ["--nodes=1", f"--ntasks={ranks}"])
            step = f"--het-group=0-{len(components) - 1}"
        start = f"exec srun {step} --kill-on-bad-exit=1 /bin/sh -c {shlex.quote(each)}"
        batch = folder / "batch.sh"
        batch.write_text(f"#!/bin/sh\n{start} {shlex.quote(str(folder))}\n")
        return self._sbatch(args, batch)

    def _job_args(self, name: str, folder: Path) -> list[str]:
        """The options of a whole job (its first component's, in a heterogeneous one)."""
        return [
            "--requeue",
            f"--job-name={name}",
            f"--comment={self.tag}",
            f"--output={folder / 'slurm-%j.out'}",
            "--open-mode=append",
        ]

    def _component(self, spec: LaunchSpec, hosts: str, gres: str, tasks: list[str]) -> list[str]:
        """The options of a job's resources on ``hosts``, with the site's partition, account, QoS and sbatch
        arguments (every component of a heterogeneous job gets them)."""
        args = [
            *tasks,
            f"--nodelist={hosts}",
            *([f"--gres={gres}"] if gres else []),  # a CPU-only task of a shared run asks no GRES
        ]
        if self.options.partition:
            args.append(f"--partition={self.options.partition}")
        # a job's own account and QoS (the service's user's) before the run's
        account = spec.attrs.get("slurm_account") or self.options.account
        qos = spec.attrs.get("slurm_qos") or self.options.qos
        if account:
            args.append(f"--account={account}")
        if qos:
            args.append(f"--qos={qos}")
        args += self.options.sbatch_args
        extra = spec.attrs.get("sbatch_args")
        if isinstance(extra, str) and extra.strip():
            args += shlex.split(extra)
        return args

    def _sbatch(self, args: list[str], batch: Path) -> str:
        out = run_slurm(["sbatch", "--parsable", *args, str(batch)])
        return first_line(out).split(";")[0]

    def _requeue(self, job: _SlurmJob, host: str, gres: str) -> bool:
        """Start the worker's Slurm job again on ``host`` with ``gres``; False when Slurm no longer knows it."""
        state = self._state(job.slurm_id)[0]
        if state in ("GONE", "UNKNOWN"):
            return False
        if state not in WAITING:
            ok, _ = try_slurm(["scontrol", "requeuehold", job.slurm_id])
            if not ok:
                return False
        run_slurm(
            [
                "scontrol",
                "update",
                f"JobId={job.slurm_id}",
                f"TresPerNode=gres:{gres}",
                f"NodeList={host}",
                # slurmd refuses a launch whose credential dates from the same second as the last attempt's
                # revoked one ("already killed, do not launch batch job"): a quick restart waits two seconds.
                "StartTime=now" if time.time() - job.ended_at >= RELAUNCH_GAP_S else f"StartTime=now+{RELAUNCH_GAP_S}",
            ]
        )
        run_slurm(["scontrol", "release", job.slurm_id])
        return True

    def _rejected(self, spec: LaunchSpec, host: str, gres: str, launched: float, exc: SlurmCommandError) -> _Handle:
        reason = first_line(exc.output) or exc.message
        with open(spec.channel / LOG_FILE, "a") as log:
            log.write(f"slurm rejected the job: {reason}\n")
        handle = _Handle(None, spec, "rejected", host, gres, launched, code=1, state="REJECTED")
        self._ended.append(handle)
        return handle

    # ------------------------------------------------------------------ watch
    def _query(self, ids: list[str]) -> dict[str, tuple[str, str]]:
        """(state, reason) of the jobs Slurm still knows, from squeue."""
        found: dict[str, tuple[str, str]] = {}
        for i in range(0, len(ids), SQUEUE_CHUNK):
            chunk = ids[i : i + SQUEUE_CHUNK]
            ok, text = try_slurm(
                ["squeue", "--noheader", "--states=all", f"--jobs={','.join(chunk)}", "--format=%i|%T|%r"]
            )
            if not ok:
                if "Invalid job id" in text:
                    continue  # every job of the chunk is gone from the controller
                raise SlurmCommandError(f"`squeue` failed: {text}", command="squeue")
            for line in text.splitlines():
                parts = line.strip().split("|")
                # a heterogeneous job (a gang's uneven one) answers a row per component: its first's is the job's
                sid, _, component = parts[0].partition("+")
                if len(parts) == 3 and component in ("", "0"):
                    found[sid] = (parts[1], parts[2])
        return found

    def _state(self, sid: str) -> tuple[str, str]:
        """(state, reason) of one job now: GONE when Slurm forgot it, UNKNOWN when squeue did not answer."""
        try:
            return self._query([sid]).get(sid, ("GONE", ""))
        except SlurmCommandError as exc:
            return "UNKNOWN", exc.message

    def _refresh(self) -> None:
        now = time.time()
        if now - self._polled < self.options.poll_interval or not self._live:
            return
        self._polled = now
        try:
            found = self._query(list(self._live))
        except SlurmCommandError:
            return  # the controller did not answer this time: keep the last states (report_timeout bounds it)
        for sid in self._live:
            self._states[sid] = found.get(sid, ("GONE", ""))

    def exit_code(self, handle: _Handle) -> int | None:
        if handle.code is not None:
            return handle.code
        if handle.lead is not None:
            return self._follow(handle)
        self._refresh()
        sid = handle.submitted.slurm_id
        state, reason = self._states.get(sid, ("PENDING", ""))
        handle.state = state
        if state in ACTIVE:
            if handle.running_at is None and state == "RUNNING":
                handle.running_at = time.time()
            return None
        if state in WAITING:
            if handle.running_at is not None and not handle.held:  # Slurm requeued it itself (node failure)
                # Cancelled, and started again as a new job when the policy says: the requeue revoked the old run's
                # credential on its node, and slurmd refuses a launch of the same job id whose credential does not
                # postdate that ("already killed, do not launch batch job": the job then FAILS), which a node still
                # completing the old run makes likely (tried by hand); a new job id has nothing revoked.
                try_slurm(["scancel", sid])
                if not handle.gang:
                    self._jobs.pop((handle.spec.job_id, handle.spec.copy, handle.spec.rank), None)
                why = reason if reason and reason != "None" else "no reason given"
                handle.requeued = f"slurm requeued job {sid} by itself ({why})"
                self._finish(handle, -9, handle.requeued)
            return handle.code
        self._finish(handle, *self._final_code(sid, state))
        return handle.code

    def _final_code(self, sid: str, state: str) -> tuple[int, str]:
        """The exit status Slurm recorded, and a note for the worker's log unless it completed."""
        if state == "COMPLETED":  # Slurm's word for exit status 0
            return 0, ""
        ok, text = try_slurm(["scontrol", "show", "job", "--oneliner", sid])
        first = text.splitlines()[0] if ok and text.strip() else ""  # a heterogeneous job's first component
        fields = dict(w.split("=", 1) for w in first.split() if "=" in w)
        if state == "GONE":
            state = fields.get("JobState", "GONE")
        status, _, signal = fields.get("ExitCode", "0:0").partition(":")
        code = -int(signal) if signal.isdigit() and int(signal) else int(status) if status.isdigit() else 0
        if state == "COMPLETED":
            return code, ""
        code = code or -9
        exit_code, reason = fields.get("ExitCode", "?"), fields.get("Reason", "?")
        note = f"slurm: job {sid} ended {state} (ExitCode={exit_code}, Reason={reason})"
        return code, note

    def _finish(self, handle: _Handle, code: int, note: str) -> None:
        handle.code = code
        handle.submitted.ended_at = time.time()
        sid = handle.submitted.slurm_id
        if note and not handle.stopping:
            with open(handle.spec.channel / LOG_FILE, "a") as log:
                log.write(note + "\n")
        self._live.pop(sid, None)
        self._ended.append(handle)

    def given_gpus(self, handle: _Handle) -> tuple[int, ...] | None:
        """A shared run's task: the GPU slots of its gpuweave node Slurm chose for its shards or GPUs (its job
        script writes ``SLURM_JOB_GPUS`` to the channel when it starts), once its job runs; None before, or for
        a task without GPUs."""
        if handle.given is not None or handle.spec.gpu_slots is None or not handle.spec.gpus:
            return handle.given
        try:
            text = (handle.spec.channel / GIVEN_GPUS).read_text().strip()
        except FileNotFoundError:
            return None
        try:
            indices = [int(x) for x in text.split(",") if x]
        except ValueError:
            return None  # written halfway (it is renamed into place; a foreign file): asked again at the next poll
        first = self._first_gpu.get(handle.spec.node, 0)
        handle.given = tuple(i - first for i in indices)
        return handle.given

    def lost_nodes(self) -> list[int]:
        """Cluster nodes whose Slurm node has left: DOWN, FAIL or NOT_RESPONDING (a dead slurmd, once Slurm's
        SlurmdTimeout has passed), or gone from ``scontrol show node``; read at most every ``NODE_CHECK_S`` while
        workers run. A draining node still runs its jobs: it is not lost. Each node is reported once."""
        now = time.monotonic()
        if not self._live or now - self._nodes_checked < NODE_CHECK_S:
            return []
        self._nodes_checked = now
        ok, text = try_slurm(["scontrol", "show", "node", "--oneliner"])
        if not ok:
            return []  # the controller did not answer: nothing is known lost
        states = {n.name: n.state.upper().replace("*", "").split("+") for n in parse_scontrol_text(text)}
        gone = {host for host in {slot.host for slot in self._slots.values()} if _left(states.get(host))}
        lost = sorted(i for i, slot in self._slots.items() if slot.host in gone and i not in self._lost_reported)
        self._lost_reported.update(lost)
        return lost

    def ended_by_cluster(self, handle: _Handle) -> str:
        return handle.lead.requeued if handle.lead is not None else handle.requeued

    # ------------------------------------------------------------------ signal
    def terminate(self, handle: _Handle) -> None:
        if handle.lead is not None:  # the lead's signal reaches every node's task
            self.terminate(handle.lead)
            return
        if handle.code is not None or handle.stopping:
            return
        handle.stopping = True
        sid = handle.submitted.slurm_id
        if self._state(sid)[0] in WAITING:
            try_slurm(["scontrol", "hold", sid])
            if self._state(sid)[0] in WAITING:
                handle.held = True
                self._finish(handle, 0, "")
                return
        # a gang's ranks are srun tasks: signal every step's tasks (srun, the batch step, ends when they have)
        try_slurm(["scancel", "--signal=TERM", sid] if handle.gang else ["scancel", "--batch", "--signal=TERM", sid])

    def kill(self, handle: _Handle) -> None:
        if handle.lead is not None:
            self.kill(handle.lead)
            self._follow(handle)
            return
        if handle.code is not None:
            return
        sid = handle.submitted.slurm_id
        state, reason = self._state(sid)
        note = f"slurm: job {sid} was still {state} (Reason={reason}) when gpuweave cancelled it"
        note = note if state in WAITING else ""  # a worker that never started: Slurm's reason is the story
        try_slurm(["scancel", sid] if state in WAITING else ["scancel", "--signal=KILL", sid])
        deadline = time.time() + KILL_WAIT_S
        while time.time() < deadline:
            state = self._state(sid)[0]
            if state not in ACTIVE + ("UNKNOWN",):
                break
            time.sleep(0.1)
        if state in WAITING:
            try_slurm(["scancel", sid])
        handle.state = state
        self._finish(handle, -9, note)

    # ------------------------------------------------------------------ end
    def close(self) -> None:
        """Cancel the workers' Slurm jobs still waiting (held after a stop, never started again); write slurm.csv."""
        waiting = [j.slurm_id for j in self._jobs.values()]
        try:
            states = self._query(waiting) if waiting else {}
        except SlurmCommandError:
            states = {}  # Slurm did not answer: nothing to cancel that we can see; slurm.csv is still written
        held = [sid for sid, (state, _) in states.items() if state in WAITING]
        if held:
            try_slurm(["scancel", *held])
        for handle in list(self._live.values()):
            self._ended.append(handle)
        self._live.clear()
        self._write_csv()

    def _write_csv(self) -> None:
        if not self.folder.exists():
            return
        with open(self.out / SLURM_CSV, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(SLURM_COLUMNS)
            for h in sorted(self._ended, key=lambda h: (h.spec.job_id, h.spec.attempt, h.spec.copy, h.spec.rank)):
                latency = f"{h.running_at - h.launched:.3f}" if h.running_at is not None else ""
                w.writerow(
                    [
                        h.spec.job_id,
                        h.spec.attempt,
                        h.spec.copy,
                        h.spec.rank,
                        h.job.slurm_id if h.job else "",
                        h.action,
                        h.host,
                        h.gres,
                        latency,
                        h.state,
                        "" if h.code is None else h.code,
                        int(h.stopping),
                        "" if h.given is None else ",".join(map(str, h.given)),
                    ]
                )

    def stats(self) -> dict[str, Any]:
        """Launch-to-RUNNING latency and the time spent in Slurm's commands, for summary.json."""
        latencies = sorted(h.running_at - h.launched for h in self._ended if h.running_at is not None)
        calls = {name: (len(v), sum(v)) for name, v in TIMINGS.items()}
        return {
            "slurm_launches": len(self._ended),
            "slurm_launch_to_running_p50_s": _pct(latencies, 50),
            "slurm_launch_to_running_p95_s": _pct(latencies, 95),
            "slurm_poll_interval_s": self.options.poll_interval,
            "slurm_command_calls": {k: n for k, (n, _) in sorted(calls.items())},
            "slurm_command_mean_s": {k: round(s / n, 5) for k, (n, s) in sorted(calls.items()) if n},
        }


def match_nodes(nodes: list[Node], slots: list[GpuSlot], hosts: dict[str, SlurmNode]) -> dict[int, GpuSlot]:
    """Cluster-config node index -> the Slurm slot it runs on; InputError before anything starts.

    A node named like a slot (``gw0-v100``, or ``gw0`` for a node with one GPU type) takes that slot; the others
    take, in Slurm's order, the first slot of their GPU model with enough GPUs left."""
    names = {s.name: s for s in slots} | {f"{s.host}-{s.slurm_type or 'gpu'}": s for s in slots}
    left = {(s.host, s.slurm_type): s.count for s in slots}
    offered = ", ".join(f"{s.host}: {s.slurm_type or 'gpu'} x{s.count} ({s.model})" for s in slots)
    chosen: dict[int, GpuSlot] = {}
    for node in sorted(nodes, key=lambda n: n.name not in names):
        slot = names.get(node.name)
        if slot is not None and slot.model != node.gpu_model:
            raise InputError(
                f"cluster node {node.name} has {node.gpu_model} GPUs, Slurm's {slot.host} has {slot.model} "
                f"({slot.slurm_type})",
                field="cluster",
            )
        if slot is None:
            slot = next(
                (s for s in slots if s.model == node.gpu_model and left[(s.host, s.slurm_type)] >= node.num_gpus), None
            )
        if slot is None or left[(slot.host, slot.slurm_type)] < node.num_gpus:
            raise InputError(
                f"cluster node {node.name} ({node.num_gpus} x {node.gpu_model}) has no Slurm GPUs left to run on "
                f"(Slurm offers {offered})",
                field="cluster",
            )
        left[(slot.host, slot.slurm_type)] -= node.num_gpus
        host = hosts[slot.host]
        if not host.healthy:
            reason = f", Reason={host.reason}" if host.reason else ""
            raise InputError(f"Slurm node {host.name} is {host.state}{reason}", field="cluster")
        chosen[node.index] = slot
    return chosen


def _left(state: list[str] | None) -> bool:
    """A Slurm node's state flags say it has left the cluster (None: it is gone from scontrol's list)."""
    return state is None or any(flag in state for flag in ("DOWN", "FAIL", "NOT_RESPONDING"))


def _write_attempt(folder: Path, spec: LaunchSpec, emulated: bool, addr: str, name: str = "attempt.sh") -> None:
    """The script the batch job (or a gang's srun task on one node) runs for this attempt (written to a temporary
    file, then renamed). ``addr``: the node's NodeAddr, where a gang's other nodes reach its ranks."""
    env = dict(spec.env)
    if emulated:
        env["CUDA_VISIBLE_DEVICES"] = ""  # Slurm's GPU indices name declared, not real, GPUs
    if addr:
        env[NODE_ADDR_ENV] = addr
    log = shlex.quote(str(spec.channel / LOG_FILE))
    program = " ".join(shlex.quote(a) for a in spec.argv)
    if name == "attempt.sh" and SIZES_ENV in env:
        # a gang on one node (its batch job's only script): an srun task per rank, as a gang over nodes has
        # (SlurmExecutor.launch_gang); --overcommit since the job holds one CPU per worker
        ranks = int(env[SIZES_ENV].split(",")[int(env.get(NODE_ENV, "0"))])
        each = shlex.quote(f'{LOCAL_ENV}=$SLURM_LOCALID exec "$@"')
        program = f"srun --overcommit --ntasks={ranks} --kill-on-bad-exit=1 /bin/sh -c {each} sh {program}"
    given = []
    if spec.gpu_slots is not None and spec.gpus:  # a shared run's task: which GPUs Slurm chose (given_gpus)
        path = shlex.quote(str(spec.channel / GIVEN_GPUS))
        given = [f'echo "$SLURM_JOB_GPUS" > {path}.tmp && mv {path}.tmp {path}']
    lines = [
        "#!/bin/sh",
        f"# gpuweave: {spec.label}, written before Slurm (re)started the job",
        *[f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())],
        *given,
        # once per node, not per rank
        f'[ "${{{LOCAL_ENV}:-0}}" = 0 ] && echo "slurm: job $SLURM_JOB_ID on $(hostname) '
        f'(restart ${{SLURM_RESTART_COUNT:-0}})" >> {log}',
        f"exec {program} >> {log} 2>&1",
    ]
    tmp = folder / f".{name}.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(folder / name)


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))], 4)


def shards_per_gpu(text: str) -> dict[tuple[str, str], int]:
    """(host, GPU type) -> Slurm shards per GPU from ``scontrol show node --oneliner``: each node's
    ``shard:TYPE:N`` (or untyped ``shard:N``) over its ``gpu:TYPE:M``. Nodes without shards are absent."""
    found: dict[tuple[str, str], int] = {}
    for line in text.splitlines():
        host = re.search(r"NodeName=(\S+)", line)
        gres = re.search(r"\bGres=(\S+)", line)
        if host is None or gres is None:
            continue
        gpus: dict[str, int] = {}
        shards: dict[str, int] = {}
        for entry in gres.group(1).split(","):
            parts = entry.split("(")[0].split(":")
            if parts[0] in ("gpu", "shard") and len(parts) in (2, 3) and parts[-1].isdigit():
                (gpus if parts[0] == "gpu" else shards)[parts[1] if len(parts) == 3 else ""] = int(parts[-1])
        for kind, count in shards.items():
            if gpus.get(kind):
                found[(host.group(1), kind)] = count // gpus[kind]
    return found
