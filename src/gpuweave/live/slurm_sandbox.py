"""A throwaway Slurm on this machine: munged, MariaDB + slurmdbd, slurmctld and one slurmd with typed GPU GRES.

Or a multi-node one (``namespaces``, ``control``): the control plane in one network namespace and one slurmd per
further namespace with its own ``NodeAddr`` (a ``gpuweave testbed``'s, :func:`gpuweave.live.testbed.start_slurm`),
each daemon entering its namespace with ``nsenter`` (:func:`gpuweave.live.testbed.enter_argv`).

The implementation of ``gpuweave slurm sandbox start|status|stop`` (:mod:`gpuweave.cli.slurm`: try the ``slurm``
executor without a cluster, docs/slurm.md "Try it"), and what the Slurm tests (``tests/slurm/conftest.py``),
``tools/slurm_capture.py`` and ``tools/bench_slurm.py`` start. Every daemon runs in the foreground (``-D``/``-F``)
in a session of its own, from a folder of its own, on loopback ports picked at start (slurmctld, slurmd and
slurmdbd bind 127.0.0.1 only: ``CommunicationParameters=NoInAddrAny``). :meth:`SlurmSandbox.start` records the
daemons' process ids in ``sandbox.json`` in that folder, so another process can read them (:func:`read_state`,
:func:`daemon_status`) and end them (:func:`stop_recorded`); :meth:`SlurmSandbox.stop` ends its own children.
Either way every job is cancelled first and each daemon gets SIGTERM, then SIGKILL after a timeout. Needs root
(slurmd starts jobs as their user) and Debian's ``slurm-wlm``, ``slurmdbd``, ``munge`` and ``mariadb-server``.

What it takes on Debian 12 (Slurm 22.05.8), found by trying (docs/slurm.md):

* **fake GPUs**: ``gres.conf`` ``File=`` must name character or block devices (a regular file is refused: "not a
  valid character or block device"), and ``Count=``-only GPU lines register 0 GPUs, so the node goes INVAL
  ("gres/gpu count reported lower than configured"). The sandbox makes character devices with /dev/null's
  numbers (1, 3) in its folder (``mknod``, which needs root) and sets ``AutoDetect=off``;
* **GPU counts in sacct**: ``AllocTRES`` lists GPUs only with ``AccountingStorageTRES=gres/gpu,gres/gpu:<type>``,
  which slurmctld refuses without slurmdbd ("slurmdbd is required to run with TRES gres/gpu"); slurmdbd needs
  MySQL/MariaDB, so a MariaDB runs in the sandbox's folder on a loopback port. (jobcomp/filetxt with ``sacct -c``
  runs without a database but records no GRES at all.);
* **munge**: daemons and commands find the sandbox's munged through ``AuthInfo=socket=...``; connections to
  slurmdbd take the socket from ``AccountingStoragePass``;
* the node declares 16 CPUs whatever the machine has (``SlurmdParameters=config_overrides``), so six one-GPU jobs
  fit on two cores; ``SchedulerParameters=batch_sched_delay=0``: Slurm's default 3 s batch delay is most of a
  launch's latency otherwise; ``bf_interval=1``: a heterogeneous job (an uneven gang, one component per node) is
  started only by the backfill scheduler, whose default pass every 30 s would be most of its launch;
  ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none`` (no cgroups here).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.live.testbed import enter_argv

DAEMONS = ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd")
COMMANDS = ("sbatch", "scontrol", "squeue", "scancel", "sacct", "sacctmgr", "sinfo", "munge", "mariadb")
START_TIMEOUT_S = 60.0
START_ATTEMPTS = 3  # a daemon that dies while the sandbox starts (MariaDB once segfaulted under load) gets a fresh try
DEFAULT_GPUS = {"v100": 4, "k80": 2}
PARTITION = "gpu"
STATE_FILE = "sandbox.json"  # the daemons' process ids, for `gpuweave slurm sandbox status|stop` in another process
LOCK_FILE = "sandbox.lock"  # held while `gpuweave slurm sandbox start` starts one
STOP_TIMEOUT_S = 15.0  # SIGTERM, then SIGKILL after this long
OWN_FOLDERS = ("etc", "log", "state", "spool", "munge", "run", "dev", "db", "dbtmp")  # made afresh by every start


def missing_requirements() -> str | None:
    """Why no sandbox can start here (one line), or None."""
    if os.name != "posix" or os.geteuid() != 0:
        return "a local Slurm needs root (slurmd starts jobs as their user)"
    missing = [name for name in DAEMONS + COMMANDS if shutil.which(name) is None]
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} missing): "
            "apt-get install slurm-wlm slurmdbd munge mariadb-server mariadb-client"
        )
    return None


class DaemonExited(RuntimeError):
    """A sandbox daemon ended while the sandbox was starting."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat), or None when no live process has that
    id (a zombie is not live)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name, in brackets, may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


