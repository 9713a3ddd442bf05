"""PyTorch op-level client on CPU tensors: interception, IDs, gating, Fig. 8 order with three clients."""

from __future__ import annotations

import threading
import time

import pytest

torch = pytest.importorskip("torch")

from gpuweave.kernel.client import FikitClient  # noqa: E402
from gpuweave.kernel.server import ServerThread  # noqa: E402
from gpuweave.kernel.torch_client import FikitDispatchMode, from_env, op_kernel_id  # noqa: E402

pytestmark = pytest.mark.torch


def test_op_ids_and_off_mode():
    x = torch.ones(3, 4)
    kid = op_kernel_id(torch.ops.aten.mul.Tensor, (x, x), {})
    assert kid == "aten.mul.Tensor|b1,1,1|g1,1,1|xfloat32[3,4];float32[3,4]"
    mode = FikitDispatchMode(None, "off")
    with mode:
        y = x * 2
    assert mode.ops == 0 and torch.equal(y, x * 2)


def test_fail_open_when_server_absent():
    mode = from_env(
        {"FIKIT_SCHEDULER": "127.0.0.1:9", "FIKIT_MODE": "share", "FIKIT_PRIORITY": "0", "FIKIT_TASK_KEY": "t"},
        timeout_s=0.02,
        retries=2,
    )
    x = torch.ones(2)
    with mode:
        y = (x + 1) * 3
    assert torch.equal(y, torch.full((2,), 6.0))
    assert mode.ops == 2 and mode.gated == 0 and mode.client.failed_open


def _run_a(mode, x, gap_s):
    with mode.task():
        x * 2
        time.sleep(gap_s)
        x + 1


def _run_one(mode, x):
    with mode.task():
        x - 1


def test_three_clients_fig8_order(tmp_path):
    gap = 0.08
    xa, xb, xc = torch.ones(8), torch.ones(16), torch.ones(32)
    with ServerThread(profile_dir=tmp_path, record_gos=True) as srv:
        addr = srv.address
        # measurement phase: each task alone (the server admits a measuring task exclusively)
        for key, prio, fn, x in (("A", 0, _run_a, xa), ("B", 1, _run_one, xb), ("C", 2, _run_one, xc)):
            client = FikitClient(addr, key, prio, "measure", pid=100 + prio)
            assert client.register() and client.server_mode == "measure"
            mode = FikitDispatchMode(client, "measure", tmp_path)
            with mode:
                for _ in range(3):
                    fn(mode, x, gap) if key == "A" else fn(mode, x)
            client.close()
            path = mode.save_profile()
            assert path.name == f"{key}.json" and mode.measured_runs == 3
        prof_a = mode  # noqa: F841 - keep the last mode alive until here

        # sharing phase: A holds the GPU; B and C launch inside A's gap
        clients = {k: FikitClient(addr, k, p, "share", pid=200 + p) for k, p in (("A", 0), ("B", 1), ("C", 2))}
        for c in clients.values():
            assert c.register() and c.profile_loaded
        a_started = threading.Event()
        b_sent = threading.Event()

        def a_thread():
            mode = FikitDispatchMode(clients["A"], "share")
            with mode, mode.task():
                xa * 2
                a_started.set()
                time.sleep(gap)
                xa + 1

        def low_thread(key, x, after):
            after.wait(5)
            mode = FikitDispatchMode(clients[key], "share")
            if key == "B":
                b_sent.set()
            else:
                time.sleep(0.01)  # C launches after B
            with mode, mode.task():
                x - 1

        threads = [
            threading.Thread(target=a_thread),
            threading.Thread(target=low_thread, args=("B", xb, a_started)),
            threading.Thread(target=low_thread, args=("C", xc, b_sent)),
        ]
        before = len(srv.call(lambda: list(srv.server.gos)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        gos = srv.call(lambda: list(srv.server.gos))[before:]
        order = [(g.task.split("#")[0], g.kid.split("|")[0]) for g in gos]
        assert order == [
            ("A", "aten.mul.Tensor"),
            ("B", "aten.sub.Tensor"),
            ("C", "aten.sub.Tensor"),
            ("A", "aten.add.Tensor"),
        ]
        assert [g.filler for g in gos] == [False, True, True, False]
        for c in clients.values():
            assert not c.failed_open
            c.close()
