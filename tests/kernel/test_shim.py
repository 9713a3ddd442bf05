"""The C LD_PRELOAD shim without a GPU (spec §4.5): stub CUDA libraries, C launchers, the real server.

Runtime API: ``stub/stub_cudart.c`` is built as ``libcudart.so.12`` and records every forwarded
``cudaLaunchKernel`` (symbol, dims, CLOCK_MONOTONIC time) in a file; ``stub/launch_prog.c`` launches
N "kernels" (two exported functions, one static) from T threads. Driver API (needs the CUDA toolkit's
``cuda.h`` for the real signatures): ``stub/stub_cuda.c`` is built as ``libcuda.so.1`` with a virtual
device clock, ``stub/drv_prog.c`` launches through every entry point (direct, dlsym, cuGetProcAddress and
_v2, Ex, cooperative, graph). Loopback traffic only; every subprocess has a timeout.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.kernel.ids import KernelId, clean_kernel_name
from gpuweave.kernel.profile import Profile
from gpuweave.kernel.protocol import Done, Launch, Register, Unregister, decode, encode
from gpuweave.kernel.server import ServerThread

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")

STUB_DIR = Path(__file__).parent / "stub"
FUNCS = ["fk_alpha_kernel", "fk_beta_tile(float*, float*, int)", None]  # None: the static one -> ?0x<ptr>
BETA = "_Z12fk_beta_tilePfS_i"  # the symbol; kernel IDs carry it demangled
SLOW_OK = {"FIKIT_TIMEOUT_MS": "250"}  # against a live server: tolerate a loaded CI machine before failing open


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from gpuweave.kernel.shim import build_shim

    d = tmp_path_factory.mktemp("shim")
    shim = build_shim(d / "lib")
    stub = d / "libcudart.so.12"
    prog = d / "launch_prog"
    subprocess.run(
        [
            "cc",
            "-shared",
            "-fPIC",
            "-O2",
            "-Wl,-soname,libcudart.so.12",
            "-o",
            str(stub),
            str(STUB_DIR / "stub_cudart.c"),
            "-ldl",
        ],
        check=True,
        timeout=60,
    )
    subprocess.run(
        ["cc", "-O2", "-rdynamic", "-o", str(prog), str(STUB_DIR / "launch_prog.c"), str(stub), "-pthread"],
        check=True,
        timeout=60,
    )
    return {"dir": d, "shim": shim, "prog": prog}


_runs = iter(range(10**6))


def run_prog(built, n: int, threads: int = 1, timeout: float = 10.0, **env_extra: str):
    """Run the launcher under the shim; returns (process, stub records, hidden pointer, seconds)."""
    log = built["dir"] / f"stub-{next(_runs)}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIKIT_", "STUB_"))}
    env.update(LD_PRELOAD=str(built["shim"]), LD_LIBRARY_PATH=str(built["dir"]), STUB_LOG=str(log), **env_extra)
    t0 = time.monotonic()
    args = [str(built["prog"]), str(n)] + ([str(threads)] if threads > 1 else [])
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    secs = time.monotonic() - t0
    records = []
    if log.exists():
        for line in log.read_text().splitlines():
            name, g, b, t = line.split(" ")
            name = FUNCS[1] if name == BETA else name  # the stub logs the symbol, IDs carry it demangled
            records.append((name, tuple(map(int, g[1:].split(","))), tuple(map(int, b[1:].split(","))), int(t[1:])))
    hidden = p.stdout.splitlines()[0].split("=")[1] if p.stdout.startswith("hidden=") else None
    return p, records, hidden, secs


def expected(i: int, t: int, hidden: str, names=FUNCS) -> tuple[str, tuple, tuple]:
    name = names[(t + i) % 3] or f"?{int(hidden, 16):#x}"
    return name, (i + 1, t + 1, 1), (32 * (1 + i % 4), 1, 1)


class Recorder:
    """Wrap a running ServerThread's handler to keep every decoded datagram (in arrival order)."""

    def __init__(self, st: ServerThread) -> None:
        self.msgs: list = []
        orig = st.server.handle

        def handle(data, addr):
            try:
                self.msgs.append(decode(data))
            except Exception as exc:  # noqa: BLE001 - recorded, then the server answers the error
                self.msgs.append(exc)
            orig(data, addr)

        st.server.handle = handle

    def of(self, cls):
        return [m for m in self.msgs if isinstance(m, cls)]

    def unregistered(self) -> int:
        """How many programs unregistered. Not the count of Unregister datagrams: the shim re-sends its Unregister
        until acknowledged, so on a loaded machine an ack that arrives after FIKIT_TIMEOUT_MS brings a second one
        (the server answers each, idempotently)."""
        return len({m.pid for m in self.of(Unregister)})


