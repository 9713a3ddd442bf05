"""The FIKIT scheduler server: the same SchedulerCore behind a UDP endpoint (paper §3.2; spec §1.10, §4.4).

Problem: receive hook-client messages (:mod:`gpuweave.kernel.protocol`), feed them to the pure
:class:`~gpuweave.kernel.sched.SchedulerCore` with a monotonic clock, send GO answers and arm the
timers the core asks for, and survive any input: malformed or oversized datagrams, priorities
outside 0–9, launches from unknown processes, and clients that disappear mid-run (their pending
requests are dropped and logged after ``client_timeout`` seconds of silence; other clients are not
affected; a client that comes back gets ``error{code: unknown_pid}`` and re-registers), and processes that
lie about their pid: each pid is bound to the address that registered it, and a message naming it from
another address is refused (``pid_bound``), as is a second registration (``pid_in_use``). With ``token`` every
message must carry the shared token (``bad_token`` otherwise; see :mod:`gpuweave.kernel.protocol`).

:class:`FikitServer` is transport- and clock-agnostic: ``handle(data, addr)`` processes one datagram
and ``send(data, addr)`` is injected. :class:`MonotonicClock` runs it on an asyncio loop (timers via
``loop.call_later``); :class:`FakeClock` runs it under test control (the twin test feeds the
simulator's recorded input script and must get the simulator's GO sequence). Decisions are
single-threaded. A core task is named ``"{task_key}#{pid}"`` so replicas of one service are distinct.

Complexity: per message, that of the core call plus O(log timers).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

from gpuweave.errors import InputError
from gpuweave.kernel.profile import Profile
from gpuweave.kernel.protocol import (
    Done,
    Launch,
    Ping,
    ProtocolError,
    Register,
    StatsRequest,
    TaskMark,
    Unregister,
    decode,
    encode,
)
from gpuweave.kernel.sched import Go, SchedulerConfig, SchedulerCore, SetTimer

log = logging.getLogger("gpuweave.fikit.server")


class FakeClock:
    """A manually advanced clock (ms) with ``call_at``; :meth:`advance` fires due callbacks in order."""

    def __init__(self, start: float = 0.0) -> None:
        self.t = start
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._n = 0

    def now(self) -> float:
        return self.t

    def call_at(self, t: float, cb: Callable[[], None]) -> None:
        self._n += 1
        heapq.heappush(self._heap, (t, self._n, cb))

    def advance(self, t: float) -> None:
        while self._heap and self._heap[0][0] <= t:
            when, _, cb = heapq.heappop(self._heap)
            self.t = max(self.t, when)
            cb()
        self.t = max(self.t, t)

    def run_all(self) -> None:
        while self._heap:
            self.advance(self._heap[0][0])


class MonotonicClock:
    """Milliseconds since construction from ``time.monotonic_ns``; timers on an asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._t0 = time.monotonic_ns()

    def now(self) -> float:
        return (time.monotonic_ns() - self._t0) / 1e6

    def call_at(self, t: float, cb: Callable[[], None]) -> None:
        self.loop.call_later(max(0.0, (t - self.now()) / 1000.0), cb)


@dataclass(slots=True)
class _Client:
    task_key: str
    pid: int
    addr: object
    name: str
    priority: int
    mode: str
    last_seen: float
    pending: dict[int, int] = field(default_factory=dict)  # seq -> tid
    granted: dict[int, int] = field(default_factory=dict)  # seq -> tid (recent, for dedup)
    granted_order: deque = field(default_factory=deque)
    gate_open: bool = False


@dataclass(frozen=True, slots=True)
class GoLog:
    time: float
    task: str
    seq: int
    kid: str
    filler: bool


