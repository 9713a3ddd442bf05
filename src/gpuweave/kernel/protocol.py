"""FIKIT scheduler/hook-client message protocol, version 1 (paper §3.2 "UDP messages"; spec §1.10, R-13).

Problem: the paper's hook clients and scheduler exchange UDP messages whose format is not given.
This is a versioned, self-describing format: one UTF-8 JSON object per datagram, at most
:data:`MAX_DATAGRAM` bytes, with ``"v": 1`` and a type ``"t"``:

=================  ========================================================  =====================
type               fields                                                    answer
=================  ========================================================  =====================
``register``       task_key, pid, priority (0-9), mode (share|measure)       ``register_ack``
``launch``         pid, tid, seq, kernel_id, t_client_ns                     ``go`` (or ``wait``)
``done``           pid, seq, t_client_ns (kernel seq completed)              none
``task_begin``     pid, job_seq                                              none (logged)
``task_end``       pid, job_seq                                              none (logged)
``unregister``     pid                                                       ``unregister_ack``
``ping``           (none)                                                    ``pong``
``stats``          (none)                                                    ``stats_reply``
=================  ========================================================  =====================

Server answers: ``register_ack{pid, mode, profile_loaded}``, ``go{pid, seq}``, ``wait{pid, seq}`` (a
retransmitted launch that is still queued: the server is alive, keep waiting), ``unregister_ack{pid}``,
``pong``, ``stats_reply{...}``, ``error{code, message[, pid, seq]}``. Unprompted, the server sends
``gate{pid, open}`` when a client's class starts or stops being released on arrival: an open client may
launch at once and send its ``launch`` afterwards (the C shim does; the Python client ignores it).

Security: every message from a client may carry ``"tok"``, a shared secret (1-128 characters of
``[A-Za-z0-9._~+/=-]``, from ``FIKIT_TOKEN``); a server started with ``--token`` answers ``error{code:
bad_token}`` to any message without the same token (compared in constant time). A pid is bound to the
address that registered it: the server refuses a message naming it from any other address (``error{code:
pid_bound}``, sent to the sender only) and a second registration of it from another address (``pid_in_use``)
until the first one unregisters or times out. ``"v"`` must be the integer 1 (``1.0`` is refused).

Loss handling: the client retransmits a launch with the same ``seq`` after a timeout; the server
deduplicates on (pid, seq) and re-sends ``go`` for a seq it already released. After k silent timeouts
the client fails open (launches without permission, and logs it) so a dead scheduler never deadlocks a
service. :func:`decode` never raises anything but :class:`ProtocolError`. Complexity O(message size).
"""

from __future__ import annotations

import hmac
import json
import math
from dataclasses import dataclass

from gpuweave.errors import InputError
from gpuweave.kernel import PRIORITY_LEVELS
from gpuweave.kernel.ids import validate_task_key

VERSION = 1
MAX_DATAGRAM = 4096
MAX_TOKEN = 128
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~+/=-")
MAX_KERNEL_ID = 1024
MAX_INT = 2**63 - 1


