"""What a policy returns, and a scratch planner that builds it.

A :class:`Decision` is a *change*: jobs to start or move (``assign``) and running jobs to stop
(``preempt``). Jobs it does not name keep what they have. The simulator validates the whole decision
(gang, capacity, feasibility) before applying any of it. Policies that think in full allocations use
:meth:`Decision.from_allocation`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType

from gpuweave.cluster.free_index import FreeIndex
from gpuweave.cluster.state import ClusterView, JobState, Placement


@dataclass(slots=True)
class Decision:
    assign: dict[str, Placement] = field(default_factory=dict)
    preempt: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.assign) or bool(self.preempt)

    @classmethod
    def from_allocation(cls, view: ClusterView, wanted: dict[str, Placement]) -> "Decision":
        """Diff a full desired allocation (job -> placement for every job that should run) against now."""
        decision = cls()
        running = view.running
        assign, preempt = decision.assign, decision.preempt
        for job_id, js in running.items():
            want = wanted.get(job_id)
            if want is None:
                preempt.append(job_id)
            # A kept placement is normalized; one equal to it as it stands needs no normalizing (most are), and
            # neither does one (node, k > 0) pair that differs from it: it is normal, so it differs normalized too.
            elif want is not js.placement and not (type(want) is tuple and want == js.placement):
                if (type(want) is tuple and len(want) == 1 and type(want[0]) is tuple and want[0][1] > 0) or (
                    normalize(want) != js.placement
                ):
                    assign[job_id] = want
        for job_id, want in wanted.items():
            if job_id not in running:
                assign[job_id] = want
        return decision


# The decision that changes nothing, shared: read-only (a policy that wants to add to a decision builds its own).
NO_CHANGE = Decision(assign=MappingProxyType({}), preempt=())  # type: ignore[arg-type]  # read-only on purpose


_UNTRACKED: set[int] = set()  # a plan's touched nodes when no model is indexed (never written)


def normalize(placement: Iterable[tuple[int, int]]) -> Placement:
    """Merge duplicate nodes, drop zero counts and sort by node."""
    if type(placement) is tuple:  # a placer's spread is normal already (nodes ascending, no zero): kept, not rebuilt
        last = -1
        for pair in placement:
            if type(pair) is not tuple or len(pair) != 2 or not pair[0] > last or not pair[1]:
                break
            last = pair[0]
        else:
            return placement
    counts: dict[int, int] = {}
    for node, n in placement:
        counts[node] = counts.get(node, 0) + n
    return tuple(sorted((node, n) for node, n in counts.items() if n))


class Plan:
    """A scratch copy of free capacity a policy fills in, then turns into a Decision.

    ``take``/``release`` keep the scratch free counts consistent, so placement helpers can be called
    repeatedly within one scheduling step.
    """

    __slots__ = ("view", "free", "free_by_model", "decision", "free_index", "touched", "shares")

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.free = list(view.free)
        self.free_by_model = dict(view.free_by_model)
        self.decision = Decision()
        # The book's index holds the free counts this plan started from; the nodes the plan changed are read from
        # ``free`` (see gpuweave.cluster.free_index). Without an indexed model, nothing is tracked.
        index = view.free_index
        self.free_index: FreeIndex | None = index if index.buckets else None
        self.touched: set[int] = set() if index.buckets else _UNTRACKED
        # A shared run's ledger (None: whole GPUs): a start takes its share there at once, and the plan's counts
        # of the nodes it starts on are read back from it (gpuweave.cluster.sharing.ledger).
        self.shares = view.shares

    def most_free(self) -> int:
        """Free GPUs of the GPU model with the most (no one-model gang wider than this can start)."""
        return max(self.free_by_model.values())

    def start(self, js: JobState, placement: Placement) -> None:
        nodes = self.view.nodes
        for node, n in placement:
            self.free[node] -= n
            self.free_by_model[nodes[node].gpu_model] -= n
        if self.free_index is not None:
            self.touched.update(node for node, _ in placement)
        if self.shares is not None:
            self.shares.take(js, placement)
            for node, _ in placement:
                opened = self.shares.open_gpus(node)
                self.free_by_model[nodes[node].gpu_model] += opened - self.free[node]
                self.free[node] = opened
        self.decision.assign[js.job.job_id] = placement

    def stop(self, js: JobState) -> None:
        if js.placement is None:
            return
        nodes = self.view.nodes
        for node, n in js.placement:
            self.free[node] += n
            self.free_by_model[nodes[node].gpu_model] += n
        if self.free_index is not None:
            self.touched.update(node for node, _ in js.placement)
        if self.shares is not None:  # its share is free for this plan's later starts (ShareLedger.unhold)
            self.shares.unhold(js.job.job_id)
            for node, _ in js.placement:
                opened = self.shares.open_gpus(node)
                self.free_by_model[nodes[node].gpu_model] += opened - self.free[node]
                self.free[node] = opened
        self.decision.preempt.append(js.job.job_id)
