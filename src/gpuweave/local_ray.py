"""Start a Ray on this machine that nothing outside it can reach: the one place gpuweave starts its own Ray.

The sweep's and the live runtime's Ray executors both start a local Ray when no ``--address`` is given. Two traps
make ``ray.init()`` with its defaults wrong for that:

- with no address, ``ray.init`` joins whatever Ray this machine already runs (another user's, another test's);
  ``address="local"`` always starts a new one;
- Ray turns a ``_node_ip_address`` of 127.0.0.1 into the machine's routable address unless its "no cluster"
  switch (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, meant for laptops) is off. With the switch off the node's
  address is loopback, and the GCS, raylet, object manager, agents and every worker's gRPC server listen on it
  alone. The switch is read from the environment by the processes Ray starts, and from a constant in
  ``ray._private.ray_constants`` (read when ray was imported): both are set for the start-up and restored after.
  The switch has no public API, so this leans on a private module; ``tests/live`` checks the sockets.

The dashboard is off. Ray is an optional extra, so ``ray`` is imported when a Ray is started, not before.

Joining a Ray that is already running (``--address``) goes through :func:`join_ray`, the one place gpuweave calls
``ray.init(address=...)``: ``ray.init`` retries an address that refuses connections, or one that accepts TCP but
does not speak Ray, forever (printing its own warnings every few seconds). Here every join is bounded: one TCP
connection attempt (:data:`CONNECT_TIMEOUT_S`), then ``ray.init`` itself (:func:`join_timeout`, default
:data:`JOIN_TIMEOUT_S`), and a failure is one :class:`~gpuweave.errors.InputError` naming the address.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from gpuweave.errors import InputError

LOOPBACK = "127.0.0.1"
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: seconds one TCP connection attempt to a Ray address may take
CONNECT_TIMEOUT_S = 5.0
#: seconds ``ray.init`` may take to join a cluster that accepted the connection (GPUWEAVE_RAY_JOIN_TIMEOUT overrides)
JOIN_TIMEOUT_S = 20.0
JOIN_TIMEOUT_ENV = "GPUWEAVE_RAY_JOIN_TIMEOUT"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """While a local Ray starts: every Ray process binds 127.0.0.1 instead of all interfaces."""
    from ray._private import ray_constants  # optional extra: imported only when a Ray is started

    saved_env = os.environ.get(LOCAL_ONLY_ENV)
    saved_flag = ray_constants.ENABLE_RAY_CLUSTER
    os.environ[LOCAL_ONLY_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(LOCAL_ONLY_ENV, None)
        else:
            os.environ[LOCAL_ONLY_ENV] = saved_env


def start_local_ray(**init_options: Any) -> None:
    """A new Ray on this machine, bound to loopback, dashboard off; ``init_options`` go to ``ray.init``
    (resources, num_cpus, runtime_env, logging)."""
    import ray  # optional extra: imported only when a Ray is started

    with loopback_only():
        ray.init(address="local", _node_ip_address=LOOPBACK, include_dashboard=False, **init_options)


def join_timeout() -> float:
    """Seconds a join may take: ``GPUWEAVE_RAY_JOIN_TIMEOUT`` when set (a positive number), else JOIN_TIMEOUT_S."""
    text = os.environ.get(JOIN_TIMEOUT_ENV, "").strip()
    if not text:
        return JOIN_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 86400):
        raise InputError(
            f"expected a number of seconds above 0 and at most 86,400, got {text!r}", field=JOIN_TIMEOUT_ENV
        )
    return value


def check_reachable(address: str) -> None:
    """InputError unless something accepts a TCP connection at ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``)
    within CONNECT_TIMEOUT_S. ``auto`` (Ray finds the cluster itself) is not probed."""
    if address in ("auto", "local"):
        return
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"Ray address {address!r} is not HOST:PORT", field="address")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        why = f"no answer within {CONNECT_TIMEOUT_S:g} s" if isinstance(exc, TimeoutError) else exc.strerror or exc
        raise InputError(f"cannot reach the Ray cluster at {address}: {why}", field="address") from None


def join_ray(address: str, **init_options: Any) -> None:
    """Join the running Ray at ``address`` (``ray.init(address=address, **init_options)``), bounded in time.

    One InputError naming the address when nothing accepts a connection there, when ``ray.init`` fails, or when it
    has not joined within :func:`join_timeout` seconds (something that is not a Ray GCS or Ray client port
    answered). ``ray.init`` runs in a daemon thread so a hung one cannot hold the process; what Ray prints to
    stderr meanwhile (its retry warnings) is held back and shown only when the join succeeds."""
    import ray  # optional extra: imported only when a Ray is joined

    check_reachable(address)
    timeout = join_timeout()
    outcome: dict[str, BaseException | None] = {}

    def init() -> None:
        try:
            ray.init(address=address, **init_options)
            outcome["error"] = None
        except BaseException as exc:  # reported by the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=init, name="gpuweave-ray-join", daemon=True)
    with _stderr_held() as held:
        thread.start()
        thread.join(timeout)
    if thread.is_alive():
        raise InputError(
            f"cannot join the Ray cluster at {address}: no Ray answered within {timeout:g} s "
            "(is it the Ray GCS port, 6379 by default, or a Ray client address ray://HOST:10001?)",
            field="address",
        )
    error = outcome.get("error")
    if error is not None:
        raise InputError(f"cannot join the Ray cluster at {address}: {_describe(error)}", field="address") from None
    if held:
        sys.stderr.write(held.decode(errors="replace"))


def _describe(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    if "auth" in str(exc).lower() or "token" in str(exc).lower():
        text += (
            " (token authentication: set RAY_AUTH_TOKEN or copy the cluster's ~/.ray/auth_token, "
            "and use the same RAY_AUTH_MODE as the cluster)"
        )
    return text


@contextlib.contextmanager
def _stderr_held() -> Iterator[bytearray]:
    """File descriptor 2 goes to a temporary file for the block (Ray's C++ core writes there, not to sys.stderr);
    yields a buffer that holds what was written once the block is over."""
    held = bytearray()
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2 (an embedded interpreter): nothing to hold back
        saved = -1
    if saved < 0:
        yield held
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield held
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            held.extend(sink.read())
