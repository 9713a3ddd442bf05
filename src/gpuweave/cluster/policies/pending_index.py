"""Pending jobs indexed by what can start them, for event-driven policies whose cost must not grow with the queue.

Problem: a non-preemptive policy (FIFO, SJF, YARN-CS) offers waiting jobs, in its own order, to a placer that
starts each one that fits. Re-scanning or re-sorting the whole queue on every event costs O(P) or O(P log P) per
event and O(N·P) per run under a backlog.

Index: jobs are grouped into *start classes* ``(num_gpus, job_type, allowed GPU models)``; every job of a class
fits exactly where any other does (same gang size, same profiled rates, same GPU-type constraint), and capacity only
shrinks within one call, so once a class's first job fails to start no later job of that class can start in that
call. Each class keeps a heap keyed by the policy's order (keys are unique); for each GPU count a heap of its
classes' head keys (stale entries dropped lazily) lets a call look only at counts no wider than the room the caller
gives (the free GPUs of one GPU model, since a gang runs on one), never at a job that cannot fit. A call takes the
smallest head among those counts, offers it, and sets a failed class aside until the call ends.
``strict`` (head-of-line blocking) keeps one queue: only its head is ever offered.

Complexity: O((S + F) (G + log P)) per call for S jobs started, F classes that failed and G distinct GPU counts
(F and G are bounded by the trace's distinct (GPU count, job type, constraint) triples, not by P); O(log P) per
arrival. Only counts no wider than the caller's ``room`` (the GPUs free on one GPU model) are offered. The
index learns arrivals from the tail of ``view.pending`` (insertion-ordered: a job that becomes pending goes to its
end) and rebuilds itself, O(P), only if the queue changed in some other way (a driver that dropped a job or did
not apply a start).
"""

from __future__ import annotations

import heapq
from collections import deque
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from gpuweave.cluster.state import ClusterView, JobState

if TYPE_CHECKING:
    from gpuweave.cluster.sharing.ledger import ShareLedger
    from gpuweave.workload.job import Job

Key = Any  # the policy's order; must be unique per job and comparable
StartClass = tuple[int, str]
_ONE_QUEUE: StartClass = (0, "")  # the class of every job under strict


def _whole_gpu_class(job: Job) -> str:
    """A job's start class among whole-GPU jobs of its GPU count: its type and, if it has one, its GPU-type
    constraint (a V100-only job that does not fit says nothing of a K80-only one of the same type)."""
    return job.job_type if job.allowed_models is None else f"{job.job_type}|{'+'.join(job.allowed_models)}"


def arrival_order(_js: JobState, seq: int) -> int:
    """The order in which jobs became pending (FIFO)."""
    return seq


