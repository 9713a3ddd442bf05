"""A multi-node test cluster on one machine: network namespaces joined by veth pairs on a private bridge.

Problem: a gang that trains across nodes, and a node that fails, need nodes that talk over a network, while tests
and a newcomer's first try have one machine. Here each node is a Linux network namespace (``ip netns``) with one
veth link, ``gw0``, to a bridge on the host; the bridge holds ``10.213.X.1/24`` and node ``i`` holds
``10.213.X.(10 + i)``, a private test subnet that is routed nowhere (nothing is forwarded: traffic stays inside the
machine). Taking a node's link down (:meth:`Testbed.set_link`) cuts it off as a pulled cable would.

Optionally (``slurm=True``) the first namespace runs a Slurm control plane and every other one a slurmd
(:func:`start_slurm`), or (``ray=True``) the first namespace runs a Ray head and every other one a Ray worker node
that offers ``gpu_type:<MODEL>`` resources (``gpus_per_node`` each), the cluster the ``ray`` executor joins with
``--address``; the head checks its nodes' health every second, so a node cut off is declared dead within seconds.

State lives in ``/run/gpuweave/testbeds/<name>.json``: :func:`down` removes every process in the namespaces (not
by name: ``ray stop`` would end every Ray on the machine), the namespaces (which deletes their veths), the bridge and
Ray's temporary directory, whatever state a failed test left. Needs root (``ip netns``), like the tests that use it.
Complexity: O(nodes) commands per call.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpuweave.errors import InputError

STATE_DIR = Path("/run/gpuweave/testbeds")
NETNS_ETC = Path("/etc/netns")  # per-namespace files `ip netns exec` mounts over /etc
SUBNET_PREFIX = "10.213"
HOST_OCTET = 1
FIRST_NODE_OCTET = 10
NODE_LINK = "gw0"  # the node's end of its veth pair, the same name in every namespace
RAY_PORT = 6379
MAX_NODES = 32
NAME_PATTERN = re.compile(r"^[a-z0-9]{1,6}$")  # interface names hold 15 characters: gwb<name>, gwv<name><i>
#: seconds a Ray node may take to join the head
RAY_JOIN_S = 60.0
#: what the head uses to find a dead node fast (Ray's GCS health checks; defaults are 3 s x 5 failures)
RAY_HEALTH_ENV = {
    "RAY_AUTH_MODE": "disabled",  # the subnet is private to this machine; see the module docstring
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


@dataclass(slots=True)
class TestbedNode:
    namespace: str
    addr: str
    veth: str  # the host's end of the node's link, on the bridge


@dataclass(slots=True)
class Testbed:
    """One test cluster's record (what :func:`up` made and :func:`down` removes)."""

    __test__ = False  # not a pytest test class, whatever its name

    name: str
    subnet: int  # X of 10.213.X.0/24
    bridge: str
    nodes: list[TestbedNode] = field(default_factory=list)
    ray_address: str = ""  # HEAD:PORT when a Ray runs on it
    ray_temp: str = ""
    gpu_model: str = ""
    gpus_per_node: int = 0
    slurm_dir: str = ""  # a Slurm on it: its sandbox folder (control plane in node 0, a slurmd in every other node)
    slurm_conf: str = ""

    @property
    def host_addr(self) -> str:
        return f"{SUBNET_PREFIX}.{self.subnet}.{HOST_OCTET}"

    @property
    def namespaces(self) -> list[str]:
        return [n.namespace for n in self.nodes]

    def set_link(self, node: int, up: bool) -> None:
        """Bring node ``node``'s link up or down (down: it can reach nobody and nobody can reach it)."""
        _ip("-n", self.nodes[node].namespace, "link", "set", NODE_LINK, "up" if up else "down")

    def kill(self, node: int) -> None:
        """Every process in node ``node``'s namespace dies at once, as on a machine that crashed (its daemons too)."""
        _kill_namespace(self, node)

    def kill_program(self, node: int, program: str) -> list[int]:
        """SIGKILL the processes in node ``node``'s namespace that run ``program`` (the base name of their
        executable, e.g. ``raylet`` or ``slurmd``): one daemon dies, the rest of the machine lives on."""
        hit = []
        for pid in self.pids(node):
            try:
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            except OSError:  # it ended meanwhile
                continue
            if os.path.basename(argv0) == program:
                try:
                    os.kill(pid, signal.SIGKILL)
                    hit.append(pid)
                except ProcessLookupError:
                    pass
        return hit

    def pids(self, node: int) -> list[int]:
        """The processes in node ``node``'s namespace."""
        out = subprocess.run(["ip", "netns", "pids", self.nodes[node].namespace], capture_output=True, text=True)
        return [int(x) for x in out.stdout.split()]

    def describe(self) -> dict[str, object]:
        data = asdict(self)
        data["host_addr"] = self.host_addr
        return data


