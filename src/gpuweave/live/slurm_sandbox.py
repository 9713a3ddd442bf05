"""A throwaway Slurm on this machine: munged, MariaDB + slurmdbd, slurmctld and one slurmd with typed GPU GRES.

For the tests, the worked example (``tools/slurm_example.py``) and trying the ``slurm`` executor without a cluster.
Every daemon runs in the foreground as a child of this process, from a folder of its own, on loopback ports
picked at start; :meth:`SlurmSandbox.stop` cancels every job and ends the daemons by their process ids. Needs
root (slurmd starts jobs as their user) and Debian's ``slurm-wlm``, ``slurmdbd``, ``munge`` and ``mariadb-server``.

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
  launch's latency otherwise; ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none`` (no cgroups here).
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd")
COMMANDS = ("sbatch", "scontrol", "squeue", "scancel", "sacct", "sacctmgr", "sinfo", "munge", "mariadb")
START_TIMEOUT_S = 60.0
START_ATTEMPTS = 3  # a daemon that dies while the sandbox starts (MariaDB once segfaulted under load) gets a fresh try
DEFAULT_GPUS = {"v100": 4, "k80": 2}


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
        return s.getsockname()[1]


@dataclass
class SlurmSandbox:
    root: Path
    node: str = "gw0"
    cluster: str = "gwsandbox"
    gpus: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_GPUS))
    cpus: int = 16
    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to talk to this Slurm: its SLURM_CONF."""
        return {"SLURM_CONF": str(self.conf)}

    def _run(self, args: list[str], **kw) -> str:
        proc = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **self.env), timeout=60, **kw)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def _spawn(self, name: str, args: list[str]) -> None:
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

    def _wait(self, what: str, check, timeout: float = START_TIMEOUT_S) -> None:
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
        for sub in ("etc", "log", "state", "spool", "munge", "run", "dev", "db"):
            shutil.rmtree(self.root / sub, ignore_errors=True)  # a fresh Slurm every time: no state of a past one
            (self.root / sub).mkdir(parents=True)
        try:
            self._start_munge()
            db_port = self._start_mariadb()
            dbd_port = self._write_configs(db_port)
            self._spawn("slurmdbd", ["slurmdbd", "-D"])
            self._wait("slurmdbd", lambda: self._run(["sacctmgr", "-n", "-P", "show", "cluster"]) is not None)
            for args in (
                ["add", "cluster", self.cluster],
                ["add", "account", "gpuweave"],
                ["add", "user", "root", "account=gpuweave"],
            ):
                self._run(["sacctmgr", "-i", *args])
            self._spawn("slurmctld", ["slurmctld", "-D", "-i"])
            self._wait("slurmctld", lambda: "UP" in self._run(["scontrol", "ping"]))
            self._spawn("slurmd", ["slurmd", "-D", "-N", self.node])
            self._wait(f"node {self.node} idle", lambda: self._run(["sinfo", "-h", "-o", "%T"]).strip() == "idle")
            self.dbd_port = dbd_port
        except BaseException:
            self.stop()
            raise
        return self

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
        tmpdir.mkdir(parents=True, exist_ok=True)
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
        gres_types = ",".join(f"gres/gpu:{t}" for t in self.gpus)
        node_gres = ",".join(f"gpu:{t}:{n}" for t, n in self.gpus.items())
        (etc / "slurm.conf").write_text(
            SLURM_CONF.format(
                cluster=self.cluster,
                ctld_port=_free_port(),
                slurmd_port=_free_port(),
                root=root,
                sock=sock,
                dbd_port=dbd_port,
                gres_types=gres_types,
                node=self.node,
                cpus=self.cpus,
                node_gres=node_gres,
            )
        )
        (etc / "gres.conf").write_text(
            "AutoDetect=off\n"
            + "".join(f"NodeName={self.node} Name=gpu Type={t} File={f}\n" for t, f in devices.items())
        )
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(SLURMDBD_CONF.format(sock=sock, dbd_port=dbd_port, root=root, db_port=db_port))
        dbd.chmod(0o600)
        return dbd_port

    def _make_devices(self) -> dict[str, str]:
        """One character device per fake GPU (/dev/null's numbers); type -> gres.conf File= expression."""
        files, index = {}, 0
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
        """Cancel every job, wait for them to end, then end the daemons (newest first) by process id."""
        if any(name == "slurmctld" and proc.poll() is None for name, proc in self.procs):
            try:
                ids = self._run(["squeue", "-h", "-o", "%i"]).split()
                if ids:
                    subprocess.run(["scancel", *ids], env=dict(os.environ, **self.env), capture_output=True, timeout=30)
                deadline = time.time() + 20
                while time.time() < deadline and self._run(["squeue", "-h", "-t", "running,completing", "-o", "%i"]):
                    time.sleep(0.2)
            except (RuntimeError, subprocess.SubprocessError):
                pass
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs.clear()


SLURM_CONF = """\
# gpuweave's throwaway Slurm (gpuweave.live.slurm_sandbox): one node, typed fake GPUs, everything on loopback
ClusterName={cluster}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MessageTimeout=5
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={dbd_port}
AccountingStoragePass={sock}
AccountingStorageTRES=gres/gpu,{gres_types}
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
GresTypes=gpu
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=4000 Gres={node_gres} State=UNKNOWN
PartitionName=gpu Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""

SLURMDBD_CONF = """\
AuthType=auth/munge
AuthInfo=socket={sock}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={dbd_port}
SlurmUser=root
LogFile={root}/log/slurmdbd.log
PidFile={root}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
"""
