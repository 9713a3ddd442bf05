"""The ``local`` executor: one subprocess per worker on this machine.

Every declared node lives here. ``CUDA_VISIBLE_DEVICES`` is set from the placement: the node's GPU slots
``0..num_gpus-1`` are handed out to its workers; when NVML sees at least that many GPUs the ids are real and the
workers are not paced, otherwise the GPUs are emulated (``CUDA_VISIBLE_DEVICES`` empty, steps paced). A slot
comes back when its worker has exited, not when it is asked to stop: :meth:`LocalExecutor.can_launch` says whether
a node has the slots a launch needs, and :meth:`LocalExecutor.launch` refuses to start a worker short of them.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass

from gpuweave.hardware.cluster_spec import Node
from gpuweave.live.executor import LOG_FILE, Executor, LaunchSpec


def nvml_gpu_count() -> int:
    """GPUs NVML sees on this machine (0 without the NVML library or a driver)."""
    try:
        import pynvml  # optional: only machines with NVIDIA drivers have it

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no library, no driver, no device: all mean "no GPUs here"
        return 0


@dataclass(slots=True)
class _Proc:
    popen: subprocess.Popen[bytes]
    node: int
    slots: list[int]
    released: bool = False


class LocalExecutor(Executor["_Proc"]):
    name = "local"

    def __init__(self) -> None:
        self._free: dict[int, list[int]] = {}
        self._held: list[_Proc] = []  # workers whose GPU slots are not yet back in _free
        self._real_gpus = nvml_gpu_count()
        self.emulated = True

    def check_cluster(self, nodes: list[Node]) -> None:
        self._free = {n.index: list(range(n.num_gpus)) for n in nodes}
        self.emulated = not (len(nodes) == 1 and self._real_gpus >= nodes[0].num_gpus)

    def launch(self, spec: LaunchSpec) -> _Proc:
        free = self._free[spec.node]
        if len(free) < spec.gpus:  # the runtime asks can_launch first: a worker short of GPUs would run on the CPU
            raise RuntimeError(f"{spec.label}: node {spec.node_name} has {len(free)} free GPU(s), asked {spec.gpus}")
        slots, self._free[spec.node] = free[: spec.gpus], free[spec.gpus :]
        env = dict(os.environ, **spec.env)
        env["CUDA_VISIBLE_DEVICES"] = "" if self.emulated else ",".join(map(str, slots))
        spec.channel.mkdir(parents=True, exist_ok=True)
        with open(spec.channel / LOG_FILE, "ab") as log:
            popen = subprocess.Popen(
                list(spec.argv),
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        handle = _Proc(popen, spec.node, slots)
        self._held.append(handle)
        return handle

    def can_launch(self, node: int, gpus: int) -> bool:
        if len(self._free[node]) < gpus:
            for handle in list(self._held):  # a worker that has exited since the last poll gives its slots back
                self.exit_code(handle)
        return len(self._free[node]) >= gpus

    def exit_code(self, handle: _Proc) -> int | None:
        code = handle.popen.poll()
        if code is not None and not handle.released:
            handle.released = True
            self._free[handle.node] = sorted(self._free[handle.node] + handle.slots)
            self._held.remove(handle)
        return code

    def terminate(self, handle: _Proc) -> None:
        if handle.popen.poll() is None:
            handle.popen.send_signal(signal.SIGTERM)

    def kill(self, handle: _Proc) -> None:
        if handle.popen.poll() is None:
            handle.popen.kill()
        handle.popen.wait()
        self.exit_code(handle)

    def pid(self, handle: _Proc) -> int | None:
        return handle.popen.pid