def enter_argv(namespace: str) -> list[str]:
    """The command prefix that runs a program in ``namespace``'s network with the node's hosts file, keeping this
    machine's /sys: ``ip netns exec`` mounts a fresh sysfs, without the cgroup hierarchies slurmd needs."""
    hosts = NETNS_ETC / namespace / "hosts"
    script = 'mount --bind "$0" /etc/hosts && exec "$@"' if hosts.exists() else 'exec "$@"'
    return ["nsenter", f"--net=/run/netns/{namespace}", "unshare", "--mount", "--propagation", "private"] + [
        "sh", "-c", script, str(hosts),
    ]  # fmt: skip


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise InputError(f"`ip {' '.join(args)}` failed: {result.stderr.strip() or result.returncode}")


def _check_can(name: str, nodes: int) -> None:
    if not NAME_PATTERN.match(name):
        raise InputError(f"testbed name {name!r} must be 1-6 lower-case letters or digits", field="name")
    if not 1 <= nodes <= MAX_NODES:
        raise InputError(f"a testbed has 1..{MAX_NODES} nodes, asked {nodes}", field="nodes")
    if os.geteuid() != 0:
        raise InputError("a testbed needs root: network namespaces are made with `ip netns` (run it as root)")
    if shutil.which("ip") is None:
        raise InputError("a testbed needs the `ip` command (Debian's iproute2)")


