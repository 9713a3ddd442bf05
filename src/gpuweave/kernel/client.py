"""FIKIT hook-client library: ask the scheduler before each launch (paper §3.2; spec §1.10, R-13).

Problem: a task process must block each kernel (here: operation) launch until the scheduler
answers GO, without ever deadlocking its service when the scheduler is absent or loses packets.

:class:`FikitClient` registers (task key, pid, priority 0–9, mode), then :meth:`FikitClient.launch`
sends ``launch{seq}`` and waits for ``go{seq}``; it retransmits the same seq every ``timeout_s``;
a ``wait`` answer (the request is queued) resets the silence counter; after ``retries`` silent
timeouts in a row it **fails open**: it stops asking, lets every launch through and logs it once.
An ``unknown_pid`` error (the server restarted or expired us) triggers one re-registration.

Configuration from the environment (:meth:`FikitClient.from_env`): ``FIKIT_SCHEDULER=host:port``,
``FIKIT_PRIORITY`` (0–9), ``FIKIT_TASK_KEY`` (default: sha256 of process name + argv, R-3),
``FIKIT_MODE`` (measure | share | off), ``FIKIT_TOKEN`` (the server's ``--token``, sent in every message).
One lock serialises the launches of a client's threads.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass

from gpuweave.errors import InputError
from gpuweave.kernel.ids import parse_priority, task_key, validate_task_key
from gpuweave.kernel.protocol import ProtocolError, check_token, decode_reply, encode

log = logging.getLogger("gpuweave.fikit.client")

MODES = ("measure", "share", "off")


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"scheduler address must be host:port, got {text!r}", field="FIKIT_SCHEDULER")
    return host, int(port)


@dataclass(frozen=True, slots=True)
class ClientConfig:
    address: tuple[str, int]
    priority: int
    task_key: str
    mode: str
    token: str | None = None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "ClientConfig":
        env = dict(os.environ) if env is None else env
        mode = env.get("FIKIT_MODE", "share").strip().lower()
        if mode not in MODES:
            raise InputError(f"FIKIT_MODE must be one of {', '.join(MODES)}, got {mode!r}", field="FIKIT_MODE")
        prio = parse_priority(env.get("FIKIT_PRIORITY", "0"), field="FIKIT_PRIORITY")
        key = task_key(sys.executable, sys.argv, env)
        addr = parse_address(env.get("FIKIT_SCHEDULER", "127.0.0.1:47800"))
        token = env.get("FIKIT_TOKEN") or None
        return cls(addr, prio, key, mode, None if token is None else check_token(token, field="FIKIT_TOKEN"))


class FikitClient:
    """A blocking UDP client for one task process (or one logical task in tests)."""

    def __init__(
        self,
        address: tuple[str, int],
        task_key_: str,
        priority: int,
        mode: str = "share",
        *,
        pid: int | None = None,
        timeout_s: float = 0.05,
        retries: int = 5,
        token: str | None = None,
    ) -> None:
        if mode not in ("share", "measure"):
            raise InputError(
                "client mode must be 'share' or 'measure' ('off' means: do not create a client)", field="mode"
            )
        self.address = address
        self.task_key = validate_task_key(task_key_)
        self.priority = parse_priority(priority)
        self.mode = mode
        self.token = None if token is None else check_token(token)
        self.pid = os.getpid() if pid is None else pid
        self.timeout_s = timeout_s
        self.retries = retries
        self.failed_open = False
        self.registered = False
        self.server_mode: str | None = None
        self.profile_loaded = False
        self.launches = 0
        self.rtt_ns: list[int] = []
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(address)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **kw) -> "FikitClient | None":
        cfg = ClientConfig.from_env(env)
        if cfg.mode == "off":
            return None
        return cls(cfg.address, cfg.task_key, cfg.priority, cfg.mode, token=cfg.token, **kw)

    def _encode(self, t: str, **fields: object) -> bytes:
        """A message of type ``t``, carrying the token when there is one."""
        return encode(t, **fields, tok=self.token) if self.token else encode(t, **fields)

    # ------------------------------------------------------------------ io
    def _exchange(self, data: bytes, want: str, match: dict) -> dict | None:
        """Send ``data`` until a reply of type ``want`` matching ``match`` arrives; None → failed open."""
        silent = 0
        self.sock.settimeout(self.timeout_s)
        while silent < self.retries:
            try:
                self.sock.send(data)
            except OSError:
                silent += 1
                time.sleep(self.timeout_s)
                continue
            deadline = time.monotonic() + self.timeout_s
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    silent += 1
                    break
                self.sock.settimeout(left)
                try:
                    raw = self.sock.recv(65536)
                except socket.timeout:
                    silent += 1
                    break
                except OSError:  # ICMP port unreachable: nobody listens
                    silent += 1
                    time.sleep(min(left, self.timeout_s))
                    break
                try:
                    reply = decode_reply(raw)
                except ProtocolError:
                    continue
                kind = reply["t"]
                if kind == want and all(reply.get(k) == v for k, v in match.items()):
                    return reply
                if kind == "wait" and reply.get("seq") == match.get("seq"):
                    silent = 0
                    deadline = time.monotonic() + self.timeout_s
                    continue
                if kind == "error":
                    if reply.get("code") == "unknown_pid" and want == "go":
                        return reply
                    if want == "register_ack":
                        raise InputError(f"scheduler refused registration: {reply.get('message')}")
        return None

    def _fail_open(self, why: str) -> None:
        if not self.failed_open:
            log.warning(
                "FIKIT scheduler %s:%s unreachable (%s): failing open, launches are no longer gated", *self.address, why
            )
        self.failed_open = True

    # ------------------------------------------------------------------ api
    def register(self) -> bool:
        """Register with the scheduler; False (and fail-open) when it does not answer."""
        with self._lock:
            return self._register()

    def _register(self) -> bool:
        msg = self._encode("register", task_key=self.task_key, pid=self.pid, priority=self.priority, mode=self.mode)
        reply = self._exchange(msg, "register_ack", {"pid": self.pid})
        if reply is None:
            self._fail_open("no answer to register")
            return False
        self.registered = True
        self.server_mode = reply.get("mode")
        self.profile_loaded = bool(reply.get("profile_loaded"))
        return True

    def launch(self, kernel_id: str, tid: int | None = None) -> bool:
        """Block until the scheduler permits launching ``kernel_id``. False when not gated (failed open)."""
        if self.failed_open:
            return False
        with self._lock:
            if not self.registered and not self._register():
                return False
            seq = next(self._seq)
            tid = threading.get_ident() & 0x7FFFFFFF if tid is None else tid
            t0 = time.perf_counter_ns()
            msg = self._encode(
                "launch", pid=self.pid, tid=tid, seq=seq, kernel_id=kernel_id, t_client_ns=time.monotonic_ns()
            )
            for _ in range(2):
                reply = self._exchange(msg, "go", {"pid": self.pid, "seq": seq})
                if reply is None:
                    self._fail_open(f"no answer to launch {seq}")
                    return False
                if reply["t"] == "go":
                    self.launches += 1
                    self.rtt_ns.append(time.perf_counter_ns() - t0)
                    return True
                if not self._register():  # unknown_pid: the server forgot us
                    return False
            self._fail_open("server keeps forgetting this client")
            return False

    def task_mark(self, job_seq: int, end: bool) -> None:
        if self.failed_open or not self.registered:
            return
        try:
            self.sock.send(self._encode("task_end" if end else "task_begin", pid=self.pid, job_seq=job_seq))
        except OSError:
            pass

    def close(self) -> None:
        """Unregister (best effort) and close the socket."""
        with self._lock:
            if self.registered and not self.failed_open:
                self.retries = min(self.retries, 2)
                self._exchange(self._encode("unregister", pid=self.pid), "unregister_ack", {"pid": self.pid})
            self.registered = False
            self.sock.close()

    def __enter__(self) -> "FikitClient":
        self.register()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