@dataclass(frozen=True)
class Daemon:
    """A daemon a sandbox started: its process id and start time, which tells it from a later process that got the
    same id (only that process is ever signalled)."""

    name: str
    pid: int
    started: int | None

    def alive(self) -> bool:
        return self.started is not None and _start_ticks(self.pid) == self.started


@dataclass(frozen=True)
class SandboxState:
    """What ``sandbox.json`` records about a started sandbox."""

    root: Path
    cluster: str
    node: str
    partition: str
    gpus: dict[str, int]
    daemons: tuple[Daemon, ...]

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.root / "etc" / "slurm.conf")}

    def running(self) -> list[Daemon]:
        return [d for d in self.daemons if d.alive()]

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": str(self.root),
            "cluster": self.cluster,
            "node": self.node,
            "partition": self.partition,
            "gpus": dict(self.gpus),
            "env": self.env,
            "daemons": [{"name": d.name, "pid": d.pid, "started": d.started} for d in self.daemons],
        }


def read_state(root: Path) -> SandboxState | None:
    """The sandbox recorded in ``root`` (None when none was started there); a damaged record is an InputError."""
    path = root / STATE_FILE
    if not path.is_file():
        return None
    data = load_json(path, what="sandbox state")
    try:
        daemons = tuple(
            Daemon(str(d["name"]), int(d["pid"]), None if d["started"] is None else int(d["started"]))
            for d in data["daemons"]
        )
        return SandboxState(
            root=Path(data["dir"]),
            cluster=str(data["cluster"]),
            node=str(data["node"]),
            partition=str(data["partition"]),
            gpus={str(k): int(v) for k, v in data["gpus"].items()},
            daemons=daemons,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"not a sandbox record ({type(exc).__name__}: {exc})", file=path) from None


def folder_problem(root: Path) -> str | None:
    """Why ``root`` cannot hold a sandbox (one line), or None: a start rewrites its own folders there
    (``OWN_FOLDERS``), so it takes only a new or empty folder, or one a sandbox used before."""
    if root.exists() and not root.is_dir():
        return f"{root} is not a folder"
    if root.is_dir() and not any((root / name).exists() for name in (STATE_FILE, LOCK_FILE)) and any(root.iterdir()):
        return (
            f"{root} is not empty and holds no sandbox ({STATE_FILE}); give a new or empty folder "
            f"(a start rewrites its {', '.join(OWN_FOLDERS)} subfolders)"
        )
    return None


def start_detached(root: Path) -> tuple[SandboxState, bool]:
    """Start a sandbox in ``root`` whose daemons outlive this process, or find the one running there: returns its
    state and whether it already ran. Bad input (no root, Slurm missing, a folder of someone else's, a start in
    progress, a sandbox that runs only partly) is an InputError."""
    problem = folder_problem(root) or missing_requirements()
    if problem:
        raise InputError(problem)
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"a sandbox is being started in {root} by another process") from None
        state = read_state(root)
        running = state.running() if state is not None else []
        if state is not None and running:
            if len(running) == len(state.daemons):
                return state, True
            gone = ", ".join(d.name for d in state.daemons if d not in running)
            raise InputError(
                f"the sandbox in {root} runs only partly ({gone} exited; logs in {root / 'log'}): "
                f"`gpuweave slurm sandbox stop --dir {root}` first"
            )
        return SlurmSandbox(root).start().state(), False


def stop_recorded(root: Path, timeout: float = STOP_TIMEOUT_S) -> list[Daemon]:
    """Cancel every job of the sandbox recorded in ``root`` and end its daemons that still run (newest first,
    SIGTERM, SIGKILL after ``timeout``); returns the daemons it ended. Removes no file."""
    state = read_state(root)
    running = state.running() if state is not None else []
    if state is None or not running:
        return []
    if any(d.name == "slurmctld" for d in running):
        _cancel_jobs(state.env)
    for daemon in reversed(running):
        _end(daemon, timeout)
    return running