@contextmanager
def _locked() -> Iterator[None]:
    """One testbed change at a time on this machine (parallel tests pick subnets under this lock)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _state_file(name: str) -> Path:
    return STATE_DIR / f"{name}.json"


def load(name: str) -> Testbed | None:
    """The testbed ``name``'s record, or None when there is none."""
    try:
        data = json.loads(_state_file(name).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    nodes = [TestbedNode(**n) for n in data.pop("nodes")]
    data.pop("host_addr", None)
    return Testbed(nodes=nodes, **data)


def names() -> list[str]:
    """Every testbed recorded on this machine."""
    return sorted(p.stem for p in STATE_DIR.glob("*.json")) if STATE_DIR.is_dir() else []


def _free_subnet() -> int:
    used = {tb.subnet for tb in map(load, names()) if tb is not None}
    taken = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    for x in range(1, 255):
        if x not in used and f" {SUBNET_PREFIX}.{x}." not in taken:
            return x
    raise InputError(f"no free {SUBNET_PREFIX}.X.0/24 subnet left for a testbed")


def up(
    name: str, nodes: int, *, ray: bool = False, slurm: bool = False, gpus_per_node: int = 2, gpu_model: str = "V100"
) -> Testbed:
    """Make testbed ``name`` of ``nodes`` namespaces (with a Ray on them when ``ray``, a Slurm when ``slurm``). A
    failure midway removes what was made; an existing testbed of that name is refused."""
    _check_can(name, nodes)
    if ray and slurm:
        raise InputError("a testbed runs Ray or Slurm, not both", field="slurm")
    with _locked():
        if load(name) is not None:
            raise InputError(f"testbed {name!r} exists: `gpuweave testbed down --name {name}` first", field="name")
        bed = Testbed(name=name, subnet=_free_subnet(), bridge=f"gwb{name}")
        _state_file(name).write_text(json.dumps(bed.describe()))  # recorded first: down() finds a half-made one
        try:
            _make_network(bed, nodes)
        except BaseException:
            _remove(bed)
            raise
        _state_file(name).write_text(json.dumps(bed.describe()))
    if ray or slurm:
        try:
            if ray:
                start_ray(bed, gpus_per_node=gpus_per_node, gpu_model=gpu_model)
            else:
                start_slurm(bed)
        except BaseException:
            down(name)
            raise
    return bed


def start_slurm(bed: Testbed) -> None:
    """A Slurm whose control plane (MariaDB, slurmdbd, slurmctld) runs in node 0 and a slurmd in every other node,
    with its own NodeAddr (nodes gw0, gw1, ...: :class:`~gpuweave.live.slurm_sandbox.SlurmSandbox`'s fake GPUs).
    Its daemons outlive this process; :func:`down` ends them."""
    from gpuweave.live.slurm_sandbox import SlurmSandbox, missing_requirements  # the sandbox enters namespaces here

    if len(bed.nodes) < 2:
        raise InputError("a testbed with Slurm needs 2 or more nodes (the control plane and slurmd nodes)")
    problem = missing_requirements()
    if problem:
        raise InputError(problem)
    bed.slurm_dir = f"/tmp/gwtb-{bed.name}/slurm"
    with _locked():
        _state_file(bed.name).write_text(json.dumps(bed.describe()))
    box = SlurmSandbox(
        Path(bed.slurm_dir),
        namespaces=[(n.namespace, n.addr) for n in bed.nodes[1:]],
        control=(bed.nodes[0].namespace, bed.nodes[0].addr),
    ).start()
    bed.slurm_conf = str(box.conf)
    with _locked():
        _state_file(bed.name).write_text(json.dumps(bed.describe()))


def _make_network(bed: Testbed, nodes: int) -> None:
    prefix = f"{SUBNET_PREFIX}.{bed.subnet}"
    _ip("link", "add", bed.bridge, "type", "bridge")
    _ip("addr", "add", f"{bed.host_addr}/24", "dev", bed.bridge)
    _ip("link", "set", bed.bridge, "up")
    for i in range(nodes):
        node = TestbedNode(f"gw-{bed.name}-{i}", f"{prefix}.{FIRST_NODE_OCTET + i}", f"gwv{bed.name}{i}")
        bed.nodes.append(node)
        _state_file(bed.name).write_text(json.dumps(bed.describe()))
        _ip("netns", "add", node.namespace)
        _ip("link", "add", node.veth, "type", "veth", "peer", "name", NODE_LINK, "netns", node.namespace)
        _ip("link", "set", node.veth, "master", bed.bridge, "up")
        _ip("-n", node.namespace, "addr", "add", f"{node.addr}/24", "dev", NODE_LINK)
        _ip("-n", node.namespace, "link", "set", NODE_LINK, "up")
        _ip("-n", node.namespace, "link", "set", "lo", "up")
    _write_hosts(bed)


def _write_hosts(bed: Testbed) -> None:
    """``/etc/netns/<namespace>/hosts`` (``ip netns exec`` mounts it over /etc/hosts): this machine's hosts plus every
    node's name, so a peer's address has a name (c10d warns on every connection from an address without one)."""
    try:
        base = Path("/etc/hosts").read_text()
    except OSError:
        base = "127.0.0.1 localhost\n"
    lines = "".join(f"{n.addr} {n.namespace}\n" for n in bed.nodes) + f"{bed.host_addr} gw-{bed.name}-host\n"
    for node in bed.nodes:
        folder = NETNS_ETC / node.namespace
        folder.mkdir(parents=True, exist_ok=True)
        # first, so it wins: inside its namespace this machine's name is the node's address, which a program that
        # tells its peers "reach me at my host name" (srun, c10d) must give, not the host's loopback or LAN address
        own = f"{node.addr} {socket.gethostname()}\n"
        (folder / "hosts").write_text(own + base.rstrip("\n") + "\n" + lines)


def _ray_start(bed: Testbed, node: int, *args: str, env: dict[str, str] | None = None) -> None:
    ns = bed.nodes[node]
    argv = ["ip", "netns", "exec", ns.namespace, sys.executable, "-m", "ray.scripts.scripts", "start"]
    argv += ["--node-ip-address", ns.addr, "--disable-usage-stats", "--object-store-memory", "80000000", *args]
    result = subprocess.run(
        argv, env=dict(os.environ, **(env or {})), capture_output=True, text=True, timeout=RAY_JOIN_S * 2
    )
    if result.returncode != 0:
        tail = " | ".join((result.stderr or result.stdout).strip().splitlines()[-3:])
        raise InputError(f"cannot start Ray on testbed node {node} ({ns.namespace}): {tail}")


def start_ray(bed: Testbed, *, gpus_per_node: int, gpu_model: str) -> None:
    """A Ray head on node 0 and a Ray worker node on every other, each worker offering ``gpus_per_node`` GPUs of
    ``gpu_model`` (as ``gpu_type:<MODEL>`` resources: the GPUs are emulated). Waits until every node has joined."""
    if len(bed.nodes) < 2:
        raise InputError("a testbed with Ray needs 2 or more nodes (a head and workers)", field="nodes")
    bed.ray_temp = f"/tmp/gwtb-{bed.name}"
    bed.ray_address = f"{bed.nodes[0].addr}:{RAY_PORT}"
    bed.gpu_model, bed.gpus_per_node = gpu_model, gpus_per_node
    with _locked():
        _state_file(bed.name).write_text(json.dumps(bed.describe()))
    head = ["--head", "--port", str(RAY_PORT), "--num-cpus", "0", "--num-gpus", "0", "--include-dashboard", "false"]
    _ray_start(bed, 0, *head, "--temp-dir", bed.ray_temp, env=RAY_HEALTH_ENV)
    resources = json.dumps({f"gpu_type:{gpu_model}": gpus_per_node})
    for i in range(1, len(bed.nodes)):
        _ray_start(
            bed, i, "--address", bed.ray_address, "--num-cpus", "4", "--num-gpus", "0", "--resources", resources,
            env=RAY_HEALTH_ENV,
        )  # fmt: skip
    _wait_for_ray(bed, len(bed.nodes))


def _wait_for_ray(bed: Testbed, count: int) -> None:
    """Until the head lists ``count`` live nodes (one driver in the head's namespace polls; importing Ray costs a
    second of CPU, so it is not started again for every look)."""
    probe = (
        "import sys,time,ray;ray.init(address=sys.argv[1],logging_level='ERROR',log_to_driver=False)\n"
        "n=int(sys.argv[2]);end=time.monotonic()+float(sys.argv[3]);alive=0\n"
        "while time.monotonic()<end:\n"
        " alive=sum(1 for x in ray.nodes() if x.get('Alive'))\n"
        " if alive>=n: break\n"
        " time.sleep(0.2)\n"
        "print(alive)"
    )
    argv = ["ip", "netns", "exec", bed.nodes[0].namespace, sys.executable, "-c", probe, bed.ray_address]
    result = subprocess.run(
        [*argv, str(count), str(RAY_JOIN_S)], capture_output=True, text=True, timeout=RAY_JOIN_S * 2,
        env=dict(os.environ, **RAY_HEALTH_ENV),
    )  # fmt: skip
    seen = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr.strip()[-200:]
    if seen != str(count):
        raise InputError(f"the testbed's Ray did not reach {count} live nodes within {RAY_JOIN_S:g} s (last: {seen})")


def down(name: str) -> bool:
    """Remove testbed ``name`` and everything in it; False when there was none."""
    with _locked():
        bed = load(name)
        if bed is None:
            return False
        _remove(bed)
        return True


def _remove(bed: Testbed) -> None:
    if bed.slurm_dir:
        from gpuweave.live.slurm_sandbox import stop_recorded

        try:
            stop_recorded(Path(bed.slurm_dir))  # munged runs on this machine, not in a namespace
        except RuntimeError:  # a daemon that outlived SIGKILL: the namespaces' kill below still runs
            pass
        shutil.rmtree(f"/tmp/gwtb-{bed.name}", ignore_errors=True)
    for i in range(len(bed.nodes)):
        _kill_namespace(bed, i)
    for node in bed.nodes:
        # the host's end first: deleting a veth deletes its peer, while a deleted namespace can outlive its name
        # (the kernel dismantles it later: seen keeping its links, and so their names, for minutes)
        subprocess.run(["ip", "link", "del", node.veth], capture_output=True)
        subprocess.run(["ip", "netns", "del", node.namespace], capture_output=True)
        shutil.rmtree(NETNS_ETC / node.namespace, ignore_errors=True)
    subprocess.run(["ip", "link", "del", bed.bridge], capture_output=True)
    if bed.ray_temp:
        shutil.rmtree(bed.ray_temp, ignore_errors=True)
    _state_file(bed.name).unlink(missing_ok=True)


def _kill_namespace(bed: Testbed, node: int, wait_s: float = 10.0) -> None:
    """SIGKILL every process in the node's namespace (a testbed's processes keep nothing worth a clean exit: Ray's
    daemons take seconds to honour SIGTERM), and wait until they are gone."""
    pids = bed.pids(node)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait_s
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if _alive(p)]
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as gone
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