class FikitServer:
    """Protocol handling around one SchedulerCore. Never raises out of :meth:`handle`."""

    DEDUP_WINDOW = 1024

    def __init__(
        self,
        send: Callable[[bytes, object], None],
        clock,
        config: SchedulerConfig | None = None,
        profiles: dict[str, Profile] | None = None,
        profile_dir: str | Path | None = None,
        client_timeout_s: float = 30.0,
        record_gos: bool = False,
        latency_samples: int = 200_000,
        token: str | None = None,
    ) -> None:
        self.send = send
        self.token = token
        self.clock = clock
        self.core = SchedulerCore(config)
        self.profiles = dict(profiles or {})
        self.profile_dir = Path(profile_dir) if profile_dir else None
        self.client_timeout_ms = client_timeout_s * 1000.0
        self.clients: dict[int, _Client] = {}
        self.by_name: dict[str, _Client] = {}
        self.gos: list[GoLog] = []
        self.record_gos = record_gos
        self.errors = 0
        self.messages = 0
        self.dropped_requests = 0
        self.completions = 0
        self.decision_ns: deque[int] = deque(maxlen=latency_samples)
        self._armed: set[float] = set()
        self._sweep_armed = False

    # ------------------------------------------------------------------ entry point
    def handle(self, data: bytes, addr: object) -> None:
        t_in = time.perf_counter_ns()
        self.messages += 1
        try:
            msg = decode(data, self.token)
            now = self.clock.now()
            if isinstance(msg, (Launch, Done, TaskMark, Unregister)) and not self._owned(msg.pid, addr):
                return
            if isinstance(msg, Launch):
                self._launch(msg, addr, now)
                self.decision_ns.append(time.perf_counter_ns() - t_in)
            elif isinstance(msg, Done):
                self._done(msg, now)
            elif isinstance(msg, Register):
                self._register(msg, addr, now)
                self._refresh_gates()
            elif isinstance(msg, Unregister):
                self._unregister(msg.pid, now, reason="unregister")
                self._reply(encode("unregister_ack", pid=msg.pid), addr)
                self._refresh_gates()
            elif isinstance(msg, TaskMark):
                c = self.clients.get(msg.pid)
                if c is not None:
                    c.last_seen = now
                log.debug("pid %s task %s %s", msg.pid, msg.job_seq, "end" if msg.end else "begin")
            elif isinstance(msg, Ping):
                self._reply(encode("pong"), addr)
            elif isinstance(msg, StatsRequest):
                self._reply(encode("stats_reply", **self.stats()), addr)
        except ProtocolError as exc:
            self._error(addr, exc.code, exc.message)
        except InputError as exc:
            self._error(addr, "bad_request", exc.message)
        except Exception as exc:  # a bug must not take the scheduler down for every client
            log.exception("internal error handling a datagram from %s", addr)
            self._error(addr, "internal", f"{type(exc).__name__}")

    # ------------------------------------------------------------------ messages
    def _owned(self, pid: int, addr: object) -> bool:
        """Whether ``addr`` may speak for ``pid``: the pid is unknown (answered later) or registered from ``addr``.
        Otherwise the sender gets ``pid_bound`` and the pid's own client is not touched."""
        c = self.clients.get(pid)
        if c is None or c.addr == addr:
            return True
        self._error(addr, "pid_bound", f"pid {pid} is registered from another address", pid=pid)
        return False

    def _register(self, m: Register, addr: object, now: float) -> None:
        old = self.clients.get(m.pid)
        if old is not None and old.addr != addr:
            self._error(addr, "pid_in_use", f"pid {m.pid} is registered from another address", pid=m.pid)
            return
        if old is not None:  # a restarted client with the same pid and address: start clean
            self._unregister(m.pid, now, reason="re-register")
        profile = self._profile(m.task_key)
        name = f"{m.task_key}#{m.pid}"
        mode = self.core.register(name, m.priority, profile, m.mode, now)
        c = _Client(m.task_key, m.pid, addr, name, m.priority, mode, now)
        self.clients[m.pid] = c
        self.by_name[name] = c
        log.info(
            "register pid=%s key=%s prio=%s mode=%s profile=%s",
            m.pid,
            m.task_key,
            m.priority,
            mode,
            profile is not None,
        )
        self._reply(encode("register_ack", pid=m.pid, mode=mode, profile_loaded=profile is not None), addr)
        self._arm_sweep(now)

    def _launch(self, m: Launch, addr: object, now: float) -> None:
        c = self.clients.get(m.pid)
        if c is None:
            self._error(addr, "unknown_pid", f"pid {m.pid} is not registered", pid=m.pid, seq=m.seq)
            return
        c.last_seen = now
        if m.seq in c.granted:  # retransmission of a released launch: GO again
            self._reply(encode("go", pid=m.pid, seq=m.seq, tid=c.granted[m.seq]), addr)
            return
        if m.seq in c.pending:  # still queued: tell the client the server is alive
            self._reply(encode("wait", pid=m.pid, seq=m.seq), addr)
            return
        c.pending[m.seq] = m.tid
        self._apply(self.core.request(c.name, m.kernel_id, m.seq, now))

    def _done(self, m: Done, now: float) -> None:
        c = self.clients.get(m.pid)
        if c is not None:
            c.last_seen = now
            self.completions += 1
            self._apply(self.core.complete(c.name, m.seq, now))

    def _refresh_gates(self) -> None:
        """Tell every client whose 'released on arrival' status changed (``gate{open}``; see the protocol)."""
        opened = self.core.released_at_once()
        for c in self.clients.values():
            is_open = c.name in opened
            if is_open != c.gate_open:
                c.gate_open = is_open
                self._reply(encode("gate", pid=c.pid, open=is_open), c.addr)

    def _unregister(self, pid: int, now: float, reason: str) -> None:
        c = self.clients.pop(pid, None)
        if c is None:
            return
        del self.by_name[c.name]
        actions, dropped = self.core.unregister(c.name, now)
        if dropped:
            self.dropped_requests += len(dropped)
            log.warning("pid %s (%s): dropped %d pending launch(es) on %s", pid, c.task_key, len(dropped), reason)
        self._apply(actions)

    # ------------------------------------------------------------------ core glue
    def _apply(self, actions: list) -> None:
        for a in actions:
            if a.__class__ is Go:
                r = a.request
                c = self.by_name.get(r.task)
                if c is None:
                    continue
                tid = c.pending.pop(r.seq, 0)
                c.granted[r.seq] = tid
                c.granted_order.append(r.seq)
                if len(c.granted_order) > self.DEDUP_WINDOW:
                    c.granted.pop(c.granted_order.popleft(), None)
                if self.record_gos:
                    self.gos.append(GoLog(a.time, r.task, r.seq, r.kid, a.filler))
                self._reply(encode("go", pid=c.pid, seq=r.seq, tid=tid), c.addr)
            elif isinstance(a, SetTimer):
                if a.time not in self._armed:
                    self._armed.add(a.time)
                    self.clock.call_at(a.time, lambda t=a.time: self._on_timer(t))

    def _on_timer(self, t: float) -> None:
        self._armed.discard(t)
        try:
            self._apply(self.core.timer(max(t, self.clock.now())))
        except Exception:
            log.exception("internal error in a timer")

    def _arm_sweep(self, now: float) -> None:
        if not self._sweep_armed and self.client_timeout_ms > 0:
            self._sweep_armed = True
            self.clock.call_at(now + self.client_timeout_ms / 2, self._sweep)

    def _sweep(self) -> None:
        """Drop clients silent for longer than the timeout (a disappeared client)."""
        self._sweep_armed = False
        now = self.clock.now()
        for pid, c in list(self.clients.items()):
            if now - c.last_seen > self.client_timeout_ms:
                log.warning("pid %s (%s) silent for %.0f ms: unregistering", pid, c.task_key, now - c.last_seen)
                try:
                    self._unregister(pid, now, reason="client timeout")
                    self._refresh_gates()
                except Exception:
                    log.exception("internal error expiring pid %s", pid)
        if self.clients:
            self._arm_sweep(now)

    def _profile(self, key: str) -> Profile | None:
        if key in self.profiles:
            return self.profiles[key]
        if self.profile_dir is not None:
            p = self.profile_dir / f"{key}.json"
            if p.exists():
                try:
                    prof = Profile.load(p)
                except InputError as exc:
                    log.warning("ignoring bad profile %s: %s", p, exc)
                    return None
                return prof
        return None

    # ------------------------------------------------------------------ replies
    def _reply(self, data: bytes, addr: object) -> None:
        try:
            self.send(data, addr)
        except OSError as exc:  # e.g. the client's port is gone
            log.warning("send to %s failed: %s", addr, exc)

    def _error(self, addr: object, code: str, message: str, **extra: object) -> None:
        self.errors += 1
        log.info("error %s from %s: %s", code, addr, message)
        self._reply(encode("error", code=code, message=message[:300], **extra), addr)

    def stats(self) -> dict:
        lat = sorted(self.decision_ns)

        def q(p: float) -> float:
            return lat[min(len(lat) - 1, int(p * len(lat)))] / 1000.0 if lat else 0.0

        st = self.core.stats
        return {
            "clients": len(self.clients),
            "messages": self.messages,
            "errors": self.errors,
            "gos": st.gos,
            "fillers": st.fillers,
            "dropped": self.dropped_requests,
            "completions": self.completions,
            "pending": self.core.pending(),
            "decision_us_median": q(0.5),
            "decision_us_p99": q(0.99),
        }