def wait_for(pred, timeout=15.0):
    # Returns as soon as pred holds; a generous bound, since a loaded 2-core machine (the full run, -n 2) can delay
    # the program's last datagrams and this process's server thread by seconds.
    end = time.monotonic() + timeout
    while time.monotonic() < end and not pred():
        time.sleep(0.01)
    return pred()


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ real server
def test_shim_gates_launches_through_the_real_server(built):
    n = 24
    with ServerThread(record_gos=True) as st:
        rec = Recorder(st)
        host, port = st.address
        p, records, hidden, _ = run_prog(built, n, FIKIT_SCHEDULER=f"{host}:{port}", FIKIT_PRIORITY="3", **SLOW_OK)
        assert p.returncode == 0, p.stderr  # also: no error left behind by the failed cudaFuncGetName probes
        assert wait_for(lambda: rec.unregistered() == 1), p.stderr
        stats = st.call(st.server.stats)
        gos = list(st.server.gos)
    regs = rec.of(Register)
    prog_argv = [str(built["prog"]), str(n)]
    key = hashlib.sha256(
        (Path(os.path.realpath(built["prog"])).name + "\0" + "\0".join(prog_argv)).encode()
    ).hexdigest()
    assert len(regs) == 1 and regs[0].task_key == key and regs[0].priority == 3 and regs[0].mode == "share"
    pid = regs[0].pid
    launches = rec.of(Launch)
    want = [expected(i, 0, hidden) for i in range(n)]
    want_ids = [KernelId(nm, b, g).canonical() for nm, g, b in want]
    assert [m.seq for m in launches] == list(range(1, n + 1))
    assert [m.kernel_id for m in launches] == want_ids
    assert all(m.pid == pid and m.tid > 0 and m.t_client_ns > 0 for m in launches)
    assert want_ids[0] == "fk_alpha_kernel|b32,1,1|g1,1,1" and want_ids[1] == f"{FUNCS[1]}|b64,1,1|g2,1,1"
    assert all(KernelId.parse(k).canonical() == k for k in want_ids)
    # the stub saw every launch, in order, with the dims the program passed
    assert [(nm, g, b) for nm, g, b, _ in records] == want
    assert [g.kid for g in gos] == want_ids and [g.seq for g in gos] == list(range(1, n + 1))
    assert stats["errors"] == 0 and stats["gos"] == n and stats["clients"] == 0 and stats["dropped"] == 0
    assert (
        rec.of(Unregister)[0].pid == pid and isinstance(rec.msgs[0], Register) and isinstance(rec.msgs[-1], Unregister)
    )


