"""Gangs: a job's ranks on the nodes of its placement, started with the environment torchrun gives them.

Problem: a job of N GPUs placed on K nodes (``k_0 + ... + k_{K-1} = N``, uneven allowed) must run as N processes of
one ``torch.distributed`` process group, so that an existing torchrun-style script runs unchanged. The executor's
unit stays one process per node of the placement (:class:`~gpuweave.live.executor.LaunchSpec`); for a gang of more
than one rank that process is the *node agent* below (``python -m gpuweave.live.gang -- PROGRAM ...``), which does
what torchrun's agent does on its node:

1. rendezvous: node 0's agent takes its node's address (``GPUWEAVE_NODE_ADDR``, set by the executor; loopback by
   default) and a free port there, and writes both to the attempt's rendezvous file (the channel directory is shared
   by the runtime and every node, as for progress); the other agents wait for that file (``GANG_JOIN_TIMEOUT_S``);
2. starts the node's ``k_i`` ranks with torchrun's variables (:func:`rank_env`): ``RANK = k_0 + ... + k_{i-1} +
   LOCAL_RANK``, ``WORLD_SIZE = N``, ``LOCAL_WORLD_SIZE = k_i``, ``GROUP_RANK = i``, ``MASTER_ADDR``/``MASTER_PORT``
   from the rendezvous, and ``GLOO_SOCKET_IFNAME``/``NCCL_SOCKET_IFNAME`` naming the interface that holds the
   node's address (several network namespaces share one host name, so gloo cannot find its address from it);
3. supervises them: SIGTERM (the runtime's stop) is forwarded to every rank; a rank that fails ends the node's other
   ranks (SIGTERM, then SIGKILL after ``RANK_GRACE_S``) and the agent exits with its status, which the runtime reads
   as the attempt's crash; every rank dies with the agent (``PR_SET_PDEATHSIG``), so a killed agent leaks none.
   Like torchrun's error file, the agent first writes which rank failed, how and when it exited (a pidfd per rank
   wakes the agent at the exit) to the node's channel: a rank's death fails its peers on every node within
   milliseconds, and the runtime names the gang's crash after the earliest exit.

A program of gpuweave's own (``python -m gpuweave.live.workers.MODULE``, the bundled torch worker among them) is
imported once by the agent and each rank is forked from it (:class:`_ForkedRank`) and runs the module as
``__main__``: torch's import, 2.3 s of CPU per rank on the 2-core test machine, is paid once per node instead of
once per rank. Any other program (a user's script, another interpreter) is started per rank with exec, as torchrun
does: importing a module that was not written for it might run its code.

An executor that starts every rank on its own (the ``ray`` executor: one actor per rank in the gang's placement
group; the ``slurm`` executor: one ``srun`` task per rank) runs one agent per rank instead: ``GPUWEAVE_GANG_LOCAL``
(``LOCAL_ENV``) names the local rank it starts (the executor's actor index, Slurm's ``SLURM_LOCALID``). Such an
agent does steps 1-3 for that rank alone: only global rank 0's publishes the rendezvous, its rank is exec'd, and its
failure record goes to the rank's own channel (the runtime reads a node's earliest,
:func:`~gpuweave.live.channel.read_failure`); ending a failed rank's peers on the node is then the executor's (Ray)
or ``srun --kill-on-bad-exit``'s (Slurm).

Each rank reports through its own channel: local rank 0 through the node's (what the runtime reads, as before),
local rank ``j > 0`` through ``<channel>/local-<j>``. Global rank 0 writes the job's checkpoint; every other rank
gets a checkpoint path of its own. A single-rank job needs no agent: the runtime gives the program the same
variables itself (:func:`single_rank_env`). Complexity: O(ranks of the node) per poll of ``POLL_S``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import importlib
import json
import os
import runpy
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from gpuweave.live.channel import RankFailure, write_failure

LOOPBACK = "127.0.0.1"
#: the node agent's module (``python -m``)
AGENT_MODULE = "gpuweave.live.gang"
#: environment the runtime gives a node agent
SIZES_ENV = "GPUWEAVE_GANG_SIZES"  # ranks per node of the placement, in placement order: "2,2"
NODE_ENV = "GPUWEAVE_GANG_NODE"  # this node's index in the placement (torchrun's GROUP_RANK)
RENDEZVOUS_ENV = "GPUWEAVE_GANG_RENDEZVOUS"  # the attempt's rendezvous file
RUN_ID_ENV = "GPUWEAVE_GANG_ID"  # torchrun's TORCHELASTIC_RUN_ID
NODE_ADDR_ENV = "GPUWEAVE_NODE_ADDR"  # set by the executor: the address this node's ranks are reached at
TIMEOUT_ENV = "GPUWEAVE_GANG_TIMEOUT"
LOCAL_ENV = "GPUWEAVE_GANG_LOCAL"  # set by an executor that starts each rank itself: the one local rank to start
#: seconds an agent waits for node 0's rendezvous file (GPUWEAVE_GANG_TIMEOUT overrides)
GANG_JOIN_TIMEOUT_S = 120.0
#: seconds a rank asked to stop (its peer failed) may take before it is killed
RANK_GRACE_S = 10.0
POLL_S = 0.05
#: the programs whose ranks are forked from an agent that imported them once (module docstring)
FORKED_PREFIX = "gpuweave.live.workers."
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_SIOCGIFADDR = 0x8915
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def die_with_parent() -> None:
    """In a forked child, before exec: SIGKILL when the process that started it dies (Linux only)."""
    prctl = getattr(_LIBC, "prctl", None)
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


# The agent runs this much ahead of its ranks (and of the machine's other work) where it may (root, CAP_SYS_NICE):
# the time it records for a rank's exit is when it wakes, and the earliest exit across a gang's nodes names the
# crash, so an agent starved by a loaded machine must not wake after a peer's agent whose rank failed only because
# the first one died (measured: in a fresh-clone CI run the cause once named rank 0, whose all-reduce broke, not
# the crashed rank 3). Its ranks go back to the priority the agent started with.
AGENT_PRIORITY_BOOST = 5
_rank_priority: int | None = None  # the priority ranks run at, once the agent has raised its own


def _raise_agent_priority() -> None:
    global _rank_priority
    try:
        base = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, base - AGENT_PRIORITY_BOOST)
    except OSError:  # not permitted: the agent runs at its ranks' priority
        return
    _rank_priority = base


def _as_rank() -> None:
    """In a rank's process before it runs: it dies with the agent, at the priority the agent started with."""
    die_with_parent()
    if _rank_priority is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, _rank_priority)
        except OSError:  # lowering one's own priority is always allowed; nothing else to do if not
            pass


