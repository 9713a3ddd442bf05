"""``keep_nodes`` (the ANDREAS adapter's relabelling of a plan among interchangeable nodes) gives the plans of its
first form, kept here as the reference, on random clusters, running sets and plans; and it only relabels among
twins (same GPU model, GPU count and GPUs held by spread jobs)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

from gpuweave.cluster.policies.andreas_instance import keep_nodes


@dataclass(frozen=True)
class _Node:
    index: int
    gpu_model: str
    num_gpus: int


@dataclass
class _Job:
    placement: tuple


class _View:
    def __init__(self, nodes, running):
        self.nodes, self.running = nodes, running


def _reference(view, wanted: dict, reserved: np.ndarray) -> dict:
    """The first form: classes rebuilt per call, one matching per class over its planned nodes' jobs."""
    if not wanted:
        return wanted
    nodes, running = view.nodes, view.running
    classes: dict[tuple, list[int]] = {}
    held = reserved.tolist()
    for nd in nodes:
        classes.setdefault((nd.gpu_model, nd.num_gpus, held[nd.index]), []).append(nd.index)
    bins: dict[int, list[str]] = {}
    for jid, p in wanted.items():
        bins.setdefault(p[0][0], []).append(jid)
    remap: dict[int, int] = {}
    for members in classes.values():
        if len(members) < 2:
            continue
        in_class = set(members)
        pairs = []
        for b in members:
            kept: dict[int, int] = {}
            for jid in bins.get(b, ()):
                js = running.get(jid)
                if js is not None and len(js.placement) == 1 and js.placement[0][1] == wanted[jid][0][1]:
                    node = js.placement[0][0]
                    kept[node] = kept.get(node, 0) + js.placement[0][1]
            pairs += [(-gpus, b, node) for node, gpus in kept.items() if node in in_class]
        pairs.sort()
        used_b: set[int] = set()
        used_n: set[int] = set()
        for _neg, b, node in pairs:
            if b not in used_b and node not in used_n:
                remap[b] = node
                used_b.add(b)
                used_n.add(node)
        rest_n = iter([nd for nd in members if nd not in used_n])
        for b in members:
            if b not in used_b:
                remap[b] = next(rest_n)
    if all(remap.get(b, b) == b for b in bins):
        return wanted
    return {jid: ((remap.get(p[0][0], p[0][0]), p[0][1]),) for jid, p in wanted.items()}


def _case(rng: random.Random):
    nodes = [_Node(i, rng.choice(["V100", "K80"]), rng.choice([4, 8])) for i in range(rng.randint(1, 14))]
    reserved = np.array([rng.choice([0, 0, 0, 2]) for _ in nodes])
    running, wanted = {}, {}
    for j in range(rng.randint(0, 30)):
        jid = f"j{j}"
        g = rng.choice([1, 1, 2, 4])
        if rng.random() < 0.6:
            running[jid] = _Job(((rng.randrange(len(nodes)), rng.choice([g, g, 2])),))
        if rng.random() < 0.8:
            wanted[jid] = ((rng.randrange(len(nodes)), g),)
    return _View(nodes, running), wanted, reserved


@pytest.mark.parametrize("seed", range(6))
def test_keep_nodes_gives_the_first_form_s_plans(seed):
    rng = random.Random(seed)
    moved = 0
    for _ in range(300):
        view, wanted, reserved = _case(rng)
        got = keep_nodes(view, wanted, reserved)
        assert got == _reference(view, wanted, reserved)
        moved += got is not wanted
        for jid, p in got.items():  # a planned node is only ever swapped for a twin
            a, b = view.nodes[wanted[jid][0][0]], view.nodes[p[0][0]]
            assert (a.gpu_model, a.num_gpus, reserved[a.index]) == (b.gpu_model, b.num_gpus, reserved[b.index])
    assert moved > 0  # the cases do relabel


def test_a_job_stays_on_its_node_among_twins_and_nothing_is_relabelled_across_models():
    view, wanted, reserved = (
        _View([_Node(0, "V100", 8), _Node(1, "V100", 8)], {"a": _Job(((1, 4),))}),
        {"a": ((0, 4),)},
        np.zeros(2, dtype=int),
    )
    assert keep_nodes(view, wanted, reserved) == {"a": ((1, 4),)}  # twins: the job stays where it runs
    other = _View([_Node(0, "V100", 8), _Node(1, "K80", 8)], view.running)  # not twins any more
    assert keep_nodes(other, wanted, reserved) is wanted