def _end(daemon: Daemon, timeout: float) -> None:
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        if not daemon.alive():
            return
        try:
            os.kill(daemon.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while daemon.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
    if daemon.alive():
        raise RuntimeError(f"{daemon.name} (pid {daemon.pid}) still runs after SIGKILL")


def _cancel_jobs(env: dict[str, str]) -> None:
    """Cancel every job and wait (20 s at most) until none runs; a Slurm that does not answer is left to the kill."""
    full = dict(os.environ, **env)

    def squeue(*args: str) -> str:
        proc = subprocess.run(["squeue", "-h", *args], capture_output=True, text=True, env=full, timeout=30)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip())
        return proc.stdout

    try:
        ids = squeue("-o", "%i").split()
        if ids:
            subprocess.run(["scancel", *ids], env=full, capture_output=True, timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and squeue("-t", "running,completing", "-o", "%i").strip():
            time.sleep(0.2)
    except (OSError, RuntimeError, subprocess.SubprocessError):
        pass


@dataclass
class SlurmSandbox:
    root: Path
    node: str = "gw0"
    cluster: str = "gwsandbox"
    gpus: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_GPUS))
    cpus: int = 16
    procs: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    dbd_port: int = 0
    # A multi-node Slurm: one slurmd per (network namespace, its address), nodes gw0, gw1, ... (a testbed's
    # namespaces, gpuweave.live.testbed), and the control plane (MariaDB, slurmdbd, slurmctld) in the namespace
    # ``control`` (namespace, address): there slurmctld may bind every address, all of them private, and a client on
    # this machine reaches it at that address (slurmctld binds its host name's address, loopback, when told not to
    # bind them all). Empty: the one node `node` on loopback, the daemons on this machine's loopback.
    namespaces: list[tuple[str, str]] = field(default_factory=list)
    control: tuple[str, str] = ("", "127.0.0.1")

    @property
    def node_names(self) -> list[str]:
        return [f"gw{i}" for i in range(len(self.namespaces))] if self.namespaces else [self.node]

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to talk to this Slurm: its SLURM_CONF."""
        return {"SLURM_CONF": str(self.conf)}

    def state(self) -> SandboxState:
        """What ``sandbox.json`` records: the daemons running now with their process ids."""
        daemons = tuple(Daemon(name, p.pid, _start_ticks(p.pid)) for name, p in self.procs if p.poll() is None)
        return SandboxState(self.root, self.cluster, self.node, PARTITION, dict(self.gpus), daemons)

    def _write_state(self) -> None:
        tmp = self.root / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(self.state().to_json(), indent=2) + "\n")
        os.replace(tmp, self.root / STATE_FILE)

    def _run(self, args: list[str]) -> str:
        proc = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **self.env), timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def _spawn(self, name: str, args: list[str], netns: str = "") -> None:
        if netns:
            args = [*enter_argv(netns), *args]
        log = open(self.root / "log" / f"{name}.out", "ab")
        proc = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ, **self.env),
            start_new_session=True,
        )
        log.close()
        self.procs.append((name, proc))

    def _wait(self, what: str, check: Callable[[], bool], timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise DaemonExited(
                        f"{name} exited with status {proc.returncode} while waiting for {what}: see {self.root / 'log'}"
                    )
            try:
                if check():
                    return
            except (OSError, RuntimeError, subprocess.SubprocessError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}: see {self.root / 'log'}")

    # ------------------------------------------------------------------ start
    def start(self) -> SlurmSandbox:
        """Start every daemon from fresh state. When one dies on the way, its logs are kept in ``log.failed-N``
        and the whole sandbox starts again, ``START_ATTEMPTS`` times in all; a timeout is not retried."""
        for attempt in range(1, START_ATTEMPTS):
            try:
                return self._start_once()
            except DaemonExited:
                failed = self.root / f"log.failed-{attempt}"
                shutil.rmtree(failed, ignore_errors=True)
                (self.root / "log").rename(failed)
        return self._start_once()

    def _start_once(self) -> SlurmSandbox:
        for sub in OWN_FOLDERS:
            shutil.rmtree(self.root / sub, ignore_errors=True)  # a fresh Slurm every time: no state of a past one
            (self.root / sub).mkdir(parents=True)
        try:
            self._start_munge()
            db_port = self._start_mariadb()
            dbd_port = self._write_configs(db_port)
            self._spawn("slurmdbd", ["slurmdbd", "-D"], self.control[0])
            self._wait("slurmdbd", lambda: self._run(["sacctmgr", "-n", "-P", "show", "cluster"]) is not None)
            for args in (
                ["add", "cluster", self.cluster],
                ["add", "account", "gpuweave"],
                ["add", "user", "root", "account=gpuweave"],
            ):
                self._run(["sacctmgr", "-i", *args])
            self._spawn("slurmctld", ["slurmctld", "-D", "-i"], self.control[0])
            self._wait("slurmctld", lambda: "UP" in self._run(["scontrol", "ping"]))
            self._start_slurmds()
            self.dbd_port = dbd_port
            self._write_state()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_slurmds(self) -> None:
        """One slurmd per node (each in its namespace in a multi-node Slurm), then wait until every node is idle."""
        names = self.node_names
        for name in names if self.namespaces else []:
            (self.root / f"spool-{name}").mkdir(exist_ok=True)
        for i, name in enumerate(names):
            netns = self.namespaces[i][0] if self.namespaces else ""
            self._spawn(f"slurmd-{name}" if self.namespaces else "slurmd", ["slurmd", "-D", "-N", name], netns)

        def idle() -> bool:
            states = self._run(["sinfo", "-h", "-N", "-o", "%N|%T"]).split()
            return sorted(states) == sorted(f"{n}|idle" for n in names)

        self._wait(f"node(s) {', '.join(names)} idle", idle)

    def restart_slurmd(self, index: int) -> None:
        """Start node ``index``'s slurmd again after it died (a test killed it) and return the node to service
        (``scontrol update State=RESUME``: Slurm keeps a node it declared DOWN down); waits until the node is idle."""
        name = self.node_names[index]
        label = f"slurmd-{name}" if self.namespaces else "slurmd"
        self.procs = [(n, p) for n, p in self.procs if n != label or p.poll() is None]
        if any(n == label for n, _ in self.procs):
            raise RuntimeError(f"{label} still runs")
        netns = self.namespaces[index][0] if self.namespaces else ""
        self._spawn(label, ["slurmd", "-D", "-N", name], netns)
        resume = ["scontrol", "update", f"NodeName={name}", "State=RESUME"]  # idle once its slurmd registers
        self._wait(f"node {name} resumed", lambda: self._run(resume) is not None)
        self._wait(f"node {name} idle", lambda: self._run(["sinfo", "-h", "-n", name, "-o", "%T"]).strip() == "idle")

    def _start_munge(self) -> None:
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        (self.root / "munge").chmod(0o700)
        (self.root / "run").chmod(0o755)
        self._spawn(
            "munged",
            [
                "munged",
                "-F",
                "-f",
                f"--socket={self.root / 'run' / 'munge.sock'}",
                f"--key-file={key}",
                f"--log-file={self.root / 'log' / 'munged.log'}",
                f"--pid-file={self.root / 'run' / 'munged.pid'}",
                f"--seed-file={self.root / 'munge' / 'seed'}",
            ],
        )
        self._wait("munged", lambda: (self.root / "run" / "munge.sock").exists())

    def _start_mariadb(self) -> int:
        datadir, sock = self.root / "db", self.root / "run" / "db.sock"
        # MariaDB's temporary tables go to its own folder, not the machine's /tmp: a test run once failed with
        # "Error on delete of '/tmp/#sql-temptable-...MAI' (Errcode: 2)" while other tests ran beside it.
        tmpdir = self.root / "dbtmp"
        self._run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={datadir}",
                f"--tmpdir={tmpdir}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ]
        )
        port = _free_port()
        self._spawn(
            "mariadbd",
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={datadir}",
                f"--tmpdir={tmpdir}",
                "--user=root",
                "--bind-address=127.0.0.1",
                f"--port={port}",
                f"--socket={sock}",
                f"--pid-file={self.root / 'run' / 'db.pid'}",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=32M",
                f"--log-error={self.root / 'log' / 'mariadb.err'}",
            ],
            self.control[0],  # the namespace's own loopback: slurmdbd beside it reaches it there
        )
        client = ["mariadb", "--no-defaults", f"--socket={sock}", "-uroot"]
        self._wait("mariadb", lambda: bool(self._run([*client, "-e", "select 1"])))
        self._run(
            [
                *client,
                "-e",
                "create user 'slurm'@'127.0.0.1' identified by 'slurm'; "
                "grant all on slurm_acct_db.* to 'slurm'@'127.0.0.1';",
            ]
        )
        return port

    def _write_configs(self, db_port: int) -> int:
        etc, root = self.root / "etc", self.root
        sock = root / "run" / "munge.sock"
        dbd_port = _free_port()
        devices = self._make_devices()
        gres_types = ",".join(f"gres/gpu:{t}" for t in self.gpus) + ",gres/shard"
        shards = SHARDS_PER_GPU * sum(self.gpus.values())
        node_gres = ",".join(f"gpu:{t}:{n}" for t, n in self.gpus.items()) + f",shard:{shards}"
        names = self.node_names
        if self.namespaces:  # each daemon binds every address of its own namespace, all of them private
            # a node whose slurmd is gone is DOWN after 5 s without an answer (Slurm's default waits 300 s)
            addrs, comm, per_node = [a for _, a in self.namespaces], "SlurmdTimeout=5\n", "-%n"
        else:
            addrs, comm, per_node = ["127.0.0.1"], "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny\n", ""
        node_lines = "".join(
            f"NodeName={name} NodeHostname=localhost NodeAddr={addr} CPUs={self.cpus} RealMemory=4000 "
            f"Gres={node_gres} State=UNKNOWN\n"
            for name, addr in zip(names, addrs)
        )
        (etc / "slurm.conf").write_text(
            SLURM_CONF.format(
                cluster=self.cluster,
                ctld_addr=self.control[1],
                ctld_port=_free_port(),
                slurmd_port=_free_port(),
                root=root,
                sock=sock,
                dbd_port=dbd_port,
                gres_types=gres_types,
                comm=comm,
                per_node=per_node,
                node_lines=node_lines,
                nodes=",".join(names),
                partition=PARTITION,
            )
        )
        nodes = ",".join(names)
        (etc / "gres.conf").write_text(
            "AutoDetect=off\n"
            + "".join(f"NodeName={nodes} Name=gpu Type={t} File={f}\n" for t, f in devices.items())
            + "".join(
                f"NodeName={nodes} Name=shard Count={SHARDS_PER_GPU * self.gpus[t]} File={f}\n"
                for t, f in devices.items()
            )
        )
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(
            SLURMDBD_CONF.format(
                sock=sock,
                dbd_port=dbd_port,
                root=root,
                db_port=db_port,
                dbd_addr=self.control[1],
                comm="" if self.namespaces else "CommunicationParameters=NoInAddrAny\n",
            )
        )
        dbd.chmod(0o600)
        return dbd_port

    def _make_devices(self) -> dict[str, str]:
        """One character device per fake GPU (/dev/null's numbers); type -> gres.conf File= expression."""
        files: dict[str, str] = {}
        index = 0
        null = os.stat("/dev/null").st_rdev
        for kind, count in self.gpus.items():
            first = index
            for _ in range(count):
                path = self.root / "dev" / f"gpu{index}"
                if not path.exists():
                    os.mknod(path, 0o666 | stat.S_IFCHR, null)
                index += 1
            files[kind] = str(self.root / "dev" / (f"gpu[{first}-{index - 1}]" if count > 1 else f"gpu{first}"))
        return files

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Cancel every job, wait for them to end, then end the daemons (newest first) by process id: SIGTERM,
        SIGKILL after ``STOP_TIMEOUT_S``."""
        if any(name == "slurmctld" and proc.poll() is None for name, proc in self.procs):
            _cancel_jobs(self.env)
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs.clear()


#: Slurm shards per GPU (gres/shard): a task asking a share of one GPU asks that share of them (0.46 -> 46)
SHARDS_PER_GPU = 100

SLURM_CONF = """\
# gpuweave's throwaway Slurm (gpuweave.live.slurm_sandbox): one node, typed fake GPUs, everything on loopback
ClusterName={cluster}
SlurmctldHost=localhost({ctld_addr})
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool{per_node}
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd{per_node}.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd{per_node}.log
SlurmctldDebug=info
SlurmdDebug=info
MessageTimeout=5
{comm}ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={ctld_addr}
AccountingStoragePort={dbd_port}
AccountingStoragePass={sock}
AccountingStorageTRES=gres/gpu,{gres_types}
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1
GresTypes=gpu,shard
ReturnToService=2
KillWait=5
MinJobAge=600
{node_lines}PartitionName={partition} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP
"""

SLURMDBD_CONF = """\
AuthType=auth/munge
AuthInfo=socket={sock}
DbdHost=localhost
DbdAddr={dbd_addr}
DbdPort={dbd_port}
{comm}SlurmUser=root
LogFile={root}/log/slurmdbd.log
PidFile={root}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
"""