def rank_env(
    *,
    rank: int,
    local_rank: int,
    world: int,
    local_world: int,
    node: int,
    nodes: int,
    addr: str,
    port: int,
    run_id: str,
) -> dict[str, str]:
    """torchrun's per-rank environment (``torch.distributed.run``; ``init_process_group("env://")`` reads it)."""
    env = {
        "RANK": str(rank),
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(local_world),
        "GROUP_RANK": str(node),
        "GROUP_WORLD_SIZE": str(nodes),
        "ROLE_NAME": "default",
        "ROLE_RANK": str(rank),
        "ROLE_WORLD_SIZE": str(world),
        "MASTER_ADDR": addr,
        "MASTER_PORT": str(port),
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
    }
    if world > 1:
        env["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "1")  # torchrun's default for several ranks
    return env


def single_rank_env(run_id: str) -> dict[str, str]:
    """The variables of a one-rank job (no agent): world 1 on loopback, a free port for ``env://``."""
    return rank_env(
        rank=0, local_rank=0, world=1, local_world=1, node=0, nodes=1, addr=LOOPBACK, port=free_port(LOOPBACK),
        run_id=run_id,
    )  # fmt: skip


def agent_env(sizes: list[int], node: int, rendezvous: Path, run_id: str) -> dict[str, str]:
    """What the runtime adds to node ``node``'s environment for a gang of ``sizes`` ranks per node."""
    return {
        SIZES_ENV: ",".join(map(str, sizes)),
        NODE_ENV: str(node),
        RENDEZVOUS_ENV: str(rendezvous),
        RUN_ID_ENV: run_id,
    }


def agent_argv(program: list[str]) -> list[str]:
    """The node agent's command line around a job's program."""
    return [sys.executable, "-m", AGENT_MODULE, "--", *program]


def gang_sizes(placement: tuple[tuple[int, int], ...] | list[tuple[int, int]], per_gpu: bool = True) -> list[int]:
    """Ranks per node of a placement: one per GPU (a CPU-only task on a node still runs one), or one per node."""
    return [max(1, k) if per_gpu else 1 for _, k in placement]


def free_port(addr: str) -> int:
    """A TCP port nothing listens on at ``addr`` now (the OS's pick; the rank that binds it comes shortly after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return int(s.getsockname()[1])


def interface_of(addr: str) -> str | None:
    """The network interface that holds IPv4 address ``addr`` in this network namespace, or None."""
    if addr.startswith("127."):
        return "lo"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:  # no IPv4 address on it
                continue
            if socket.inet_ntoa(packed[20:24]) == addr:
                return name
    return None


# ---------------------------------------------------------------------------------------------- the node agent
def _rendezvous(
    path: Path, node: int, publish: bool, addr: str, timeout: float, stopped: list[bool]
) -> tuple[str, int] | None:
    """Node 0's agent (of its local rank 0 where agents are per rank: ``publish``) publishes its address and a free
    port; the others read them. None: stopped or timed out (logged)."""
    if publish:
        port = free_port(addr)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"addr": addr, "port": port}))
        os.replace(tmp, path)
        return addr, port
    deadline = time.monotonic() + timeout
    while not stopped[0]:
        try:
            data = json.loads(path.read_text())
            return str(data["addr"]), int(data["port"])
        except (FileNotFoundError, json.JSONDecodeError):  # not yet written (it is renamed into place whole)
            pass
        if time.monotonic() > deadline:
            print(f"gang agent: node {node}: no rendezvous from node 0 within {timeout:g} s ({path})", flush=True)
            return None
        time.sleep(POLL_S)
    return None


def _rank_envs(sizes: list[int], node: int, addr: str, port: int, run_id: str) -> list[dict[str, str]]:
    """Every local rank's environment on node ``node``: torchrun's, its channel, its checkpoint, its interface."""
    world, first = sum(sizes), sum(sizes[:node])
    channel = Path(os.environ["GPUWEAVE_CHANNEL"])
    own_addr = os.environ.get(NODE_ADDR_ENV) or LOOPBACK
    interface = interface_of(own_addr)
    envs = []
    for local in range(sizes[node]):
        env = dict(os.environ)
        for name in (SIZES_ENV, NODE_ENV, RENDEZVOUS_ENV, RUN_ID_ENV, LOCAL_ENV):
            env.pop(name, None)
        rank = first + local
        env.update(
            rank_env(
                rank=rank,
                local_rank=local,
                world=world,
                local_world=sizes[node],
                node=node,
                nodes=len(sizes),
                addr=addr,
                port=port,
                run_id=run_id,
            )  # fmt: skip
        )
        own = channel if local == 0 else channel / f"local-{local}"
        own.mkdir(parents=True, exist_ok=True)
        env["GPUWEAVE_CHANNEL"] = str(own)
        if rank > 0:  # only global rank 0 writes the job's checkpoint
            env["GPUWEAVE_CHECKPOINT"] = str(own / "rank.ckpt")
        if interface is not None:
            env.setdefault("GLOO_SOCKET_IFNAME", interface)
            env.setdefault("NCCL_SOCKET_IFNAME", interface)
        envs.append(env)
    return envs


class _ForkedRank:
    """A rank forked from the agent, with the part of :class:`subprocess.Popen` the supervision uses."""

    def __init__(self, module: str, argv: list[str], env: dict[str, str]) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.returncode: int | None = None
        # a stop arriving mid-fork must reach the agent's handler, not the child's copy of it: the child resets the
        # handlers to the default before it takes signals again
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        self.pid = os.fork()
        if self.pid == 0:  # the rank: never returns
            _run_forked(module, argv, env)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)  # -N for a signal, as Popen
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)


def _run_forked(module: str, argv: list[str], env: dict[str, str]) -> None:
    """In the forked child: the rank's environment, default signal actions, no stdin; the module as ``__main__``."""
    code: int = 1
    try:
        _as_rank()
        for signum in _STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [module, *argv]
        sys.modules.pop(module, None)  # run afresh as __main__ (its imports, torch's among them, stay loaded)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException:  # the rank's own failure: its traceback in the node's log, as an exec'd rank's would be
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def forked_module(args: list[str]) -> str | None:
    """The bundled module a program runs (``PYTHON -m gpuweave.live.workers.X`` with this interpreter), if any."""
    if len(args) < 3 or args[1] != "-m" or not args[2].startswith(FORKED_PREFIX):
        return None
    try:
        same = os.path.samefile(args[0], sys.executable)
    except OSError:
        return None
    return args[2] if same else None


def _start_ranks(args: list[str], envs: list[dict[str, str]]) -> list[Any]:
    """The node's ranks: forked from this agent with the module imported once, or exec'd (module docstring)."""
    module = forked_module(args) if len(envs) > 1 else None
    if module is not None:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001  # each exec'd rank then fails with its own traceback in the log
            module = None
    if module is not None:
        return [_ForkedRank(module, args[3:], env) for env in envs]
    return [subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, preexec_fn=_as_rank) for env in envs]


