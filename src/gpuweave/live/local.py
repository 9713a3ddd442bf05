"""The ``local`` executor: one subprocess per worker on this machine.

Every declared node lives here, on this host's network, or each in its own network namespace
(``executor.local.namespaces``, e.g. a ``gpuweave testbed`` cluster's: the worker runs under ``ip netns exec`` and
its gang's traffic crosses the namespaces' links). ``CUDA_VISIBLE_DEVICES`` is set from the placement: the node's
GPU slots ``0..num_gpus-1`` are handed out to its workers; when NVML sees at least that many GPUs the ids are real
and the workers are not paced, otherwise the GPUs are emulated (``CUDA_VISIBLE_DEVICES`` empty, steps paced). A slot
comes back when its worker has exited, not when it is asked to stop: :meth:`LocalExecutor.can_launch` says whether
a node has the slots a launch needs, and :meth:`LocalExecutor.launch` refuses to start a worker short of them.

A job whose attributes carry :data:`LIMITS_ATTR` (the service sets it for every job of a user who is not an admin)
runs under :class:`WorkerLimits`: the kernel's ``RLIMIT_DATA`` (heap and every private writable mapping, what
``malloc``, numpy and PyTorch allocate; unlike ``RLIMIT_AS`` it leaves CUDA's address-space reservations alone)
and ``RLIMIT_CPU`` (CPU seconds; SIGXCPU at the limit, SIGKILL 5 s of CPU later) are set in the worker before its
program starts, by a small exec wrapper (a ``preexec_fn`` is unsafe in a process with threads, as the service is).
A worker that ends on such a limit gets a last line in its log naming it (``gpuweave: memory limit 2 GiB (service
quota) exceeded``), which is how the attempt's crash reason, and the job's failure reason, say so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuweave.errors import InputError
from gpuweave.hardware.cluster_spec import Node
from gpuweave.live.executor import LOG_FILE, Executor, LaunchSpec
from gpuweave.live.gang import LOOPBACK, NODE_ADDR_ENV


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


def namespace_address(namespace: str) -> str:
    """The first IPv4 address (not loopback) of network namespace ``namespace``; InputError when it has none."""
    try:
        out = subprocess.run(
            ["ip", "-n", namespace, "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(
            f"cannot read network namespace {namespace!r} ({exc}); `ip netns list` shows the namespaces "
            "(`gpuweave testbed up` makes some)",
            field="executor.local.namespaces",
        ) from None
    for line in out.splitlines():
        words = line.split()
        if "inet" in words:
            addr = words[words.index("inet") + 1].split("/")[0]
            if not addr.startswith("127."):
                return addr
    raise InputError(f"network namespace {namespace!r} has no IPv4 address", field="executor.local.namespaces")


#: the job attribute that holds a worker's :class:`WorkerLimits`
LIMITS_ATTR = "worker_limits"
#: CPU seconds between SIGXCPU (the soft limit: a worker may catch it and checkpoint) and SIGKILL (the hard limit)
CPU_GRACE_S = 5
#: what a failed allocation prints in Python, numpy, PyTorch and C++
_OUT_OF_MEMORY = ("MemoryError", "Cannot allocate memory", "can't allocate memory", "std::bad_alloc")
# Runs in the worker's process before its program (exec keeps the pid, so signals and kill reach the program).
_LIMITED = (
    "import os,resource,sys\n"
    "m,c=int(sys.argv[1]),int(sys.argv[2])\n"
    "if m: resource.setrlimit(resource.RLIMIT_DATA,(m,m))\n"
    f"if c: resource.setrlimit(resource.RLIMIT_CPU,(c,c+{CPU_GRACE_S}))\n"
    "os.execvp(sys.argv[3],sys.argv[3:])"
)


@dataclass(frozen=True, slots=True)
class WorkerLimits:
    """What one worker process may take on the host that runs it (None: no limit)."""

    memory_bytes: int | None = None
    cpu_seconds: int | None = None
    source: str = "service quota"  # who set them: named in the failure reason

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run under these limits (unchanged without any)."""
        if not (self.memory_bytes or self.cpu_seconds):
            return argv
        memory, cpu = self.memory_bytes or 0, self.cpu_seconds or 0
        return [sys.executable, "-I", "-S", "-c", _LIMITED, str(memory), str(cpu), *argv]

    def exceeded(self, code: int, log_tail: str) -> str | None:
        """The limit a worker that exited with ``code`` (its log ending in ``log_tail``) ran into, or None."""
        if code == 0:
            return None
        if self.cpu_seconds and code in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU):
            return f"CPU time limit {self.cpu_seconds:,} s ({self.source}) exceeded"
        if self.memory_bytes and any(text in log_tail for text in _OUT_OF_MEMORY):
            return f"memory limit {_size(self.memory_bytes)} ({self.source}) exceeded"
        return None