class ProtocolError(InputError):
    """A datagram that is not a valid version-1 message. ``code`` is a short machine-readable reason."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        self.code = code
        super().__init__(message, field=field)


@dataclass(frozen=True, slots=True)
class Register:
    task_key: str
    pid: int
    priority: int
    mode: str


@dataclass(frozen=True, slots=True)
class Launch:
    pid: int
    tid: int
    seq: int
    kernel_id: str
    t_client_ns: int


@dataclass(frozen=True, slots=True)
class Done:
    pid: int
    seq: int
    t_client_ns: int


@dataclass(frozen=True, slots=True)
class TaskMark:
    pid: int
    job_seq: int
    end: bool


@dataclass(frozen=True, slots=True)
class Unregister:
    pid: int


@dataclass(frozen=True, slots=True)
class Ping:
    pass


@dataclass(frozen=True, slots=True)
class StatsRequest:
    pass


Message = Register | Launch | Done | TaskMark | Unregister | Ping | StatsRequest


def _int(d: dict, name: str, lo: int = 0, hi: int = MAX_INT) -> int:
    if name not in d:
        raise ProtocolError("missing_field", f"missing field '{name}'", name)
    v = d[name]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ProtocolError("bad_field", f"field '{name}' must be an integer in [{lo}, {hi}]", name)
    return v


def _str(d: dict, name: str, max_len: int) -> str:
    if name not in d:
        raise ProtocolError("missing_field", f"missing field '{name}'", name)
    v = d[name]
    if not isinstance(v, str) or not v or len(v) > max_len:
        raise ProtocolError(
            "bad_field", f"field '{name}' must be a non-empty string of at most {max_len} characters", name
        )
    return v


def _register(d: dict) -> Register:
    key = _str(d, "task_key", 128)
    try:
        validate_task_key(key)
    except InputError as exc:
        raise ProtocolError("bad_field", exc.message, "task_key") from None
    prio = _int(d, "priority", -(2**31), 2**31)
    if not 0 <= prio < PRIORITY_LEVELS:
        raise ProtocolError("bad_priority", f"priority must be 0-{PRIORITY_LEVELS - 1}, got {prio}", "priority")
    mode = d.get("mode", "share")
    if mode not in ("share", "measure"):
        raise ProtocolError("bad_field", "mode must be 'share' or 'measure'", "mode")
    return Register(key, _int(d, "pid"), prio, mode)


def check_token(token: str, *, field: str = "token") -> str:
    """A shared token: 1-128 characters of ``[A-Za-z0-9._~+/=-]`` (the C shim embeds it in JSON unescaped)."""
    if not isinstance(token, str) or not 1 <= len(token) <= MAX_TOKEN or not set(token) <= _TOKEN_CHARS:
        raise InputError(f"a token is 1-{MAX_TOKEN} characters of A-Z a-z 0-9 . _ ~ + / = -", field=field)
    return token


def decode(data: bytes, token: str | None = None) -> Message:
    """Parse one datagram; raises :class:`ProtocolError` (never anything else) on bad input. With ``token``,
    a message whose ``tok`` differs (or is missing) is refused (``bad_token``)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ProtocolError("bad_type", "datagram must be bytes")
    if len(data) > MAX_DATAGRAM:
        raise ProtocolError("oversized", f"datagram of {len(data)} bytes exceeds {MAX_DATAGRAM}")
    try:
        d = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProtocolError("malformed", "datagram is not UTF-8 JSON") from None
    if not isinstance(d, dict):
        raise ProtocolError("malformed", "message must be a JSON object")
    if type(d.get("v")) is not int or d["v"] != VERSION:  # 1.0 and True are not the version 1
        shown = repr(d.get("v"))[:40]
        raise ProtocolError("version", f"unsupported protocol version {shown} (server speaks {VERSION})", "v")
    if token is not None:
        sent = d.get("tok")
        if not isinstance(sent, str) or not hmac.compare_digest(sent.encode("utf-8"), token.encode("utf-8")):
            raise ProtocolError("bad_token", "missing or wrong token (set FIKIT_TOKEN to the server's --token)", "tok")
    t = d.get("t")
    if t == "launch":
        return Launch(
            _int(d, "pid"), _int(d, "tid"), _int(d, "seq"), _str(d, "kernel_id", MAX_KERNEL_ID), _int(d, "t_client_ns")
        )
    if t == "done":
        return Done(_int(d, "pid"), _int(d, "seq"), _int(d, "t_client_ns"))
    if t == "register":
        return _register(d)
    if t in ("task_begin", "task_end"):
        return TaskMark(_int(d, "pid"), _int(d, "job_seq"), t == "task_end")
    if t == "unregister":
        return Unregister(_int(d, "pid"))
    if t == "ping":
        return Ping()
    if t == "stats":
        return StatsRequest()
    raise ProtocolError("unknown_type", f"unknown message type {t!r}", "t")


def encode(t: str, **fields: object) -> bytes:
    """Encode a message of type ``t``; raises ProtocolError if it would exceed :data:`MAX_DATAGRAM`."""
    for k, v in fields.items():
        if isinstance(v, float) and not math.isfinite(v):
            fields[k] = None
    data = json.dumps({"v": VERSION, "t": t, **fields}, separators=(",", ":"), sort_keys=True).encode("utf-8")
    if len(data) > MAX_DATAGRAM:
        raise ProtocolError("oversized", f"message of {len(data)} bytes exceeds {MAX_DATAGRAM}")
    return data


def decode_reply(data: bytes) -> dict:
    """Client side: parse a server answer into a dict with at least ``t``; ProtocolError otherwise."""
    if len(data) > MAX_DATAGRAM:
        raise ProtocolError("oversized", "reply too large")
    try:
        d = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProtocolError("malformed", "reply is not UTF-8 JSON") from None
    if not isinstance(d, dict) or d.get("v") != VERSION or not isinstance(d.get("t"), str):
        raise ProtocolError("malformed", "reply is not a version-1 message")
    return d
