"""Real path: protocol, server (fake clock and loopback UDP), client, twin test, load test, fuzzing."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuweave.errors import InputError
from gpuweave.kernel.client import ClientConfig, FikitClient, parse_address
from gpuweave.kernel.profile import Profile
from gpuweave.kernel.protocol import MAX_DATAGRAM, ProtocolError, decode, encode
from gpuweave.kernel.server import FakeClock, FikitServer, ServerThread
from gpuweave.kernel.sim import Service, SimConfig, Workload, simulate
from gpuweave.kernel.traces import hi_trace, lo_trace


class Outbox:
    def __init__(self):
        self.sent: list[tuple[dict, object]] = []

    def __call__(self, data: bytes, addr: object) -> None:
        self.sent.append((json.loads(data), addr))

    def of(self, t: str) -> list[dict]:
        return [m for m, _ in self.sent if m["t"] == t]


def msg(t, **kw) -> bytes:
    return encode(t, **kw)


# ---------------------------------------------------------------- protocol
def test_roundtrip_and_errors():
    m = decode(msg("launch", pid=1, tid=2, seq=3, kernel_id="k|b1,1,1|g1,1,1", t_client_ns=5))
    assert (m.pid, m.seq, m.kernel_id) == (1, 3, "k|b1,1,1|g1,1,1")
    bad = [
        b"\xff\xfe",
        b"[]",
        b"{}",
        b'{"v":2,"t":"ping"}',
        b'{"v":1,"t":"nope"}',
        msg("register", task_key="a", pid=1, priority=10, mode="share"),
        msg("register", task_key="a", pid=1, priority=-1, mode="share"),
        msg("register", task_key="a/b", pid=1, priority=0, mode="share"),
        msg("register", task_key="a", pid=1, priority=0, mode="bogus"),
        msg("launch", pid=1, tid=2, seq=-3, kernel_id="k", t_client_ns=5),
        msg("launch", pid=1, tid=2, seq=3, t_client_ns=5),
        msg("launch", pid=True, tid=2, seq=3, kernel_id="k", t_client_ns=5),
        b"x" * (MAX_DATAGRAM + 1),
        b'{"v":1,"t":"launch","pid":' + b"[" * 5000 + b"]" * 5000 + b"}",
    ]
    for data in bad:
        with pytest.raises(ProtocolError):
            decode(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_fuzz_decoder_bytes(data):
    """Arbitrary bytes either decode to a protocol message or raise ProtocolError with a reason code."""
    from gpuweave.kernel.protocol import Message

    try:
        msg = decode(data)
    except ProtocolError as exc:
        assert exc.code and exc.message
    else:
        assert isinstance(msg, Message.__args__)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.fixed_dictionaries(
        {
            "v": st.sampled_from([1, 1, 1, 2, "1", True]),
            "t": st.sampled_from(["launch", "register", "unregister", "task_begin", "task_end", "ping", "stats", "x"]),
        },
        optional={
            "pid": _json,
            "tid": _json,
            "seq": _json,
            "kernel_id": _json,
            "t_client_ns": _json,
            "task_key": _json,
            "priority": _json,
            "mode": _json,
            "job_seq": _json,
        },
    )
)
def test_fuzz_decoder_structured_and_server_survives(d):
    data = json.dumps(d).encode()
    try:
        decode(data)
    except ProtocolError:
        pass
    out = Outbox()
    srv = FikitServer(out, FakeClock())
    srv.handle(data, ("127.0.0.1", 1))  # must never raise
    assert srv.messages == 1


# ---------------------------------------------------------------- server on a fake clock
def _prof(key, sk, sg=None):
    return Profile(key, 1, sk, sg or {}, {})


def test_server_fig8_and_bad_input_fake_clock():
    out = Outbox()
    clock = FakeClock()
    profiles = {
        "A": _prof("A", {"ak1": 1.0, "ak2": 1.0}, {"ak1": 5.0}),
        "B": _prof("B", {"bk1": 1.0}),
        "C": _prof("C", {"ck1": 1.0}),
    }
    srv = FikitServer(out, clock, profiles=profiles, record_gos=True)
    for pid, key in enumerate("ABC", 1):
        srv.handle(msg("register", task_key=key, pid=pid, priority=pid - 1, mode="share"), ("h", pid))
    assert all(m["profile_loaded"] for m in out.of("register_ack"))
    srv.handle(msg("launch", pid=1, tid=1, seq=1, kernel_id="ak1", t_client_ns=0), ("h", 1))
    srv.handle(msg("launch", pid=2, tid=1, seq=1, kernel_id="bk1", t_client_ns=0), ("h", 2))
    srv.handle(msg("launch", pid=3, tid=1, seq=1, kernel_id="ck1", t_client_ns=0), ("h", 3))
    srv.handle(msg("launch", pid=3, tid=1, seq=1, kernel_id="ck1", t_client_ns=0), ("h", 3))  # retransmit
    assert out.of("wait") or any(g.kid == "ck1" for g in srv.gos)
    clock.advance(5.0)
    srv.handle(msg("launch", pid=1, tid=1, seq=2, kernel_id="ak2", t_client_ns=0), ("h", 1))
    clock.advance(20.0)
    assert [g.kid for g in srv.gos] == ["ak1", "bk1", "ck1", "ak2"]
    n_go = len(out.of("go"))
    srv.handle(msg("launch", pid=1, tid=1, seq=2, kernel_id="ak2", t_client_ns=0), ("h", 1))  # dup after GO
    assert len(out.of("go")) == n_go + 1 and srv.core.stats.gos == 4  # re-sent, not re-scheduled
    # bad input: errors answered, server keeps going
    srv.handle(b"garbage", ("h", 9))
    srv.handle(msg("register", task_key="D", pid=4, priority=12, mode="share"), ("h", 4))
    srv.handle(msg("launch", pid=99, tid=1, seq=1, kernel_id="x", t_client_ns=0), ("h", 99))
    srv.handle(b"{" * 10000, ("h", 9))
    codes = [m["code"] for m in out.of("error")]
    assert codes == ["malformed", "bad_priority", "unknown_pid", "oversized"]


def test_server_drops_disappeared_client():
    out = Outbox()
    clock = FakeClock()
    profiles = {"H": _prof("H", {"h": 1.0}, {"h": 5000.0}), "L": _prof("L", {"l": 1.0})}
    srv = FikitServer(out, clock, profiles=profiles, client_timeout_s=1.0)
    srv.handle(msg("register", task_key="H", pid=1, priority=0, mode="share"), ("h", 1))
    srv.handle(msg("register", task_key="L", pid=2, priority=1, mode="share"), ("h", 2))
    srv.handle(msg("launch", pid=1, tid=1, seq=1, kernel_id="h", t_client_ns=0), ("h", 1))
    srv.handle(msg("launch", pid=2, tid=1, seq=1, kernel_id="l", t_client_ns=0), ("h", 2))  # filler
    srv.handle(msg("launch", pid=2, tid=1, seq=2, kernel_id="unknown", t_client_ns=0), ("h", 2))  # never fits
    clock.advance(600.0)
    srv.handle(msg("launch", pid=1, tid=1, seq=2, kernel_id="h", t_client_ns=0), ("h", 1))  # H stays alive
    clock.advance(1600.0)  # L silent > 1 s: unregistered, its pending launch dropped
    assert 2 not in srv.clients and 1 in srv.clients
    assert srv.dropped_requests >= 1
    srv.handle(msg("launch", pid=1, tid=1, seq=3, kernel_id="h", t_client_ns=0), ("h", 1))
    assert [m["seq"] for m in out.of("go") if m["pid"] == 1] == [1, 2, 3]
    srv.handle(msg("launch", pid=2, tid=1, seq=3, kernel_id="l", t_client_ns=0), ("h", 2))
    assert out.of("error")[-1]["code"] == "unknown_pid"


# ---------------------------------------------------------------- twin: simulator vs server
@pytest.mark.parametrize("preset_name", ["recommended", "paper_literal"])
def test_twin_simulator_and_server_same_go_sequence(preset_name):
    from gpuweave.kernel.sched import preset

    svcs = [
        Service("A", hi_trace(), 0, Workload.back_to_back(2)),
        Service("B", lo_trace(), 1, Workload.back_to_back(None)),
    ]
    cfg = SimConfig(mode="fikit", log=True, seed=5, scheduler=preset(preset_name), stop_when=("A",), ipc_rtt=0.01)
    res = simulate(svcs, cfg)
    sim_gos = [(round(t, 9), name, seq, kid, f) for t, name, seq, kid, f in res.go_log]
    assert len(sim_gos) > 500 and any(g[4] for g in sim_gos)

    out = Outbox()
    clock = FakeClock()
    srv = FikitServer(out, clock, config=cfg.scheduler, profiles=res.profiles, record_gos=True)
    pids = {}
    for entry in res.core_inputs:
        kind, t = entry[0], entry[1]
        clock.advance(t)
        if kind == "register":
            pids[entry[2]] = len(pids) + 1
            srv.handle(
                msg("register", task_key=entry[2], pid=pids[entry[2]], priority=entry[3], mode="share"), ("h", 0)
            )
        else:
            srv.handle(
                msg("launch", pid=pids[entry[2]], tid=1, seq=entry[4], kernel_id=entry[3], t_client_ns=0), ("h", 0)
            )
    last = res.core_inputs[-1][1]
    clock.advance(res.end_time)
    srv_gos = [
        (round(g.time, 9), g.task.split("#")[0], g.seq, g.kid, g.filler) for g in srv.gos if g.time <= res.end_time
    ]
    sim_gos = [g for g in sim_gos if g[0] <= res.end_time]
    assert last <= res.end_time
    assert srv_gos == sim_gos


# ---------------------------------------------------------------- loopback UDP
def test_client_config_from_env():
    cfg = ClientConfig.from_env(
        {"FIKIT_SCHEDULER": "127.0.0.1:5000", "FIKIT_PRIORITY": "3", "FIKIT_TASK_KEY": "svc", "FIKIT_MODE": "share"}
    )
    assert cfg == ClientConfig(("127.0.0.1", 5000), 3, "svc", "share")
    for env in ({"FIKIT_PRIORITY": "12"}, {"FIKIT_MODE": "fast"}, {"FIKIT_SCHEDULER": "nohost"}):
        with pytest.raises(InputError):
            ClientConfig.from_env(env)
    assert parse_address("localhost:1") == ("localhost", 1)
    assert FikitClient.from_env({"FIKIT_MODE": "off"}) is None


def test_client_fails_open_without_server():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens on this port
    t0 = time.monotonic()
    c = FikitClient(("127.0.0.1", port), "svc", 0, timeout_s=0.02, retries=3)
    assert c.launch("k") is False and c.failed_open
    assert c.launch("k2") is False  # no further waiting
    c.close()
    assert time.monotonic() - t0 < 2.0


def test_loopback_gating_and_disappearing_client(tmp_path):
    _prof("hi", {"k": 0.001}, {"k": 0.0}).save(tmp_path / "hi.json")
    _prof("lo", {"k": 0.001}).save(tmp_path / "lo.json")
    with ServerThread(profile_dir=tmp_path, client_timeout_s=0.3) as st_:
        addr = st_.address
        hi = FikitClient(addr, "hi", 0, pid=1001)
        lo = FikitClient(addr, "lo", 1, pid=1002)
        assert hi.register() and hi.profile_loaded and hi.server_mode == "share"
        assert lo.register()
        for _ in range(20):
            assert hi.launch("k") and lo.launch("k")
        # a raw client registers, launches while the holder is active, then vanishes
        raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        raw.connect(addr)
        raw.send(encode("register", task_key="lo", pid=1003, priority=2, mode="share"))
        raw.recv(4096)
        raw.send(encode("launch", pid=1003, tid=1, seq=1, kernel_id="k", t_client_ns=0))
        raw.close()
        time.sleep(0.8)  # every silent client is expired, the vanished one with it
        assert 1003 not in st_.call(lambda: list(st_.server.clients))
        # the idle ones re-register transparently on their next launch; nobody else is affected
        assert hi.launch("k") and lo.launch("k")
        assert not hi.failed_open and not lo.failed_open
        assert sorted(st_.call(lambda: list(st_.server.clients))) == [1001, 1002]
        raw2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        raw2.connect(addr)
        raw2.settimeout(1.0)
        raw2.send(b"\x00garbage")
        assert json.loads(raw2.recv(4096))["code"] == "malformed"
        raw2.close()
        hi.close()
        lo.close()
        assert st_.call(st_.server.stats)["clients"] == 0


def test_load_20_clients_1000_requests(tmp_path):
    n_clients, n_req = 20, 1000
    for i in range(n_clients):
        _prof(f"c{i}", {"k": 0.001}, {"k": 0.0}).save(tmp_path / f"c{i}.json")
    with ServerThread(profile_dir=tmp_path) as st_:
        clients = [
            FikitClient(st_.address, f"c{i}", i % 10, pid=2000 + i, timeout_s=0.5, retries=10) for i in range(n_clients)
        ]
        for c in clients:
            assert c.register()
        errors = []

        def run(c):
            try:
                for _ in range(n_req):
                    if not c.launch("k"):
                        errors.append("failed open")
                        return
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(repr(exc))

        threads = [threading.Thread(target=run, args=(c,)) for c in clients]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        elapsed = time.perf_counter() - t0
        assert not errors and all(not t.is_alive() for t in threads)
        stats = st_.call(st_.server.stats)
        per_task = st_.call(lambda: dict(st_.server.core.stats.per_task_gos))
        assert stats["gos"] == n_clients * n_req  # nothing lost, nothing duplicated
        assert all(v == n_req for v in per_task.values()) and len(per_task) == n_clients
        assert all(c.launches == n_req for c in clients)
        rtts = sorted(x for c in clients for x in c.rtt_ns)
        print(
            f"\nload: {n_clients}x{n_req} in {elapsed:.2f}s; "
            f"server decision median {stats['decision_us_median']:.1f} us "
            f"p99 {stats['decision_us_p99']:.1f} us; client RTT median {rtts[len(rtts) // 2] / 1000:.0f} us "
            f"p99 {rtts[int(0.99 * len(rtts))] / 1000:.0f} us"
        )
        for c in clients:
            c.close()


# ---------------------------------------------------------------- issue 13: who may speak for a pid
def _register(srv, pid, addr, **extra):
    srv.handle(msg("register", task_key="svc", pid=pid, priority=1, mode="share", **extra), addr)


def test_version_must_be_the_integer_1():
    for v in (b"1.0", b"true", b'"1"', b"1e0"):
        with pytest.raises(ProtocolError) as exc:
            decode(b'{"v":' + v + b',"t":"ping"}')
        assert exc.value.code == "version"
    assert decode(b'{"v":1,"t":"ping"}')


def test_a_pid_is_bound_to_the_address_that_registered_it():
    out, clock = Outbox(), FakeClock()
    srv = FikitServer(out, clock)
    victim, intruder = ("127.0.0.1", 4000), ("127.0.0.1", 5000)
    _register(srv, 7, victim)
    assert [a for m, a in out.sent if m["t"] == "register_ack"] == [victim]
    out.sent.clear()
    # a launch naming the victim's pid from another port: refused to the sender, the victim's state untouched
    srv.handle(msg("launch", pid=7, tid=1, seq=1, kernel_id="k", t_client_ns=1), intruder)
    srv.handle(msg("done", pid=7, seq=1, t_client_ns=2), intruder)
    srv.handle(msg("task_end", pid=7, job_seq=1), intruder)
    srv.handle(msg("unregister", pid=7), intruder)
    _register(srv, 7, intruder)
    assert {(m["t"], m.get("code"), a) for m, a in out.sent} == {
        ("error", "pid_bound", intruder),
        ("error", "pid_in_use", intruder),
    }
    assert 7 in srv.clients and srv.clients[7].addr == victim and not srv.clients[7].pending
    # the owner is served as before, and its GO goes to its own address
    out.sent.clear()
    srv.handle(msg("launch", pid=7, tid=1, seq=1, kernel_id="k", t_client_ns=1), victim)
    assert [(m["t"], a) for m, a in out.sent if m["t"] == "go"] == [("go", victim)]
    srv.handle(msg("unregister", pid=7), victim)
    assert 7 not in srv.clients
    _register(srv, 7, intruder)  # once the owner has gone, the pid is free again
    assert srv.clients[7].addr == intruder


def test_a_resent_unregister_is_acknowledged_again_and_changes_nothing():
    # The shim re-sends its Unregister until acknowledged, so a late ack brings a second one: it must be answered
    # (the shim may still be waiting) and must not count as an error or touch a later client with another pid.
    out = Outbox()
    srv = FikitServer(out, FakeClock())
    a, b = ("127.0.0.1", 4000), ("127.0.0.1", 4001)
    _register(srv, 7, a)
    _register(srv, 8, b)
    srv.handle(msg("unregister", pid=7), a)
    srv.handle(msg("unregister", pid=7), a)
    acks = [(m["t"], m["pid"], addr) for m, addr in out.sent if m["t"] == "unregister_ack"]
    assert acks == [("unregister_ack", 7, a)] * 2
    assert srv.errors == 0 and 7 not in srv.clients and 8 in srv.clients
    assert not [m for m, _ in out.sent if m["t"] == "error"]


def test_token_is_required_when_the_server_has_one():
    out = Outbox()
    srv = FikitServer(out, FakeClock(), token="tok-1")
    a = ("127.0.0.1", 4000)
    _register(srv, 3, a)
    _register(srv, 4, a, tok="wrong")
    srv.handle(msg("ping"), a)
    assert [m.get("code") for m, _ in out.sent] == ["bad_token"] * 3 and not srv.clients
    out.sent.clear()
    _register(srv, 3, a, tok="tok-1")
    srv.handle(msg("ping", tok="tok-1"), a)
    kinds = [m["t"] for m, _ in out.sent]
    assert kinds[0] == "register_ack" and kinds[-1] == "pong" and "error" not in kinds
    assert 3 in srv.clients


def test_python_client_sends_the_token(monkeypatch):
    with ServerThread(token="abc.DEF") as st:
        env = {"FIKIT_SCHEDULER": "%s:%d" % st.address, "FIKIT_TASK_KEY": "svc", "FIKIT_TOKEN": "abc.DEF"}
        client = FikitClient.from_env(env, timeout_s=0.2)
        with client:
            assert client.registered and client.launch("k|b1,1,1|g1,1,1")
        with pytest.raises(InputError, match="FIKIT_TOKEN"):
            ClientConfig.from_env({**env, "FIKIT_TOKEN": "has space"})
        bare = FikitClient.from_env({**env, "FIKIT_TOKEN": ""}, timeout_s=0.05, retries=2)
        with pytest.raises(InputError, match="refused registration"):
            bare.register()
        bare.close()


def test_serve_warns_off_loopback_and_checks_the_token():
    import subprocess
    import sys

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "gpuweave.cli", "kernel", "serve", "--host", "0.0.0.0", "--port", str(port)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        warning = proc.stderr.readline()
        assert warning.startswith("warning: 0.0.0.0 is not a loopback address") and "--token" in warning
        assert "FIKIT scheduler on udp://0.0.0.0" in proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run([*argv, "--token", "no spaces allowed"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "token" in bad.stderr
