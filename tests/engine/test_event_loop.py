"""The event core's contract: (time, order, seq) dispatch, one ``before_instant``/``after_instant`` pair per
instant, and an instant whose handlers all returned ``STALE`` skipped by ``after_instant`` (not by
``before_instant``: the cluster simulator integrates energy there, over the same intervals either way)."""

from __future__ import annotations

from gpuweave.engine.loop import STALE, EventLoop


def _loop(log):
    loop = EventLoop()
    loop.on(0, lambda t, p: log.append(("real", t, p)))
    loop.on(1, lambda t, p: (log.append(("stale", t, p)), STALE)[1])
    return loop


def test_events_run_in_time_order_then_kind_order_then_push_order():
    log = []
    loop = _loop(log)
    loop.push(2.0, 0, "b", order=1)
    loop.push(2.0, 0, "a", order=0)
    loop.push(1.0, 0, "first")
    loop.push(2.0, 0, "c", order=1)
    loop.run()
    assert [p for _, _, p in log] == ["first", "a", "b", "c"]
    assert loop.events == 4 and loop.now == 2.0


def test_an_instant_of_stale_events_only_gets_before_instant_and_no_after_instant():
    log, before, after = [], [], []
    loop = _loop(log)
    loop.push(1.0, 0, "x")
    loop.push(2.0, 1, "gone")  # stale alone: no after_instant
    loop.push(2.0, 1, "gone too")
    loop.push(3.0, 1, "old")  # stale beside a real event: after_instant runs
    loop.push(3.0, 0, "y")
    loop.run(before_instant=before.append, after_instant=after.append)
    assert before == [1.0, 2.0, 3.0]
    assert after == [1.0, 3.0]
    assert [p for _, _, p in log] == ["x", "gone", "gone too", "old", "y"]  # same time and order: push order
    assert loop.events == 5


def test_handlers_that_return_other_values_count_as_having_acted():
    after = []
    loop = EventLoop()
    loop.on(0, lambda t, p: p)  # returns its payload: anything but STALE is an event that acted
    for t, value in ((1.0, None), (2.0, 0), (3.0, True), (4.0, "STALE")):
        loop.push(t, 0, value)
    loop.run(after_instant=after.append)
    assert after == [1.0, 2.0, 3.0, 4.0]


def test_stop_from_a_handler_ends_the_run_after_that_event():
    log, after = [], []
    loop = EventLoop()
    loop.on(0, lambda t, p: (log.append(p), loop.stop() if p == "stop" else None))
    for t, p in ((1.0, "a"), (2.0, "stop"), (2.0, "same instant"), (3.0, "later")):
        loop.push(t, 0, p)
    loop.run(after_instant=after.append)
    assert log == ["a", "stop"] and after == [1.0]
    assert len(loop) == 2