def test_shim_is_thread_safe(built):
    n, threads = 25, 4
    with ServerThread(record_gos=True) as st:
        rec = Recorder(st)
        host, port = st.address
        p, records, hidden, _ = run_prog(
            built,
            n,
            threads,
            FIKIT_SCHEDULER=f"{host}:{port}",
            FIKIT_PRIORITY="0",
            FIKIT_TASK_KEY="svc.threads",
            FIKIT_MODE="measure",
            FIKIT_SHIM_VERBOSE="1",  # the shim's own account of its exit, should the Unregister not arrive
            **SLOW_OK,
        )
        assert p.returncode == 0, p.stderr
        assert wait_for(lambda: rec.unregistered() == 1), (
            p.stderr,
            Counter(type(m).__name__ for m in rec.msgs),
            [type(m).__name__ for m in rec.msgs][-12:],
        )
        stats = st.call(st.server.stats)
    regs = rec.of(Register)
    assert len(regs) == 1 and regs[0].task_key == "svc.threads" and regs[0].mode == "measure" and regs[0].priority == 0
    launches = rec.of(Launch)
    assert sorted(m.seq for m in launches) == list(range(1, n * threads + 1))  # nothing lost or duplicated
    assert len({m.tid for m in launches}) == threads
    want = sorted(
        KernelId(nm, b, g).canonical()
        for t in range(threads)
        for nm, g, b in (expected(i, t, hidden) for i in range(n))
    )
    assert sorted(m.kernel_id for m in launches) == want
    assert len(records) == n * threads
    for t in range(threads):  # each thread's launches reach the runtime in its program order
        mine = [r for r in records if r[1][1] == t + 1]
        assert [(nm, g, b) for nm, g, b, _ in mine] == [expected(i, t, hidden) for i in range(n)]
    assert stats["errors"] == 0 and stats["gos"] == n * threads


def test_shim_prefers_cudaFuncGetName_and_cleans_names_like_python(built):
    with ServerThread() as st:
        rec = Recorder(st)
        host, port = st.address
        p, records, hidden, _ = run_prog(built, 3, FIKIT_SCHEDULER=f"{host}:{port}", STUB_FUNCNAME="1", **SLOW_OK)
        assert p.returncode == 0, p.stderr
        p2, records2, hidden2, _ = run_prog(built, 3, FIKIT_SCHEDULER=f"{host}:{port}", STUB_FUNCNAME="odd", **SLOW_OK)
        assert p2.returncode == 0, p2.stderr
        assert wait_for(lambda: rec.unregistered() == 2)
        stats = st.call(st.server.stats)
    ids = [m.kernel_id for m in rec.of(Launch)]
    assert ids[:3] == [
        "rt_fk_alpha_kernel|b32,1,1|g1,1,1",
        "rt__Z12fk_beta_tilePfS_i|b64,1,1|g2,1,1",  # not a mangled name: left as it is
        f"?{int(hidden, 16):#x}|b96,1,1|g3,1,1",
    ]
    # odd name: '|' -> '/', non-ASCII bytes -> '?', cut to 880 bytes + FNV-1a-64 of the raw bytes (as Python does)
    raw = b'odd|na"me\xc3\xa9_' + b"x" * 1500
    assert ids[3] == f"{clean_kernel_name(raw.decode())}|b32,1,1|g1,1,1" and len(ids[3]) <= 1024
    assert ids[3].startswith('odd/na"me??_xxx') and "~h" in ids[3]
    assert ids[4] == f"{FUNCS[1]}|b64,1,1|g2,1,1"  # odd only for alpha; beta falls back to dladdr, demangled
    assert stats["errors"] == 0


# ------------------------------------------------------------------ fail-open and configuration
def test_shim_fails_open_without_a_server(built):
    n = 30
    p, records, hidden, secs = run_prog(built, n, FIKIT_SCHEDULER=f"127.0.0.1:{free_udp_port()}")
    assert p.returncode == 0 and p.stdout.strip().endswith(f"done {n}")
    assert [(nm, g, b) for nm, g, b, _ in records] == [expected(i, 0, hidden) for i in range(n)]
    assert p.stderr.count("failing open") == 1 and "no answer to register" in p.stderr
    assert secs < 5.0  # default: 5 tries x 50 ms once, then every launch passes ungated


