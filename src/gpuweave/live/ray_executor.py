"""The ``ray`` executor: each cluster node is a Ray node; a worker is a process started by a Ray actor there.

Placement: when the Ray cluster labels its nodes with ``gpuweave_node:<name>`` resources (the local Ray this
executor starts without ``--address`` does), an actor asks for that resource; otherwise cluster nodes are matched,
in order, to Ray nodes that offer ``gpu_type:<MODEL>`` resources and the actor is pinned there by node affinity.
Either way it also asks for ``gpu_type:<MODEL>`` and, where the node has them, Ray GPUs, whose ids become the
worker's ``CUDA_VISIBLE_DEVICES``. A local Ray is bound to 127.0.0.1 with the dashboard off and stopped at the
end. Progress travels through the channel files, so workers and runtime share a filesystem.
"""

from __future__ import annotations

import os
import signal
import subprocess

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from gpuweave.errors import InputError
from gpuweave.live.executor import LOG_FILE, Executor, LaunchSpec

NODE_LABEL = "gpuweave_node:"
TYPE_LABEL = "gpu_type:"


@ray.remote(num_cpus=0, max_concurrency=4)
class WorkerHost:
    """Runs one worker process on its Ray node; ``wait`` returns its exit status."""

    def __init__(self, argv: list[str], env: dict[str, str], log: str, use_gpu_ids: bool) -> None:
        env = dict(os.environ, **env)
        ids = ray.get_gpu_ids() if use_gpu_ids else []
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in ids)
        with open(log, "ab") as fh:
            self.proc = subprocess.Popen(
                argv, env=env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )

    def wait(self) -> int:
        return self.proc.wait()

    def signal(self, signum: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, address: str | None, *, ray_nodes: list[dict] | None = None) -> None:
        self.address = address
        self.started_ray = False
        self._nodes = ray_nodes
        self._target: dict[int, dict] = {}
        self.emulated = True

    def _connect(self, nodes: list) -> None:
        if ray.is_initialized():
            return
        if self.address is None:
            resources = {f"{NODE_LABEL}{n.name}": n.num_gpus for n in nodes}
            for n in nodes:
                key = f"{TYPE_LABEL}{n.gpu_model}"
                resources[key] = resources.get(key, 0) + n.num_gpus
            ray.init(
                _node_ip_address="127.0.0.1",
                include_dashboard=False,
                resources=resources,
                num_gpus=0,
                logging_level="ERROR",
                log_to_driver=False,
            )
            self.started_ray = True
            return
        try:
            ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)
        except Exception as exc:  # Ray raises several types for an address it cannot reach
            raise InputError(
                f"cannot reach the Ray cluster at {self.address}: {exc}".splitlines()[0], field="address"
            ) from None

    def check_cluster(self, nodes: list) -> None:
        self._connect(nodes)
        alive = [n for n in ray.nodes() if n.get("Alive")]
        labelled = {k[len(NODE_LABEL) :] for n in alive for k in n["Resources"] if k.startswith(NODE_LABEL)}
        by_type: dict[str, list[dict]] = {}
        for n in alive:
            for key in n["Resources"]:
                if key.startswith(TYPE_LABEL):
                    by_type.setdefault(key[len(TYPE_LABEL) :], []).append(n)
        used: dict[str, int] = {}
        for node in nodes:
            if node.name in labelled:
                self._target[node.index] = {"label": node.name, "gpus": False}
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
            self._target[node.index] = {"node_id": ray_node["NodeID"], "gpus": ray_node["Resources"].get("GPU", 0) > 0}

    def launch(self, spec: LaunchSpec):
        target = self._target[spec.node]
        options: dict = {"resources": {f"{TYPE_LABEL}{spec.gpu_model}": spec.gpus}}
        if "label" in target:
            options["resources"][f"{NODE_LABEL}{target['label']}"] = spec.gpus
        else:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(target["node_id"], soft=False)
            if target["gpus"]:
                options["num_gpus"] = spec.gpus
        spec.channel.mkdir(parents=True, exist_ok=True)
        actor = WorkerHost.options(**options).remote(
            list(spec.argv), spec.env, str(spec.channel / LOG_FILE), bool(target["gpus"]) and not self.emulated
        )
        return [actor, actor.wait.remote(), None]

    def exit_code(self, handle) -> int | None:
        if handle[2] is None:
            ready, _ = ray.wait([handle[1]], timeout=0)
            if ready:
                try:
                    handle[2] = ray.get(ready[0])
                except ray.exceptions.RayError:  # the actor or its node died: a crash
                    handle[2] = -9
                ray.kill(handle[0])
        return handle[2]

    def terminate(self, handle) -> None:
        if handle[2] is None:
            handle[0].signal.remote(signal.SIGTERM)

    def kill(self, handle) -> None:
        if handle[2] is None:
            try:
                ray.get(handle[0].signal.remote(signal.SIGKILL), timeout=10)
            except ray.exceptions.RayError:
                pass
            try:
                handle[2] = ray.get(handle[1], timeout=10)
            except ray.exceptions.RayError:
                handle[2] = -9
            ray.kill(handle[0])

    def close(self) -> None:
        if self.started_ray:
            ray.shutdown()