class PendingIndex:
    """The pending queue of ``view`` in a policy's order, grouped by start class (see module docstring).

    ``strict``: head-of-line blocking; one queue, since only its head is ever offered.
    """

    __slots__ = ("_key_of", "_strict", "_fifo", "_known", "_classes", "_heads", "_counts", "_seq", "_shares")

    def __init__(self, key_of: Callable[[JobState, int], Key], *, strict: bool = False) -> None:
        """``key_of(js, seq)`` is the job's order key; ``seq`` counts jobs in the order they became pending."""
        self._key_of = key_of
        self._strict = strict
        # Keys that only grow (arrival order): each class is a FIFO queue, O(1) per job instead of a heap's O(log P).
        self._fifo = key_of is arrival_order
        self._known: dict[str, JobState] = {}
        # class -> heap, or deque under arrival order, of entries: (key, job), or (*key, job) for a tuple key (one
        # level of tuple fewer to compare per heap step: SJF's keys are tuples and its heaps hold the backlog).
        self._classes: dict[StartClass, Any] = {}
        # GPU count -> heap of (head entry, class) of its classes; stale once its class's head is another entry.
        self._heads: dict[int, list[tuple[Key, StartClass]]] = {}
        self._counts: list[int] = []  # distinct GPU counts, ascending
        self._seq = 0
        # A shared run's ledger: jobs of one (GPUs, type) fit alike only if they ask the same shares, so its start
        # classes also name the request (ShareLedger.start_class). None: whole GPUs.
        self._shares: ShareLedger | None = None

    def __len__(self) -> int:
        return len(self._known)

    def sync(self, pending: dict[str, JobState]) -> None:
        """Take in the jobs that became pending since the last call (from the tail of ``pending``)."""
        known = self._known
        waiting = len(pending) - len(known)
        if waiting == 0:  # the common case after a completion: no arrival, and the walk below would stop at the tail
            last = next(reversed(pending), None)
            if last is None or known.get(last) is pending[last]:
                return
        elif waiting == 1:  # the common case after an arrival: one job after known jobs, without the walk below
            tail = reversed(pending)
            job_id, before = next(tail), next(tail, None)
            if job_id not in known and (before is None or known.get(before) is pending[before]):
                self._add(pending[job_id])
                return
        new = []
        for job_id in reversed(pending):
            js = pending[job_id]
            if known.get(job_id) is js:
                break
            new.append(js)
        for js in reversed(new):
            self._add(js)
        if len(known) != len(pending):  # changed other than at its tail: start again from the queue itself
            self._rebuild(pending)

    def _rebuild(self, pending: dict[str, JobState]) -> None:
        self._known.clear()
        self._classes.clear()
        self._heads.clear()
        self._counts.clear()
        for js in pending.values():
            self._add(js)

    def _add(self, js: JobState) -> None:
        job = js.job
        count = 0 if self._strict else job.num_gpus
        if self._strict:
            cls = _ONE_QUEUE
        else:
            cls = (count, _whole_gpu_class(job) if self._shares is None else self._shares.start_class(job))
        heap = self._classes.get(cls)
        if heap is None:
            heap = self._classes[cls] = deque() if self._fifo else []
            if count not in self._heads:
                self._heads[count] = []
                self._counts.append(count)
                self._counts.sort()
        key = self._key_of(js, self._seq)
        entry = (*key, js) if type(key) is tuple else (key, js)
        if self._fifo:
            heap.append(entry)
        else:
            heapq.heappush(heap, entry)  # type: ignore[arg-type]  # a list unless FIFO
        if heap[0] is entry and not self._strict:  # one queue under strict: its heap is read directly
            heapq.heappush(self._heads[count], (entry, cls))
        self._seq += 1
        self._known[job.job_id] = js

    def _head_class(self, count: int) -> StartClass | None:
        """The class holding the smallest key among those of ``count`` GPUs (dropping stale head entries)."""
        heads = self._heads[count]
        while heads:
            entry, cls = heads[0]
            heap = self._classes[cls]
            if heap and heap[0] is entry:
                return cls
            heapq.heappop(heads)
        return None

    def ready(self, view: ClusterView) -> bool:
        """Take in ``view``'s new waiting jobs; whether the next job to offer could start (a gang runs on one GPU
        model: no job can start unless it fits in the model with the most free GPUs)."""
        pending = view.pending
        if not pending:
            return False
        if view.shares is not self._shares:
            self._shares = view.shares
            self._rebuild(pending)
        self.sync(pending)
        return self.fits_any(max(view.free_by_model.values()))

    def fits_any(self, free_gpus: int) -> bool:
        """Whether the next job to offer could fit in ``free_gpus`` GPUs (O(distinct counts) amortised)."""
        if self._strict:
            heap = self._classes.get(_ONE_QUEUE)
            if not heap:
                return False
            head: JobState = heap[0][-1]  # typed here, not with bool(): fits_any runs after every event
            return head.job.num_gpus <= free_gpus
        head_class = self._head_class
        for count in self._counts:  # ascending; a loop, not any() over a generator: this runs after every event
            if count > free_gpus:
                return False
            if head_class(count) is not None:
                return True
        return False

    def start_in_order(self, room: Callable[[], int], try_start: Callable[[JobState], bool]) -> None:
        """Offer pending jobs to ``try_start`` in key order (it returns True when it started the job; the caller
        keeps its own plan); a class is offered nothing more after its first failure, and under ``strict``
        nothing at all is offered after the first failure.

        ``room()`` is the widest gang that could start now (e.g. the free GPUs of the GPU model with the most):
        ``try_start`` must fail for any wider job, so such jobs are not offered. It is read at the start and after
        every start. (Bounded by the free GPUs of the whole cluster instead, SJF at bench scale's moderate load offered
        three jobs wider than any model's free GPUs for every job it started.)"""
        if self._strict:
            self._start_strict(room, try_start)
            return
        heads_of, classes, known = self._heads, self._classes, self._known
        counts = self._counts
        head_class = self._head_class
        limit = room()
        failed: list[tuple[int, tuple[Key, StartClass]]] = []
        while True:
            best = None
            best_key: Any = None
            for count in counts:
                if count > limit:
                    break
                if head_class(count) is not None:
                    key = heads_of[count][0][0]
                    if best is None or key < best_key:
                        best, best_key = count, key
            if best is None:
                break
            heads = heads_of[best]
            cls = heads[0][1]
            heap = classes[cls]
            js = heap[0][-1]
            if try_start(js):
                heap.popleft() if self._fifo else heapq.heappop(heap)
                del known[js.job.job_id]
                if heap:
                    heapq.heapreplace(heads, (heap[0], cls))
                else:
                    heapq.heappop(heads)
                limit = room()
            else:
                failed.append((best, heapq.heappop(heads)))
        for count, entry in failed:  # failed classes keep their jobs for the next call
            heapq.heappush(heads_of[count], entry)

    def _start_strict(self, room: Callable[[], int], try_start: Callable[[JobState], bool]) -> None:
        """Head-of-line blocking: offer the one queue's head until one does not start."""
        heap = self._classes.get(_ONE_QUEUE)
        if not heap:
            return
        known = self._known
        pop = heap.popleft if self._fifo else partial(heapq.heappop, heap)
        limit = room()
        while heap:
            js = heap[0][-1]
            if js.job.num_gpus > limit or not try_start(js):
                return
            pop()
            del known[js.job.job_id]
            limit = room()