def test_shim_unregisters_at_exit_even_when_its_register_was_never_answered(built):
    # A server too busy to answer may still have taken the register: the program tells it at exit that it is gone,
    # once and without waiting (a server that is gone must not delay the exit), so no ghost task holds the gate.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.settimeout(5.0)
        p, records, _, secs = run_prog(
            built,
            4,
            FIKIT_SCHEDULER="127.0.0.1:%d" % silent.getsockname()[1],
            FIKIT_TIMEOUT_MS="30",
            FIKIT_RETRIES="2",
            FIKIT_SHIM_VERBOSE="1",
        )
        assert p.returncode == 0 and len(records) == 4 and "no answer to register" in p.stderr, p.stderr
        assert "unregister sent once, not awaited" in p.stderr and secs < 5.0
        kinds = []
        silent.setblocking(False)
        while True:
            try:
                kinds.append(json.loads(silent.recv(65536)))
            except BlockingIOError:
                break
    assert {m["t"] for m in kinds} == {"register", "unregister"}, kinds
    assert kinds[-1]["t"] == "unregister" and [m["t"] for m in kinds].count("unregister") == 1
    assert kinds[-1]["pid"] == kinds[0]["pid"]


def test_shim_off_and_bad_settings_pass_through_untouched(built):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        addr = "127.0.0.1:%d" % listener.getsockname()[1]
        cases = [
            ({"FIKIT_MODE": "off"}, ""),
            ({"FIKIT_MODE": "Bogus"}, "FIKIT_MODE"),
            ({"FIKIT_PRIORITY": "12"}, "FIKIT_PRIORITY"),
            ({"FIKIT_PRIORITY": "x"}, "FIKIT_PRIORITY"),
            ({"FIKIT_TASK_KEY": "a/b"}, "FIKIT_TASK_KEY"),
            ({"FIKIT_SCHEDULER": "nohostport"}, "FIKIT_SCHEDULER"),
            ({"FIKIT_TIMEOUT_MS": "0"}, "FIKIT_TIMEOUT_MS"),
        ]
        for env, complaint in cases:
            env = {"FIKIT_SCHEDULER": addr, **env}
            p, records, hidden, secs = run_prog(built, 6, **env)
            assert p.returncode == 0 and len(records) == 6 and secs < 5.0, env
            if complaint:
                assert complaint in p.stderr and "not gated" in p.stderr, (env, p.stderr)
            else:
                assert p.stderr == ""
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.recv(4096)  # nothing was ever sent to the scheduler address


def test_shim_sends_the_token_a_token_server_requires(built):
    """Issue 13: with `kernel serve --token`, a shim with the same FIKIT_TOKEN is gated as usual; one without it is
    refused and fails open (one warning); a malformed FIKIT_TOKEN disables gating with one warning."""
    n = 8
    with ServerThread(record_gos=True, token="s3cret-Token_1") as st:
        host, port = st.address
        p, records, _, _ = run_prog(built, n, FIKIT_SCHEDULER=f"{host}:{port}", FIKIT_TOKEN="s3cret-Token_1", **SLOW_OK)
        assert p.returncode == 0 and len(records) == n, p.stderr
        assert wait_for(lambda: st.call(st.server.stats)["clients"] == 0)
        stats = st.call(st.server.stats)
        assert stats["gos"] == n and stats["errors"] == 0
        p, records, _, _ = run_prog(
            built, n, FIKIT_SCHEDULER=f"{host}:{port}", FIKIT_RETRIES="2", FIKIT_SHIM_VERBOSE="1", **SLOW_OK
        )
        assert p.returncode == 0 and len(records) == n and "registration refused" in p.stderr, p.stderr
        assert "exit: registration refused: no unregister sent" in p.stderr  # refused: the server holds nothing
        assert st.call(st.server.stats)["gos"] == n  # nothing of the tokenless run was gated
        p, records, _, _ = run_prog(built, 3, FIKIT_SCHEDULER=f"{host}:{port}", FIKIT_TOKEN='bad"token')
        assert p.returncode == 0 and len(records) == 3 and "FIKIT_TOKEN" in p.stderr and "not gated" in p.stderr