def _supervise(procs: list[Any], envs: list[dict[str, str]], stopped: list[bool]) -> int:
    """Wait for every rank; the first failure ends the others and is written to the node's channel with the time
    the rank exited (:class:`~gpuweave.live.channel.RankFailure`). The agent's exit status."""
    forwarded = False
    exits = _ExitWatch(procs)
    try:
        while True:
            if stopped[0] and not forwarded:
                forwarded = True
                _signal_all(procs, signal.SIGTERM)
            codes: list[int | None] = [p.poll() for p in procs]
            failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                index, code = failed[0]
                assert code is not None
                env = envs[index]
                failure = RankFailure(int(env["RANK"]), int(env["LOCAL_RANK"]), code, exits.seen)
                write_failure(Path(envs[0]["GPUWEAVE_CHANNEL"]), failure)  # local rank 0's channel: the node's
                _end(procs)
                # last in the node's log (the ranks' own last words come before it): the attempt's crash reason
                which = f"rank {env['RANK']} (local rank {env['LOCAL_RANK']})"
                print(f"gang agent: {which} exited with status {code}", flush=True)
                return code if code > 0 else 128 - code  # a signal: the shell's 128 + N
            if all(c == 0 for c in codes):
                return 0
            exits.wait(POLL_S)
    finally:
        exits.close()