class _UdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, server_factory: Callable[[asyncio.DatagramTransport], FikitServer]) -> None:
        self.factory = server_factory
        self.server: FikitServer | None = None

    def connection_made(self, transport) -> None:
        self.server = self.factory(transport)

    def datagram_received(self, data: bytes, addr) -> None:
        assert self.server is not None
        self.server.handle(data, addr)

    def error_received(self, exc: Exception) -> None:  # ICMP port unreachable etc.
        log.debug("socket error: %s", exc)


async def start_server(
    host: str = "127.0.0.1", port: int = 0, **kwargs
) -> tuple[FikitServer, asyncio.DatagramTransport]:
    """Start a UDP server on the running loop; returns (server, transport). ``port=0`` picks a free port."""
    loop = asyncio.get_running_loop()
    clock = MonotonicClock(loop)
    holder: dict[str, FikitServer] = {}

    def factory(transport):
        srv = FikitServer(transport.sendto, clock, **kwargs)
        holder["s"] = srv
        return srv

    transport, _ = await loop.create_datagram_endpoint(lambda: _UdpProtocol(factory), local_addr=(host, port))
    return holder["s"], transport


_T = TypeVar("_T")


class ServerThread:
    """Run a server on its own event loop in a daemon thread (tests, demos, notebooks)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **kwargs) -> None:
        import threading

        self._ready = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.server: FikitServer | None = None
        self.transport: asyncio.DatagramTransport | None = None
        self._args = (host, port, kwargs)
        self._thread = threading.Thread(target=self._run, name="fikit-server", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        host, port, kwargs = self._args
        self.server, transport = self.loop.run_until_complete(start_server(host, port, **kwargs))
        self.transport = transport
        self._ready.set()
        self.loop.run_forever()
        transport.close()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()

    @property
    def address(self) -> tuple[str, int]:
        assert self.transport is not None, "the server has not started"
        return self.transport.get_extra_info("sockname")[:2]

    def call(self, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` on the server loop and return its result (thread-safe)."""
        import concurrent.futures

        fut: concurrent.futures.Future[_T] = concurrent.futures.Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return fut.result(timeout=10)

    def __enter__(self) -> "ServerThread":
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("FIKIT server did not start")
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
