"""The ``ray`` executor: each cluster node is a Ray node; a worker is a process started by a Ray task there.

Placement: when the Ray cluster labels its nodes with ``gpuweave_node:<name>`` resources (the local Ray this
executor starts without ``--address`` does), a task asks for that resource; otherwise cluster nodes are matched,
in order, to Ray nodes that offer ``gpu_type:<MODEL>`` resources and the task is pinned there by node affinity.
Either way it also asks for ``gpu_type:<MODEL>`` and, where the node has them, Ray GPUs, whose ids become the
worker's ``CUDA_VISIBLE_DEVICES``. A task of a shared run (a share of one GPU, :mod:`gpuweave.cluster.sharing.ledger`)
asks for its share of each (Ray's fractional ``num_gpus`` and custom resources: 0.46 for a 460-milli task, none for
a CPU-only one), and the GPU the book's ledger chose, not Ray's id, becomes its ``CUDA_VISIBLE_DEVICES`` (Ray
accounts fractions per GPU but cannot be told which GPU; the ledger is what the placement decided). A local Ray also
declares one ``gpuweave_gpu:<node>/<slot>`` resource per GPU, so Ray itself never runs more than a whole of any GPU.

A gang (a job of several ranks, :mod:`gpuweave.live.gang`) runs as one actor per rank (:class:`RankActor`, as Ray
Train's worker group) in one placement group whose bundles follow the policy's placement: one bundle per rank,
holding that rank's GPU on its node, so Ray reserves the whole gang at once or none of it. Each actor runs its rank
through a gang agent of one rank (``GPUWEAVE_GANG_LOCAL``: torchrun's environment, the rendezvous, the failure
record); where Ray hands out real GPUs, every rank of a node sees all of that node's ranks' GPUs in
``CUDA_VISIBLE_DEVICES``, in local-rank order, as torchrun's ranks do (``cuda:LOCAL_RANK`` is its own). A rank that
fails ends its node's other ranks (their actors are killed) and gives the node's worker its status; a worker that
ended frees its actors, and the gang's last one its placement group. A job of one rank (and a shared run's task)
is a Ray task instead: a task reuses the node's pooled Python workers (a launch costs a few milliseconds once the
pool is warm), an actor gets a fresh one (about 0.7 s here), which a gang pays once per rank, in parallel.

Neither tasks nor a rank's actor are called while they run, so the runtime's signals travel as request files in
the worker's channel directory (shared filesystem, as for progress), polled every ``CONTROL_POLL_S``. The worker
process dies with its Ray worker (Linux ``PR_SET_PDEATHSIG``), so a lost node leaves no stray worker writing
checkpoints.

A Ray node that disappears is reported by :meth:`RayExecutor.lost_nodes` (its tasks fail and GCS lists it dead);
the runtime sends its jobs back to the queue from their last checkpoint. A local Ray (no ``--address``) listens
on 127.0.0.1 only (every Ray process binds the loopback address; see :mod:`gpuweave.local_ray`), dashboard off.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy

from gpuweave.errors import InputError
from gpuweave.live.executor import LOG_FILE, Executor, LaunchSpec
from gpuweave.live.gang import GANG_JOIN_TIMEOUT_S, LOCAL_ENV, NODE_ADDR_ENV, SIZES_ENV, die_with_parent
from gpuweave.local_ray import join_ray, start_local_ray

if TYPE_CHECKING:
    from gpuweave.hardware.cluster_spec import Node

NODE_LABEL = "gpuweave_node:"
TYPE_LABEL = "gpu_type:"
GPU_LABEL = "gpuweave_gpu:"  # one per GPU of a local Ray: <node name>/<slot>, 1 each (shares are asked of it)
STOP_REQUEST = "stop-request"  # the task sends SIGTERM: checkpoint and exit
KILL_REQUEST = "kill-request"  # the task sends SIGKILL
CONTROL_POLL_S = 0.05
NODE_CHECK_S = 1.0  # seconds between reads of GCS's node table (lost_nodes)
KILL_WAIT_S = 10.0
#: seconds a task that died with its Ray worker waits for GCS to say whether its node died too: a raylet killed on
#: its own takes its workers at once but is declared dead only after missed health checks (Ray's defaults: 5 x 3 s;
#: the testbed's: 3 x 1 s). Dead by then: the node was lost (no crash counted); alive: the worker crashed.
NODE_VERDICT_S = 20.0


@ray.remote(num_cpus=0, max_retries=0)
def run_worker(argv: list[str], env: dict[str, str], channel: str, use_gpu_ids: bool, visible: str | None) -> int:
    """Run one worker process to its end on this Ray node (a Ray task); forward the runtime's stop/kill requests.
    ``visible`` (a shared run's GPUs) replaces Ray's GPU ids when the worker uses GPUs."""
    ids = visible if visible is not None else ",".join(str(i) for i in ray.get_gpu_ids())
    return _run_process(argv, env, Path(channel), ids if use_gpu_ids else "")


@ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)
class RankActor:
    """One rank of a gang (module docstring): :meth:`run` starts the rank's one-rank gang agent and waits for it."""

    def run(self, argv: list[str], env: dict[str, str], channel: str, use_gpu_ids: bool, ranks: int) -> int:
        """Run rank ``env[LOCAL_ENV]`` of the node's ``ranks`` to its end. With GPUs, each rank first writes its Ray
        GPU ids to the node's channel and waits for its node's other ranks' (``gpus-<local>``): every rank then sees
        them all, in local-rank order."""
        folder = Path(channel)
        visible = ""
        if use_gpu_ids:
            own = ",".join(str(i) for i in ray.get_gpu_ids())
            local = int(env[LOCAL_ENV])
            tmp = folder / f".gpus-{local}"
            tmp.write_text(own)
            tmp.replace(folder / f"gpus-{local}")
            deadline = time.monotonic() + GANG_JOIN_TIMEOUT_S
            while True:
                found = [folder / f"gpus-{j}" for j in range(ranks)]
                if all(path.exists() for path in found):
                    visible = ",".join(filter(None, (path.read_text() for path in found)))
                    break
                if time.monotonic() > deadline:
                    return 1  # a peer's actor never started: the gang fails and the runtime starts it again
                time.sleep(CONTROL_POLL_S)
        return _run_process(argv, env, folder, visible)


def _run_process(argv: list[str], env: dict[str, str], folder: Path, visible: str) -> int:
    """Run one worker process to its end, its output appended to the channel's log, with ``visible`` as its
    ``CUDA_VISIBLE_DEVICES``; forward the runtime's stop/kill requests (files in ``folder``)."""
    env = dict(os.environ, **env)
    # where this node's ranks are reached by the gang's other nodes
    env.setdefault(NODE_ADDR_ENV, ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]  # unannotated
    env["CUDA_VISIBLE_DEVICES"] = visible
    with open(folder / LOG_FILE, "ab") as log:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    stopped = False
    while True:
        try:
            return proc.wait(timeout=CONTROL_POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if (folder / KILL_REQUEST).exists():
            os.killpg(proc.pid, signal.SIGKILL)
        elif not stopped and (folder / STOP_REQUEST).exists():
            stopped = True
            # to the worker alone, as the local executor does: a gang's agent forwards it to its ranks, and a rank
            # signalled twice could take the second while its interpreter exits, when SIGTERM kills again
            proc.send_signal(signal.SIGTERM)


@dataclass(slots=True)
class _Target:
    """Where a cluster node's workers go: a labelled local Ray, or a Ray node pinned by id."""

    label: str = ""
    node_id: str = ""
    gpus: bool = False  # the Ray node offers Ray GPUs
    ip: str = ""  # the Ray node's address (its ``node:<ip>`` resource pins a placement group's bundle there)


@dataclass(slots=True)
class _Gang:
    """The placement group that reserved a gang's bundles at once; removed when its last worker has ended."""

    group: PlacementGroup
    open: int  # workers not yet ended


@dataclass(slots=True)
class _RayWorker:
    """A cluster node's worker: one Ray task, or a gang's ranks on the node (one actor each)."""

    refs: list[ray.ObjectRef[int]]  # the task's result, or each rank's
    channel: Path
    node: int  # cluster node index
    code: int | None = None
    gang: _Gang | None = None
    failed_at: float | None = None  # monotonic time its task died with its Ray worker (its node's fate unknown yet)
    actors: list[Any] = field(default_factory=list)  # the ranks' actors (none for a task)
    codes: list[int | None] = field(default_factory=list)  # each rank's exit status, once it ended


class RayExecutor(Executor["_RayWorker"]):
    name = "ray"
    shares_gpus = True

    def __init__(self, address: str | None) -> None:
        self.address = address
        self.started_ray = False
        self._target: dict[int, _Target] = {}
        self._lost: set[int] = set()  # cluster nodes found dead, not yet reported
        self._reported: set[int] = set()
        self._pinned = False  # some cluster node is a Ray node of its own (pinned by id): its liveness is watched
        self._checked = 0.0  # monotonic time of the last read of GCS's node table
        self._alive: set[str] = set()  # the Ray node ids alive at that read
        self.emulated = True

    def _connect(self, nodes: list[Node]) -> None:
        if ray.is_initialized():
            return
        if self.address is None:
            self._start_local_ray(nodes)
            return
        # bounded: a closed port, or one that is not Ray, is one InputError naming the address (gpuweave.local_ray)
        join_ray(self.address, logging_level="ERROR", log_to_driver=False)

    def _start_local_ray(self, nodes: list[Node]) -> None:
        """One Ray node on this machine, labelled with every cluster node, reachable from this machine only."""
        resources = {f"{NODE_LABEL}{n.name}": n.num_gpus for n in nodes}
        for n in nodes:
            key = f"{TYPE_LABEL}{n.gpu_model}"
            resources[key] = resources.get(key, 0) + n.num_gpus
            resources.update({f"{GPU_LABEL}{n.name}/{slot}": 1 for slot in range(n.num_gpus)})
        start_local_ray(resources=resources, num_gpus=0, logging_level="ERROR", log_to_driver=False)
        self.started_ray = True

    def check_cluster(self, nodes: list[Node]) -> None:
        self._connect(nodes)
        alive = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]  # ray.nodes is unannotated
        labelled = {k[len(NODE_LABEL) :] for n in alive for k in n["Resources"] if k.startswith(NODE_LABEL)}
        by_type: dict[str, list[dict[str, Any]]] = {}
        for n in alive:
            for key in n["Resources"]:
                if key.startswith(TYPE_LABEL):
                    by_type.setdefault(key[len(TYPE_LABEL) :], []).append(n)
        used: dict[str, int] = {}
        for node in nodes:
            if node.name in labelled:
                self._target[node.index] = _Target(label=node.name)
                continue
            candidates = by_type.get(node.gpu_model, [])
            i = used.get(node.gpu_model, 0)
            if i >= len(candidates):
                raise InputError(
                    f"the Ray cluster lacks GPU type {node.gpu_model} for node {node.name} "
                    f"(it offers {', '.join(sorted(by_type)) or 'no gpu_type:* resources'})",
                    field="cluster",
                )
            used[node.gpu_model] = i + 1
            ray_node = candidates[i]
            self._pinned = True
            self._target[node.index] = _Target(
                node_id=ray_node["NodeID"],
                gpus=ray_node["Resources"].get("GPU", 0) > 0,
                ip=str(ray_node.get("NodeManagerAddress", "")),
            )

    def _request(self, spec: LaunchSpec) -> dict[str, Any]:
        """The Ray options of ``spec``'s task: its resources (zeros left out) and where it may run."""
        target = self._target[spec.node]
        amount = spec.gpu_amount  # whole GPUs, or a shared run's share of them (0 for a CPU-only task)
        resources: dict[str, float] = {f"{TYPE_LABEL}{spec.gpu_model}": amount}
        options: dict[str, Any] = {}
        if target.label:
            resources[f"{NODE_LABEL}{target.label}"] = amount
            if spec.gpu_slots is not None:  # the local Ray's per-GPU resources: Ray, too, keeps each GPU whole
                resources.update({f"{GPU_LABEL}{target.label}/{slot}": spec.gpu_share for slot in spec.gpu_slots})
        else:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(target.node_id, soft=False)
            if target.gpus and amount > 0:
                options["num_gpus"] = amount  # fractional for a share of one GPU
        options["resources"] = {key: value for key, value in resources.items() if value > 0}
        return options

    def _submit(self, spec: LaunchSpec, options: dict[str, Any]) -> _RayWorker:
        target = self._target[spec.node]
        spec.channel.mkdir(parents=True, exist_ok=True)
        visible = None if spec.gpu_slots is None else ",".join(map(str, spec.gpu_slots))
        ref = run_worker.options(**options).remote(
            list(spec.argv), spec.env, str(spec.channel), target.gpus and not self.emulated, visible
        )
        return _RayWorker([ref], spec.channel, spec.node, codes=[None])

    def launch(self, spec: LaunchSpec) -> _RayWorker:
        return self._submit(spec, self._request(spec))

    def launch_gang(self, specs: list[LaunchSpec]) -> list[_RayWorker]:
        """A gang: one actor per rank, in one placement group of one bundle per rank (what its node's worker asks,
        split over the node's ranks; pinned to that node by its label or its ``node:<ip>`` resource), so Ray
        reserves the whole gang at once or none of it. Ray nodes sharing an address (several on one host) cannot be
        told apart by ``node:<ip>``: their ranks' actors are pinned by node affinity instead, without a group. A
        job of one rank is a task (:meth:`launch`)."""
        if SIZES_ENV not in specs[0].env:
            return [self.launch(spec) for spec in specs]
        sizes = [int(x) for x in specs[0].env[SIZES_ENV].split(",")]
        targets = [self._target[spec.node] for spec in specs]
        ips = [t.ip for t in targets if not t.label]
        grouped = not ips or (len(set(ips)) == len(ips) and all(ips))
        ranks: list[tuple[int, dict[str, Any]]] = []  # (worker index, the rank's Ray options)
        bundles = []
        for index, (spec, target) in enumerate(zip(specs, targets)):
            request = self._request(spec)
            count = sizes[spec.rank]
            each = {key: value / count for key, value in request["resources"].items()}
            gpus = request.get("num_gpus", 0) / count
            for _ in range(count):
                options: dict[str, Any] = {"resources": each, **({"num_gpus": gpus} if gpus else {})}
                if grouped:
                    bundle = dict(each, **({"GPU": gpus} if gpus else {}))
                    if not target.label:
                        bundle[f"node:{target.ip}"] = 0.001
                    bundles.append(bundle)
                elif "scheduling_strategy" in request:
                    options["scheduling_strategy"] = request["scheduling_strategy"]
                ranks.append((index, options))
        gang = _Gang(placement_group(bundles, strategy="SPREAD"), open=len(specs)) if grouped else None
        workers = []
        for index, (spec, target) in enumerate(zip(specs, targets)):
            spec.channel.mkdir(parents=True, exist_ok=True)
            worker = _RayWorker([], spec.channel, spec.node, gang=gang)
            mine = [(b, options) for b, (i, options) in enumerate(ranks) if i == index]
            for local, (slot, options) in enumerate(mine):
                if gang is not None:
                    options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(gang.group, slot)
                actor = RankActor.options(**options).remote()  # type: ignore[attr-defined]  # ray.remote class
                env = dict(spec.env, **{LOCAL_ENV: str(local)})
                use_gpus = target.gpus and not self.emulated
                worker.actors.append(actor)
                worker.refs.append(actor.run.remote(list(spec.argv), env, str(spec.channel), use_gpus, len(mine)))
                worker.codes.append(None)
            workers.append(worker)
        return workers

    def _ended(self, handle: _RayWorker) -> None:
        """A worker is over: its ranks' actors go (a failed rank's peers on the node with them), and its gang's
        placement group with the gang's last worker."""
        for actor in handle.actors:
            ray.kill(actor, no_restart=True)
        handle.actors = []
        gang, handle.gang = handle.gang, None
        if gang is not None:
            gang.open -= 1
            if gang.open == 0:
                remove_placement_group(gang.group)

    def exit_code(self, handle: _RayWorker) -> int | None:
        if handle.code is None:
            self._collect(handle, timeout=0)
        return handle.code

    def undecided(self, handle: _RayWorker) -> bool:
        return handle.code is None and handle.failed_at is not None

    def _collect(self, handle: _RayWorker, timeout: float) -> None:
        """The results of the worker's task or ranks that ended within ``timeout`` s. The worker's status: the first
        failed rank's (its node's other ranks are then ended), else 0 once every rank is done; a task or rank that
        died with its Ray node or worker reads as killed (-9)."""
        pending = [ref for ref, code in zip(handle.refs, handle.codes) if code is None]
        if not pending:
            return
        ready, _ = ray.wait(pending, num_returns=len(pending), timeout=timeout)
        lost = False
        for ref in ready:
            index = handle.refs.index(ref)
            try:
                handle.codes[index] = ray.get(ref)
            except ray.exceptions.RayError:
                lost = True
        if lost:
            now = time.monotonic()
            handle.failed_at = handle.failed_at or now
            watched = bool(self._target[handle.node].node_id)  # a node of unknown id has no verdict to wait for
            if not self._note_if_lost(handle.node) and watched and now - handle.failed_at < NODE_VERDICT_S:
                return  # undecided: GCS may yet declare its node dead (NODE_VERDICT_S)
            handle.code = -9
        else:
            failed = [code for code in handle.codes if code not in (None, 0)]
            if failed:
                handle.code = failed[0]
            elif all(code == 0 for code in handle.codes):
                handle.code = 0
            else:
                return
        self._ended(handle)

    def _alive_nodes(self) -> set[str]:
        """The Ray node ids GCS lists alive, read at most every ``NODE_CHECK_S``."""
        now = time.monotonic()
        if now - self._checked >= NODE_CHECK_S:
            self._checked = now
            self._alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}  # type: ignore[no-untyped-call]  # ray.nodes is unannotated
        return self._alive

    def _note_if_lost(self, node: int) -> bool:
        """Whether ``node``'s Ray node is dead (its cluster nodes are then noted lost)."""
        target = self._target[node]
        if node in self._reported:
            return True
        if not target.node_id or target.node_id in self._alive_nodes():
            return False
        self._lost.update(i for i, t in self._target.items() if t.node_id == target.node_id)
        return True

    def lost_nodes(self) -> list[int]:
        """Nodes Ray has declared dead since the last call. Besides a task that failed with its node, GCS's node
        table is read at most every ``NODE_CHECK_S``: a node cut off from the network takes the tasks it ran out of
        reach without failing them at their owner (seen on a testbed: nothing for 120 s, while GCS had declared
        the node dead after about 7 s of missed health checks)."""
        if self._pinned:
            alive = self._alive_nodes()
            self._lost.update(i for i, t in self._target.items() if t.node_id and t.node_id not in alive)
        lost = sorted(self._lost - self._reported)
        self._reported.update(lost)
        self._lost.clear()
        return lost

    def terminate(self, handle: _RayWorker) -> None:
        if handle.code is None:
            (handle.channel / STOP_REQUEST).touch()

    def kill(self, handle: _RayWorker) -> None:
        if handle.code is not None:
            return
        gone = handle.node in self._reported or handle.node in self._lost  # its node is gone: nothing will answer
        if not gone and not handle.actors:
            (handle.channel / KILL_REQUEST).touch()
            deadline = time.time() + KILL_WAIT_S
            while handle.code is None and time.time() < deadline:
                self._collect(handle, timeout=CONTROL_POLL_S * 4)
        if handle.code is None:  # a gang's ranks (their actors are killed), or a task that never answered
            refs, actors = handle.refs, bool(handle.actors)
            for ref in refs if not actors else ():
                ray.cancel(ref, force=True)
            handle.code = -9
            self._ended(handle)
            if actors and not gone:  # the ranks end with their actors' processes (PR_SET_PDEATHSIG): wait for that
                ray.wait(refs, num_returns=len(refs), timeout=KILL_WAIT_S)

    def close(self) -> None:
        if self.started_ray:
            ray.shutdown()