class _ExitWatch:
    """Sleeps until one of the ranks exits (a pidfd per rank: readable once its process has ended) or a timeout
    passes, and notes when it woke: a failed rank's exit time to the millisecond, not to the poll, since the
    earliest failure across the gang's nodes names its crash and a peer fails a few milliseconds after a rank dies.
    Without pidfds (Linux before 5.3) it sleeps, and the time is the poll's."""

    def __init__(self, procs: list[Any]) -> None:
        self.seen = time.time()
        self.fds: list[int] = []
        try:
            self.fds = [os.pidfd_open(p.pid) for p in procs]
        except (AttributeError, OSError):  # no pidfd_open: poll
            self.close()

    def wait(self, timeout: float) -> None:
        if self.fds:
            ready, _, _ = select.select(self.fds, [], [], timeout)
            for fd in ready:  # an ended rank stays readable: watched no longer once it has been seen
                self.fds.remove(fd)
                os.close(fd)
        else:
            time.sleep(timeout)
        self.seen = time.time()

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def _signal_all(procs: list[Any], signum: int) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signum)


def _end(procs: list[Any]) -> None:
    _signal_all(procs, signal.SIGTERM)
    deadline = time.monotonic() + RANK_GRACE_S
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(POLL_S)
    _signal_all(procs, signal.SIGKILL)
    for p in procs:
        p.wait()


def main(argv: list[str] | None = None) -> int:
    """``python -m gpuweave.live.gang -- PROGRAM [ARGS]``: start this node's ranks of a gang and supervise them."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or SIZES_ENV not in os.environ:
        print("usage: python -m gpuweave.live.gang -- PROGRAM [ARGS] (run by gpuweave's runtime)", file=sys.stderr)
        return 2
    stopped = [False]

    def on_stop(_signum: int, _frame: FrameType | None) -> None:
        stopped[0] = True

    for signum in _STOP_SIGNALS:
        signal.signal(signum, on_stop)
    sizes = [int(x) for x in os.environ[SIZES_ENV].split(",")]
    node = int(os.environ[NODE_ENV])
    timeout = float(os.environ.get(TIMEOUT_ENV) or GANG_JOIN_TIMEOUT_S)
    addr = os.environ.get(NODE_ADDR_ENV) or LOOPBACK
    local = int(os.environ[LOCAL_ENV]) if os.environ.get(LOCAL_ENV) else None
    if local is not None and not 0 <= local < sizes[node]:
        print(f"gang agent: local rank {local} outside node {node}'s {sizes[node]} ranks", file=sys.stderr)
        return 2
    found = _rendezvous(Path(os.environ[RENDEZVOUS_ENV]), node, node == 0 and not local, addr, timeout, stopped)
    if found is None:
        return 0 if stopped[0] else 1
    envs = _rank_envs(sizes, node, *found, os.environ.get(RUN_ID_ENV, "gpuweave"))
    if local is not None:  # an agent per rank (module docstring)
        envs = envs[local : local + 1]
    _raise_agent_priority()
    return _supervise(_start_ranks(args, envs), envs, stopped)


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    # No interpreter shutdown: Python restores SIGTERM's default action while it finalizes, so the runtime's stop
    # arriving in those milliseconds (a finished gang's other nodes are stopped once node 0 is done) would turn a
    # clean exit into death by SIGTERM.
    os._exit(status)
