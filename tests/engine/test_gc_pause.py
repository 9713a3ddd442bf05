"""The collector guard of long runs: old objects frozen and full collections off while held, everything restored
after (also on an error and when nested), and young reference cycles still freed."""

from __future__ import annotations

import gc
import weakref

import pytest

from gpuweave.cluster.decision import NO_CHANGE
from gpuweave.engine.gc_pause import old_objects_left_alone
from gpuweave.engine.loop import EventLoop


class _Node:
    def __init__(self) -> None:
        self.other = self


def test_guard_freezes_old_objects_suspends_full_collections_and_restores_both():
    before_threshold, before_frozen = gc.get_threshold(), gc.get_freeze_count()
    old = [_Node() for _ in range(100)]
    with old_objects_left_alone():
        assert gc.get_freeze_count() >= before_frozen + len(old)
        assert gc.get_threshold()[:2] == before_threshold[:2]
        assert gc.get_threshold()[2] > 10**8  # generation 2 is never due
    assert gc.get_threshold() == before_threshold
    assert gc.get_freeze_count() == before_frozen


def test_guard_nests_and_restores_on_error():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(RuntimeError):
        with old_objects_left_alone():
            with old_objects_left_alone():
                pass
            assert gc.get_threshold()[2] > 10**8  # the inner exit leaves the outer guard in force
            raise RuntimeError("boom")
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_young_reference_cycles_are_still_freed_inside_the_guard():
    with old_objects_left_alone():
        node = _Node()
        ref = weakref.ref(node)
        del node
        gc.collect(1)  # a young collection, as the collector runs on its own while the guard is held
        assert ref() is None


def test_an_event_loop_run_leaves_the_collector_as_it_found_it():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    seen: list[float] = []
    loop = EventLoop()
    loop.on(0, lambda t, _payload: seen.append(t))
    for t in (3.0, 1.0, 2.0):
        loop.push(t, 0)
    loop.run()
    assert seen == [1.0, 2.0, 3.0]
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_the_shared_empty_decision_cannot_be_changed():
    assert not NO_CHANGE
    with pytest.raises(TypeError):
        NO_CHANGE.assign["job"] = ((0, 1),)
    with pytest.raises(AttributeError):
        NO_CHANGE.preempt.append("job")
