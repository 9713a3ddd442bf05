"""Server/core side of the C shim: one kernel-name form, 'released on arrival' gates, completion feedback."""

from __future__ import annotations

import json

from gpuweave.kernel.ids import clean_kernel_name
from gpuweave.kernel.profile import Profile
from gpuweave.kernel.protocol import Done, decode, encode
from gpuweave.kernel.sched import Go, SchedulerCore
from gpuweave.kernel.server import FakeClock, FikitServer
from gpuweave.kernel.torch_import import import_chrome_trace


def test_clean_kernel_name_matches_the_shim_rules():
    assert clean_kernel_name("void at::native::foo<float|int>(int)") == "void at::native::foo<float/int>(int)"
    assert clean_kernel_name("a\nb\u00e9") == "a?b??"  # per UTF-8 byte, as the C side sees them
    long = "k" * 1000
    out = clean_kernel_name(long)
    assert len(out) == 880 + 2 + 16 and out.startswith("k" * 880 + "~h") and out != clean_kernel_name(long + "x")


def test_import_torch_uses_the_same_name_form():
    ev = {
        "ph": "X",
        "cat": "kernel",
        "name": "void f<a|b>(int)",
        "ts": 0,
        "dur": 5,
        "args": {"grid": [2, 1, 1], "block": [64, 1, 1]},
    }
    trace, _ = import_chrome_trace({"traceEvents": [ev]})
    assert trace.ops[0].kid == "void f<a/b>(int)|b64,1,1|g2,1,1"


def _profile(key: str) -> Profile:
    return Profile(key, 1, {"k": 1.0}, {"k": 2.0}, {"k": 1})


def test_completion_rebases_the_holders_gap_on_the_real_end():
    core = SchedulerCore()
    core.register("hi", 0, _profile("hi"), now=0.0)
    out = core.request("hi", "k", 1, 0.0)
    assert any(isinstance(a, Go) for a in out)
    assert core.busy_until == 1.0 and core.tasks["hi"].gap_deadline == 3.0
    core.complete("hi", 1, 0.4)  # ran 0.4 ms, not the profiled 1 ms
    assert core.busy_until == 0.4 and core.tasks["hi"].gap_deadline == 2.4
    core.complete("hi", 7, 0.5)  # not its latest kernel: nothing changes
    core.complete("gone", 1, 0.5)  # unknown task: ignored
    assert core.tasks["hi"].gap_deadline == 2.4


def test_server_opens_the_top_class_and_closes_it_when_a_higher_one_registers():
    sent: list[tuple[dict, object]] = []
    clock = FakeClock()
    srv = FikitServer(
        lambda d, a: sent.append((json.loads(d), a)),
        clock,
        profiles={"lo": _profile("lo"), "hi": _profile("hi")},
    )
    srv.handle(encode("register", task_key="lo", pid=1, priority=5, mode="share"), "A")
    assert {"v": 1, "t": "gate", "pid": 1, "open": True} in [m for m, _ in sent]
    srv.handle(encode("register", task_key="hi", pid=2, priority=0, mode="share"), "B")
    gates = [(m["pid"], m["open"]) for m, _ in sent if m["t"] == "gate"]
    assert gates == [(1, True), (1, False), (2, True)]
    srv.handle(encode("unregister", pid=2), "B")
    assert [(m["pid"], m["open"]) for m, _ in sent if m["t"] == "gate"][-1] == (1, True)
    srv.handle(encode("done", pid=1, seq=3, t_client_ns=5), "A")
    assert decode(encode("done", pid=1, seq=3, t_client_ns=5)) == Done(1, 3, 5)
    assert srv.stats()["completions"] == 1 and srv.errors == 0
