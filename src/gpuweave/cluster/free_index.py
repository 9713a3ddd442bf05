"""An index of free capacity: each GPU model's nodes bucketed by their free GPUs, so best fit needs no node scan.

Problem: a policy placing a gang of ``n`` GPUs on one node of a model wants the node with the fewest free GPUs that
still holds ``n`` (lowest index on ties). Scanning every node of the model costs O(nodes) per start attempt, and a
production cluster (Alibaba PAI: 1,814 GPU machines) has thousands. The book keeps, per model, one list per free
count ``f`` (0 .. the model's largest node) of the nodes with exactly ``f`` free GPUs, sorted by index, updated on
every GPU taken or given back (O(log k + k) for a bucket of k nodes, the memmove in C).

A policy's scratch plan starts from the book's free counts and changes a few nodes (those it starts or stops jobs
on: ``touched``); :meth:`FreeIndex.best_fit` reads the touched nodes' scratch counts and the buckets for the rest.
Best fit then costs O(G + touched) for nodes of up to G GPUs, instead of O(nodes of the model), and gives exactly
the node the scan gives.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Collection, Sequence

from gpuweave.hardware.cluster_spec import Node


class FreeIndex:
    """Nodes by (GPU model, free GPUs), each bucket sorted by node index (see module docstring)."""

    __slots__ = ("buckets", "node_buckets")

    def __init__(self, nodes: Sequence[Node], free: Sequence[int], min_nodes: int = 0) -> None:
        """Index the models with at least ``min_nodes`` nodes (a scan of fewer is as fast as the index's upkeep)."""
        largest: dict[str, int] = {}
        count: dict[str, int] = {}
        for node in nodes:
            largest[node.gpu_model] = max(largest.get(node.gpu_model, 0), node.num_gpus)
            count[node.gpu_model] = count.get(node.gpu_model, 0) + 1
        self.buckets: dict[str, list[list[int]]] = {
            m: [[] for _ in range(g + 1)] for m, g in largest.items() if count[m] >= min_nodes
        }
        # Each node's model's buckets (None: not indexed), by node index: one list look-up per move instead of two.
        self.node_buckets: list[list[list[int]] | None] = [self.buckets.get(node.gpu_model) for node in nodes]
        for node in nodes:  # in index order: every bucket comes out sorted
            buckets = self.node_buckets[node.index]
            if buckets is not None:
                buckets[free[node.index]].append(node.index)

    def indexes(self, model: str) -> bool:
        """Whether ``model``'s nodes are indexed (else a caller scans them)."""
        return model in self.buckets

    def move(self, node: int, old: int, new: int) -> None:
        """Node ``node`` had ``old`` free GPUs and has ``new`` now."""
        buckets = self.node_buckets[node]
        if buckets is None:
            return
        bucket = buckets[old]
        del bucket[bisect_left(bucket, node)]
        insort(buckets[new], node)

    def best_fit(self, n: int, model: str, free: Sequence[int], touched: Collection[int]) -> int:
        """The node of an indexed ``model`` with the fewest free GPUs >= ``n`` (lowest index on ties), or -1 (also for
        a model without nodes or not indexed: ask :meth:`indexes` first). ``free`` is the
        caller's view of the free counts: the indexed ones for every node but those in ``touched``, whose counts
        are read from ``free`` itself."""
        buckets = self.buckets.get(model)
        if buckets is None:  # no node of that model
            return -1
        best, best_f = -1, len(buckets)
        if touched:
            node_buckets = self.node_buckets
            for node in touched:
                f = free[node]
                if node_buckets[node] is buckets and n <= f and (f < best_f or (f == best_f and node < best)):
                    best, best_f = node, f
        for f in range(n, len(buckets)):
            if f > best_f:
                break
            for node in buckets[f]:
                if touched and node in touched:
                    continue  # its bucket is the book's; the caller's count is read above
                if f < best_f or node < best:
                    best, best_f = node, f
                break
            if best_f <= f:
                break
        return best