def _size(nbytes: int) -> str:
    gib = nbytes / 2**30
    return f"{gib:g} GiB" if gib >= 1 else f"{nbytes / 2**20:g} MiB"


def worker_limits(attrs: dict[str, Any]) -> WorkerLimits | None:
    limits = attrs.get(LIMITS_ATTR)
    return limits if isinstance(limits, WorkerLimits) else None


@dataclass(slots=True)
class _Proc:
    popen: subprocess.Popen[bytes]
    node: int
    slots: list[int]
    released: bool = False
    limits: WorkerLimits | None = None
    log: Path | None = None
    killed: bool = False  # ended by kill(): its SIGKILL is ours, not a CPU limit


class LocalExecutor(Executor["_Proc"]):
    name = "local"
    shares_gpus = True

    def __init__(self, namespaces: list[str] | None = None) -> None:
        self._free: dict[int, list[int]] = {}
        self._held: list[_Proc] = []  # workers whose GPU slots are not yet back in _free
        self._real_gpus = nvml_gpu_count()
        self.emulated = True
        self.namespaces = list(namespaces or [])
        self._addr: dict[int, str] = {}  # each node's address (loopback without namespaces)

    def check_cluster(self, nodes: list[Node]) -> None:
        self._free = {n.index: list(range(n.num_gpus)) for n in nodes}
        self.emulated = not (len(nodes) == 1 and self._real_gpus >= nodes[0].num_gpus)
        if not self.namespaces:
            self._addr = {n.index: LOOPBACK for n in nodes}
            return
        if len(self.namespaces) != len(nodes):
            raise InputError(
                f"executor.local.namespaces names {len(self.namespaces)} network namespace(s) for "
                f"{len(nodes)} node(s): give one per node, in node order",
                field="executor.local.namespaces",
            )
        self._addr = {n.index: namespace_address(ns) for n, ns in zip(nodes, self.namespaces)}

    def launch(self, spec: LaunchSpec) -> _Proc:
        free = self._free[spec.node]
        shared = spec.gpu_slots is not None  # a shared run: the book's ledger chose the GPUs and keeps their books
        if not shared and len(free) < spec.gpus:  # the runtime asks can_launch first: short of GPUs, it'd use the CPU
            raise RuntimeError(f"{spec.label}: node {spec.node_name} has {len(free)} free GPU(s), asked {spec.gpus}")
        if spec.gpu_slots is not None:
            slots, held = list(spec.gpu_slots), []  # several tasks may share a slot: nothing to hand back
        else:
            slots, self._free[spec.node] = free[: spec.gpus], free[spec.gpus :]
            held = slots
        env = dict(os.environ, **spec.env)
        env["CUDA_VISIBLE_DEVICES"] = "" if self.emulated else ",".join(map(str, slots))
        env[NODE_ADDR_ENV] = self._addr.get(spec.node, LOOPBACK)
        spec.channel.mkdir(parents=True, exist_ok=True)
        limits = worker_limits(spec.attrs)
        argv = limits.wrap(list(spec.argv)) if limits is not None else list(spec.argv)
        if self.namespaces:  # `ip netns exec` enters the namespace and execs the worker: the pid stays the worker's
            argv = ["ip", "netns", "exec", self.namespaces[spec.node], *argv]
        with open(spec.channel / LOG_FILE, "ab") as log:
            popen = subprocess.Popen(
                argv,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        handle = _Proc(popen, spec.node, held, limits=limits, log=spec.channel / LOG_FILE)
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
            if handle.limits is not None and not handle.killed:
                _note_limit(handle.limits, code, handle.log)
        return code

    def terminate(self, handle: _Proc) -> None:
        if handle.popen.poll() is None:
            handle.popen.send_signal(signal.SIGTERM)

    def kill(self, handle: _Proc) -> None:
        if handle.popen.poll() is None:
            handle.killed = True
            try:  # the worker's whole process group: a gang's node agent and its ranks
                os.killpg(handle.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        handle.popen.wait()
        self.exit_code(handle)

    def pid(self, handle: _Proc) -> int | None:
        return handle.popen.pid


def _note_limit(limits: WorkerLimits, code: int, log: Path | None) -> None:
    """Append the limit a worker ran into to its log: the last line, so the crash reason names it."""
    if log is None:
        return
    try:
        with open(log, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
            tail = f.read().decode(errors="replace")
        reason = limits.exceeded(code, tail)
        if reason is not None:
            with open(log, "a") as f:
                f.write(f"gpuweave: {reason}\n")
    except OSError:  # the channel is gone: the reason stays the exit status
        pass
