"""The free index gives exactly the node a scan of the model's nodes gives (best fit, lowest index on ties), after any
sequence of takes and releases in the book and any scratch changes in a plan; and the book keeps it in step."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuweave.cluster.free_index import FreeIndex
from gpuweave.hardware.cluster_spec import Node


def _scan(nodes: list[Node], free: list[int], n: int, model: str) -> int:
    best, best_f = -1, 1 << 30
    for node in nodes:
        if node.gpu_model == model and n <= free[node.index] < best_f:
            best, best_f = node.index, free[node.index]
    return best


@st.composite
def _cluster(draw):
    shapes = draw(st.lists(st.tuples(st.sampled_from(["A", "B"]), st.integers(1, 8)), min_size=1, max_size=12))
    nodes = [Node(i, f"n{i}", model, gpus, 0.0, 1.0) for i, (model, gpus) in enumerate(shapes)]
    book_ops = draw(st.lists(st.tuples(st.integers(0, len(nodes) - 1), st.integers(0, 8)), max_size=30))
    plan_ops = draw(st.lists(st.tuples(st.integers(0, len(nodes) - 1), st.integers(0, 8)), max_size=6))
    return nodes, book_ops, plan_ops


@settings(max_examples=300, deadline=None)
@given(_cluster(), st.integers(1, 8), st.sampled_from(["A", "B"]))
def test_best_fit_is_the_scans_node(case, n, model):
    nodes, book_ops, plan_ops = case
    free = [node.num_gpus for node in nodes]
    index = FreeIndex(nodes, free)
    for node, value in book_ops:  # the book's counts change: the index follows
        new = min(value, nodes[node].num_gpus)
        index.move(node, free[node], new)
        free[node] = new
    scratch, touched = list(free), set()
    for node, value in plan_ops:  # a plan's scratch changes a few nodes
        scratch[node] = min(value, nodes[node].num_gpus)
        touched.add(node)
    assert index.best_fit(n, model, scratch, touched) == _scan(nodes, scratch, n, model)
    for node in nodes:  # every bucket sorted, every node in the bucket of its count
        bucket = index.node_buckets[node.index][free[node.index]]
        assert node.index in bucket and bucket == sorted(bucket)


def test_the_book_keeps_the_index_in_step_with_its_free_counts(monkeypatch):
    from gpuweave.cluster import book as book_module
    from gpuweave.cluster.book import ClusterBook
    from gpuweave.cluster.decision import Decision
    from gpuweave.workload.job import Job
    from gpuweave.workload.profiles import ProfileStore

    monkeypatch.setattr(book_module, "INDEXED_MODEL_NODES", 0)  # index every model, however few its nodes
    nodes = [Node(i, f"n{i}", "V100", 4, 0.0, 1.0) for i in range(3)]
    profiles = ProfileStore.from_rows([("A", "V100", k, True, 1.0) for k in (1, 2, 3, 4)])
    jobs = [Job(f"j{k}", 0.0, k, 100.0, "A") for k in (1, 2, 3)]
    book = ClusterBook(nodes, jobs, profiles, {"V100": (0.0, 1.0)})
    for js in book.states:
        book.arrive(js)
    book.apply(Decision(assign={"j1": ((0, 1),), "j2": ((1, 2),), "j3": ((2, 3),)}), "test")
    book.apply(Decision(assign={"j2": ((0, 2),)}), "test")  # a move
    book.complete(book.by_id["j3"])
    book.lose_node(1)
    assert book.free == [1, 0, 4]
    for node in range(3):
        assert node in book.free_index.node_buckets[node][book.free[node]]
    assert sum(len(b) for b in book.free_index.buckets["V100"]) == 3


@pytest.mark.parametrize("policy", ["fifo", "sjf", "yarn-cs", "hadar", "edf"])
def test_a_run_places_alike_with_and_without_the_index(monkeypatch, policy):
    """Every record of a run is the same whether best fit reads the index (every model indexed) or scans."""
    from gpuweave.bench import timed_sim
    from gpuweave.cluster import book as book_module

    def records():
        # Hadar's rounds cost about 10x the others': 100 jobs still fill the 64 GPUs and queue
        rec = timed_sim(100 if policy == "hadar" else 300, 64, policy, 600.0, 1, None)["records"]
        return [(a.time, a.job_id, a.node, a.gpus) for a in rec.allocations], [js.end for js in rec.jobs]

    scanned = records()
    monkeypatch.setattr(book_module, "INDEXED_MODEL_NODES", 0)
    assert records() == scanned
