"""What the cluster's book knows about jobs and what it shows policies.

A :class:`Placement` is a tuple of ``(node_index, gpu_count)`` pairs with distinct nodes, sorted by node.
GPUs inside one node are interchangeable (one model per node), so counts per node are the whole story.

:class:`ClusterView` is handed to a policy when its trigger fires. It exposes the cluster's book's live
structures (no copies: a decision costs O(what the policy reads), not O(cluster)); policies must treat
everything in it as read-only and express what they want as a :class:`~gpuweave.cluster.decision.Decision`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar, overload, runtime_checkable

from gpuweave.cluster.placements import PlacementRule, make_placement
from gpuweave.workload.job import Job

if TYPE_CHECKING:
    from _typeshed import SupportsKeysAndGetItem

    from gpuweave.cluster.epoch_rounding import EpochClock
    from gpuweave.cluster.free_index import FreeIndex
    from gpuweave.cluster.sharing.ledger import ShareLedger
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.workload.pollux_agent import AgentState
    from gpuweave.workload.profile_source import ProfileSource

Placement = tuple[tuple[int, int], ...]
K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


@dataclass(slots=True, eq=False)
class JobState:
    """Mutable per-job bookkeeping owned by the cluster's book."""

    job: Job
    remaining: float  # iterations left as of `settled_at`
    placement: Placement | None = None
    rate: float = 0.0  # iterations/s on the current placement
    seg_start: float = 0.0  # when the current placement began (GPUs held from here)
    productive_start: float = 0.0  # seg_start + restart delay: progress accrues from here
    first_start: float | None = None
    end: float | None = None
    restarts: int = 0
    version: int = 0  # bumps on every placement change; stale completion events are skipped
    attained_gpu_seconds: float = 0.0  # GPU-seconds held so far (closed segments)
    gpu_seconds_by_model: dict[str, float] = field(default_factory=dict)
    energy_j: float = 0.0
    cost: float = 0.0

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def num_gpus(self) -> int:
        return self.job.num_gpus


class CountedDict(dict[K, V]):
    """A dict that counts its changes, so a policy can tell in O(1) that a queue is as it last saw it.

    Reads are the plain dict's; only writes go through Python (``changes`` += 1 per write call)."""

    __slots__ = ("changes",)

    def __init__(self) -> None:
        super().__init__()
        self.changes = 0

    def __setitem__(self, key: K, value: V) -> None:
        self.changes += 1
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: K) -> None:
        self.changes += 1
        dict.__delitem__(self, key)

    @overload
    def pop(self, key: K, /) -> V: ...
    @overload
    def pop(self, key: K, default: V, /) -> V: ...
    @overload
    def pop(self, key: K, default: T, /) -> V | T: ...
    def pop(self, key: K, *default: Any) -> Any:
        self.changes += 1
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[K, V]:
        self.changes += 1
        return dict.popitem(self)

    def setdefault(self, key: K, default: Any = None) -> Any:
        self.changes += 1
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.changes += 1
        dict.update(self, *args, **kwargs)

    def clear(self) -> None:
        self.changes += 1
        dict.clear(self)

    # ``queue |= more`` is a write too (dict's own |= would not count it). The ignore: mypy wants __ior__ to match
    # typeshed's overloaded dict.__or__, which this does not change.
    def __ior__(self, other: SupportsKeysAndGetItem[K, V]) -> Self:  # type: ignore[override,misc]
        self.changes += 1
        dict.update(self, other)
        return self


# dict's own writes, for the book's hot paths (a start, a completion, an arrival): the writer adds them to the queue's
# ``changes`` itself. CountedDict's overrides are one Python call per write, and a job makes four.
queue_set = dict.__setitem__
queue_pop = dict.pop
queue_del = dict.__delitem__


class ClusterState(Protocol):
    """What a :class:`ClusterView` reads of the cluster's book (:class:`~gpuweave.cluster.book.ClusterBook`).

    The containers are the book's own live objects, changed in place and never rebound."""

    nodes: list[Node]
    free: list[int]
    free_index: FreeIndex
    free_by_model: dict[str, int]
    models: list[str]
    nodes_by_model: dict[str, list[int]]
    pending: CountedDict[str, JobState]
    running: CountedDict[str, JobState]
    now: float
    profiles: ProfileSource
    restart_delay: float
    ideal_placement: bool
    fastest_cache: dict[tuple[str, int, tuple[str, ...] | None], list[str]]
    shares: ShareLedger | None
    epoch_clock: EpochClock | None
    agents: JobAgents | None

    def placement_rate(self, job: Job, num_gpus: int, placement: Placement, strict: bool = True) -> float: ...

    def spread_rate(self, job: Job, model: str) -> float | None: ...

    def job_model_rate(self, job: Job, model: str, consolidated: bool, strict: bool = False) -> float: ...

    def fastest_models(self, job: Job) -> list[str]: ...


@runtime_checkable
class JobAgents(Protocol):
    """Where adaptive jobs' agents live: the simulator's :class:`~gpuweave.cluster.adaptive_clock.AdaptiveClock`,
    or a live run's measured agents (:class:`~gpuweave.live.agents.LiveAgents`)."""

    def agent(self, js: JobState, t: float) -> AgentState | None: ...


