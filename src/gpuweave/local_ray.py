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
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

LOOPBACK = "127.0.0.1"
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only():
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