class ScriptedServer:
    """A hand-driven UDP peer: drops, 'wait's, delays, unknown_pid and junk, to test the shim's protocol side."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.01)
        self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.registers: list[dict] = []
        self.launch_tx: dict[int, int] = {}
        self.kernel_ids: dict[int, str] = {}
        self.go_ns: dict[int, int] = {}
        self.first_launch_ns: int | None = None
        self.unregisters = 0
        self.delayed: list[tuple[int, int, object]] = []  # (due_ns, seq, addr)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def go(self, pid, seq, addr):
        self.go_ns.setdefault(seq, time.monotonic_ns())
        self.sock.sendto(encode("go", pid=pid, seq=seq, tid=0), addr)

    def loop(self) -> None:
        deadline = time.monotonic() + 8.0
        pid = None
        while not self.stop.is_set() and time.monotonic() < deadline:
            now = time.monotonic_ns()
            for item in [d for d in self.delayed if d[0] <= now]:
                self.delayed.remove(item)
                self.go(pid, item[1], item[2])
            try:
                data, addr = self.sock.recvfrom(65536)
            except socket.timeout:
                continue
            m = json.loads(data)
            if m["t"] == "register":
                pid = m["pid"]
                self.registers.append(m)
                self.sock.sendto(encode("register_ack", pid=pid, mode="share", profile_loaded=False), addr)
            elif m["t"] == "unregister":
                self.unregisters += 1
                if self.unregisters > 2:  # the first two are 'lost': the shim must re-send until acknowledged
                    self.sock.sendto(encode("unregister_ack", pid=m["pid"]), addr)
            elif m["t"] == "launch":
                seq = m["seq"]
                self.first_launch_ns = self.first_launch_ns or time.monotonic_ns()
                tx = self.launch_tx[seq] = self.launch_tx.get(seq, 0) + 1
                self.kernel_ids[seq] = m["kernel_id"]
                if seq in self.go_ns:
                    self.go(pid, seq, addr)  # retransmission of a released seq
                elif seq == 1:
                    if tx == 1:
                        continue  # lost: the shim must retransmit the same seq
                    self.sock.sendto(encode("wait", pid=pid, seq=seq), addr)
                    if not any(d[1] == 1 for d in self.delayed):
                        self.delayed.append((time.monotonic_ns() + 150_000_000, 1, addr))
                elif seq == 2 and tx == 1:
                    self.sock.sendto(encode("error", code="unknown_pid", message="forgot you", pid=pid, seq=seq), addr)
                elif seq == 3:
                    for junk in (
                        b"\xff\xfe",
                        b"[1,2]",
                        b"{" * 10,
                        b"x" * 5000,
                        encode("go", pid=pid, seq=1, tid=0),
                        encode("go", pid=pid + 1, seq=3, tid=0),
                        encode("error", code="internal", message="m"),
                    ):
                        self.sock.sendto(junk, addr)
                    self.go(pid, seq, addr)
                else:
                    self.go(pid, seq, addr)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


def test_shim_protocol_retransmit_wait_reregister_and_gating(built):
    n = 6
    with ScriptedServer() as srv:
        p, records, hidden, secs = run_prog(
            built, n, FIKIT_SCHEDULER=srv.address, FIKIT_TIMEOUT_MS="40", FIKIT_TASK_KEY="scripted", FIKIT_PRIORITY="7"
        )
        assert wait_for(lambda: srv.unregisters == 3)
        time.sleep(0.2)  # an acknowledged unregister is the last one
        assert srv.unregisters == 3
    assert p.returncode == 0 and "failing open" not in p.stderr, p.stderr
    assert len(srv.registers) == 2 and all(r["priority"] == 7 and r["task_key"] == "scripted" for r in srv.registers)
    assert srv.launch_tx[1] >= 2 and srv.launch_tx[2] >= 2  # lost datagram retransmitted; re-sent after re-register
    assert sorted(srv.go_ns) == list(range(1, n + 1))
    assert [srv.kernel_ids[s] for s in range(1, n + 1)] == [
        KernelId(nm, b, g).canonical() for nm, g, b in (expected(i, 0, hidden) for i in range(n))
    ]
    assert len(records) == n
    for seq, (_, _, _, t_launch) in enumerate(records, 1):
        assert t_launch >= srv.go_ns[seq]  # the launch reached the runtime only after its GO
    assert records[0][3] - srv.first_launch_ns >= 150_000_000  # held while the server said 'wait'
    assert secs < 5.0


def test_build_shim_errors_and_cli(built, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from gpuweave.cli import app
    from gpuweave.kernel.shim import build_shim

    res = CliRunner().invoke(app, ["fikit", "build-shim", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o" / "libfikit_shim.so").is_file() and "LD_PRELOAD=" in res.output
    assert list((tmp_path / "o").iterdir()) == [tmp_path / "o" / "libfikit_shim.so"]  # no temp files left
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(InputError, match="no C compiler"):
        build_shim(tmp_path / "x")
    monkeypatch.setenv("CC", "cc -DFIKIT_BROKEN=1 -include /nonexistent.h")
    with pytest.raises(InputError, match="compiling the FIKIT shim failed"):
        build_shim(tmp_path / "y")
    assert not (tmp_path / "y" / "libfikit_shim.so").exists()


# ------------------------------------------------------------------ driver API (stub libcuda.so.1, real cuda.h)
CUDA_INCLUDE = next((p for p in ("/usr/local/cuda/include", "/usr/include") if Path(p, "cuda.h").exists()), None)
needs_cuda_h = pytest.mark.skipif(CUDA_INCLUDE is None, reason="needs the CUDA toolkit's cuda.h")
DRV_NAMES = ["fk_saxpy_f(float*, float*, float)", "fk_plain_c", "void fk::tile<4>(int*)"]
DRV_APIS = {
    "cuLaunchKernel",
    "cuLaunchKernel_ptsz",
    "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel",
    "cuGraphLaunch",
}


def drv_expected(i: int) -> str:
    """Kernel ID of launch i of drv_prog (see its header)."""
    if i % 7 == 6:
        return "cudaGraphExec#0|b1,1,1|g1,1,1"
    return f"{DRV_NAMES[i % 3]}|b64,1,1|g{1 + i % 4},1,1"


@pytest.fixture(scope="module")
def drv(built):
    d = built["dir"] / "drv"
    d.mkdir()
    inc = f"-I{CUDA_INCLUDE}"
    cc = ["cc", "-O2", inc]
    subprocess.run(
        [
            *cc,
            "-shared",
            "-fPIC",
            "-Wl,-soname,libcuda.so.1",
            "-o",
            str(d / "libcuda.so.1"),
            str(STUB_DIR / "stub_cuda.c"),
            "-ldl",
            "-pthread",
        ],
        check=True,
        timeout=60,
    )
    subprocess.run(
        [*cc, "-o", str(d / "drv_prog"), str(STUB_DIR / "drv_prog.c"), str(d / "libcuda.so.1"), "-ldl", "-pthread"],
        check=True,
        timeout=60,
    )
    return {"dir": d, "prog": d / "drv_prog", "shim": built["shim"]}


def run_drv(drv, n: int, threads: int, *extra: str, timeout: float = 20.0, **env_extra: str):
    log = drv["dir"] / f"stub-{next(_runs)}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIKIT_", "STUB_"))}
    env.update(LD_PRELOAD=str(drv["shim"]), LD_LIBRARY_PATH=str(drv["dir"]), STUB_LOG=str(log), **env_extra)
    p = subprocess.run(
        [str(drv["prog"]), str(n), str(threads), *extra], env=env, capture_output=True, text=True, timeout=timeout
    )
    lines = log.read_text().splitlines() if log.exists() else []
    return p, [line.split(" ")[:4] for line in lines]


@needs_cuda_h
def test_shim_compiles_against_the_real_cuda_h(built, tmp_path):
    """The shim declares the driver ABI itself; with -DFIKIT_CHECK_CUDA_H the compiler checks it against cuda.h."""
    from gpuweave.kernel.shim import SOURCE

    proc = subprocess.run(
        [
            "cc",
            "-shared",
            "-fPIC",
            "-O2",
            "-Werror",
            "-DFIKIT_CHECK_CUDA_H",
            f"-I{CUDA_INCLUDE}",
            "-o",
            str(tmp_path / "checked.so"),
            str(SOURCE),
            "-ldl",
            "-pthread",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "checked.so").stat().st_size > 0


@needs_cuda_h
def test_every_driver_entry_point_is_gated_and_completions_reach_the_server(drv):
    n, threads = 21, 2
    with ServerThread(record_gos=True) as st:
        rec = Recorder(st)
        host, port = st.address
        p, launched = run_drv(
            drv, n, threads, FIKIT_SCHEDULER=f"{host}:{port}", FIKIT_TASK_KEY="drv", **SLOW_OK, STUB_MS_PER_BLOCK="0.2"
        )
        assert p.returncode == 0, p.stderr
        assert wait_for(lambda: rec.unregistered() == 1)
        stats = st.call(st.server.stats)
    assert {api for api, *_ in launched} == DRV_APIS  # every path reached the stub driver...
    launches = rec.of(Launch)
    assert len(launched) == len(launches) == n * threads  # ...and every launch was gated exactly once
    assert sorted(m.kernel_id for m in launches) == sorted(drv_expected(i) for _ in range(threads) for i in range(n))
    assert sorted(m.seq for m in launches) == list(range(1, n * threads + 1))
    assert sorted(m.seq for m in rec.of(Done)) == list(range(1, n * threads + 1))  # a completion for each
    assert stats["errors"] == 0 and stats["completions"] == n * threads and "failing open" not in p.stderr


@needs_cuda_h
@pytest.mark.parametrize("mode", ["share", "measure"])
def test_a_global_mode_capture_survives_the_agents_event_polling(drv, mode, tmp_path):
    """A program capturing a CUDA graph in the default (global) mode while earlier launches' events are still
    outstanding: the agent's cuEventQuery must not invalidate the capture (it broke cudaStreamEndCapture on an
    H100 before the agent declared itself relaxed), and the captured launches are not gated one by one."""
    n = 6
    env = {"STUB_MS_PER_BLOCK": "10"}  # the 6 launches run about 150 ms: their events outlast the capture
    if mode == "measure":
        env.update(FIKIT_MODE="measure", FIKIT_SCHEDULER="none", FIKIT_MEASURE_OUT=str(tmp_path / "m.json"))
        p, launched = run_drv(drv, n, 1, "capture", FIKIT_TASK_KEY="cap", **env)
        assert p.returncode == 0 and "capture ok" in p.stdout, p.stdout + p.stderr
        assert len(json.loads((tmp_path / "m.json").read_text())["kernels"]) == n  # the 3 captured ones are not
        return
    with ServerThread(record_gos=True) as st:
        rec = Recorder(st)
        host, port = st.address
        p, launched = run_drv(drv, n, 1, "capture", FIKIT_SCHEDULER=f"{host}:{port}", FIKIT_TASK_KEY="cap", **env)
        assert p.returncode == 0 and "capture ok" in p.stdout, p.stdout + p.stderr
        assert wait_for(lambda: rec.unregistered() == 1)
    assert len(launched) == n + 3 and len(rec.of(Launch)) == n  # captured launches reach the driver ungated
    assert len(rec.of(Done)) == n


@needs_cuda_h
def test_measure_mode_writes_a_profile_whose_ids_match_the_gated_launches(drv, tmp_path):
    from typer.testing import CliRunner

    from gpuweave.cli import app

    out = tmp_path / "run.json"
    p, launched = run_drv(
        drv,
        14,
        1,
        FIKIT_MODE="measure",
        FIKIT_SCHEDULER="none",
        FIKIT_MEASURE_OUT=str(out),
        FIKIT_TASK_KEY="drvtask",
        STUB_MS_PER_BLOCK="0.5",
    )
    assert p.returncode == 0, p.stderr
    kernels = json.loads(out.read_text())["kernels"]
    assert [k["id"] for k in kernels] == [drv_expected(i) for i in range(14)]
    for i, k in enumerate(kernels):  # the stub device runs 0.5 ms per block in x; graphs 1 block
        want = 0.5 * (1 if i % 7 == 6 else 1 + i % 4)
        assert want <= k["dur"] < want + 0.4 and k["gap_after"] >= 0, (i, k)
    res = CliRunner().invoke(app, ["kernel", "profile", str(out), "--task-key", "drvtask", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    prof = Profile.load(tmp_path / "drvtask.json")
    with ServerThread(profile_dir=tmp_path) as st:
        rec = Recorder(st)
        host, port = st.address
        p2, _ = run_drv(
            drv, 14, 1, FIKIT_SCHEDULER=f"{host}:{port}", FIKIT_TASK_KEY="drvtask", STUB_MS_PER_BLOCK="0.1", **SLOW_OK
        )
        assert p2.returncode == 0, p2.stderr
        assert wait_for(lambda: rec.unregistered() == 1)
    ids = {m.kernel_id for m in rec.of(Launch)}
    assert ids and ids <= set(prof.sk)  # the server finds every gated kernel in the shim-made profile


@needs_cuda_h
def test_an_agent_stuck_at_exit_still_unregisters_from_the_exit_handler(drv):
    # The agent polls its launch's end event with a 5 s query (a stuck or starved agent): the exit handler gives up
    # joining it after 2 s and sends the unregister itself, so the server frees the task at once, not after its
    # silence timeout.
    with ServerThread() as st:
        rec = Recorder(st)
        host, port = st.address
        p, launched = run_drv(
            drv, 1, 1, FIKIT_SCHEDULER=f"{host}:{port}", FIKIT_SHIM_VERBOSE="1", STUB_QUERY_MS="5000", **SLOW_OK
        )
        assert p.returncode == 0 and len(launched) == 1, p.stderr
        assert "did not finish within 2 s" in p.stderr and "unregister sent once from the exit handler" in p.stderr
        assert wait_for(lambda: rec.unregistered() == 1)
        assert st.call(st.server.stats)["clients"] == 0


@needs_cuda_h
def test_fail_open_re_probes_and_gates_again_when_the_server_comes_back(drv):
    port = free_udp_port()
    env = dict(
        FIKIT_SCHEDULER=f"127.0.0.1:{port}",
        FIKIT_TIMEOUT_MS="20",
        FIKIT_RETRIES="2",
        FIKIT_REPROBE_MS="100",
        FIKIT_TASK_KEY="back",
        STUB_MS_PER_BLOCK="0.01",
        STUB_LAUNCH_US="3000",
    )
    log_env = {k: v for k, v in os.environ.items() if not k.startswith(("FIKIT_", "STUB_"))}
    log_env.update(LD_PRELOAD=str(drv["shim"]), LD_LIBRARY_PATH=str(drv["dir"]), **env)
    proc = subprocess.Popen([str(drv["prog"]), "400", "1"], env=log_env, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)  # failed open by now (2 x 20 ms); launching goes on for about 1.2 s (400 x 3 ms)
        with ServerThread(port=port) as st:
            rec = Recorder(st)
            assert wait_for(lambda: len(rec.of(Launch)) > 0)
            _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert err.count("failing open") == 1 and "answers again" in err