class ClusterView:
    """Read-only window on the cluster's book for policies (see module docstring).

    The containers (``nodes``, ``free``, ``free_by_model``, ``models``, ``nodes_by_model``, ``pending``,
    ``running``) are the book's own live objects, bound once: a policy reads them as plain attributes (a policy
    call reads them several times per job; a property each time was a tenth of FIFO's cost). The book changes
    them in place and never rebinds them. ``round_length`` is the driving policy's (its driver sets it);
    ``placement`` is the run's placement rule."""

    __slots__ = (
        "_book",
        "nodes",
        "free",
        "free_index",
        "free_by_model",
        "models",
        "nodes_by_model",
        "pending",
        "running",
        "round_length",
        "placement",
        "shares",
    )

    def __init__(
        self, book: ClusterState, round_length: float | None = None, placement: PlacementRule | None = None
    ) -> None:
        self._book = book
        self.nodes: list[Node] = book.nodes
        self.free: list[int] = book.free  # free GPUs per node index
        self.free_index: FreeIndex = book.free_index  # nodes by (model, free GPUs), kept with ``free``
        self.free_by_model: dict[str, int] = book.free_by_model
        self.models: list[str] = book.models  # GPU models present in the cluster, in first-appearance order
        self.nodes_by_model: dict[str, list[int]] = book.nodes_by_model
        # arrived, unfinished jobs without GPUs, in arrival order; both queues count their writes (CountedDict)
        self.pending: CountedDict[str, JobState] = book.pending
        self.running: CountedDict[str, JobState] = book.running
        self.round_length = round_length  # seconds between the policy's rounds (None: event-driven)
        # where on a GPU model a gang goes (cluster.placements; the run config's placement_rule)
        self.placement: PlacementRule = placement if placement is not None else make_placement()
        # a shared run's ledger (tasks holding shares of GPUs; None: whole GPUs), read by plans
        self.shares: ShareLedger | None = book.shares

    @property
    def now(self) -> float:
        return self._book.now

    @property
    def version(self) -> tuple[int, int, int, int]:
        """Equal between two calls only if no job arrived, started, moved, stopped or finished in between and the
        profiles are the same object."""
        book = self._book
        return (book.pending.changes, book.running.changes, id(book.profiles), id(book.nodes))

    @property
    def profiles(self) -> ProfileSource:
        return self._book.profiles

    @property
    def restart_delay(self) -> float:
        return self._book.restart_delay

    @property
    def ideal_placement(self) -> bool:
        """Every placement runs at the consolidated rate (the cluster's ``placement: ideal``)."""
        return self._book.ideal_placement

    def rate(self, js: JobState, placement: Placement) -> float:
        """Iterations/s of a job on a placement (slowest model, unconsolidated across nodes); 0 if it
        cannot run there or the profile has no entry for it."""
        total = sum(k for _, k in placement)  # num_gpus, except for opt-in moldable jobs
        return self._book.placement_rate(js.job, total, placement, strict=False)

    def spread_rate(self, js: JobState, model: str) -> float | None:
        """Iterations/s of the job spread over several nodes of ``model`` (what :meth:`rate` gives for any such
        placement), or None when the profile source rates each split of GPUs per node differently (then only
        :meth:`rate` of the placement knows). A placer reads it before building a spread that could not run."""
        return self._book.spread_rate(js.job, model)

    def model_rate(self, js: JobState, model: str, consolidated: bool = True) -> float:
        """Iterations/s of the job on ``model`` (0 if it cannot run there or the entry is not profiled)."""
        return self._book.job_model_rate(js.job, model, consolidated)

    def fastest_models(self, js: JobState) -> list[str]:
        """GPU models the job can run on, fastest consolidated rate first (cached; do not mutate)."""
        job = js.job
        found = self._book.fastest_cache.get((job.job_type, job.num_gpus, job.allowed_models))  # read here first
        return found if found is not None else self._book.fastest_models(job)

    def remaining(self, js: JobState) -> float:
        """Iterations left now (running jobs progress continuously)."""
        if js.placement is None:
            return js.remaining
        book = self._book
        if book.epoch_clock is not None:
            return max(0.0, js.remaining - book.epoch_clock.progress(js, book.now))
        done = max(0.0, book.now - js.productive_start) * js.rate
        return max(0.0, js.remaining - done)

    def epochs_done(self, js: JobState) -> int | None:
        """Epochs the job has finished, as Pollux's simulator counts them; None when the run's profile source does
        not know epochs (:mod:`gpuweave.cluster.epoch_rounding`)."""
        clock = self._book.epoch_clock
        return None if clock is None else clock.epochs_done(js, self._book.now)

    def job_agent(self, js: JobState) -> AgentState | None:
        """The job's own agent now, where the run's jobs adapt their batches (Pollux's policy: its goodput model and
        restarts; simulated, :mod:`gpuweave.cluster.adaptive_clock`; live, :mod:`gpuweave.live.agents`); None
        otherwise."""
        agents = self._book.agents
        return None if agents is None else agents.agent(js, self._book.now)

    def attained_service(self, js: JobState) -> float:
        """GPU-seconds the job has held so far (Tiresias' attained service); in a shared run its share of each GPU
        counts, as the book counts it when the job leaves its GPUs."""
        placement = js.placement
        if placement is None:
            return js.attained_gpu_seconds
        held: float = placement[0][1] if len(placement) == 1 else sum(k for _, k in placement)
        if self.shares is not None:
            held *= self.shares.share(js.job.job_id)
        return js.attained_gpu_seconds + (self._book.now - js.seg_start) * held
