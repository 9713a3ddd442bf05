"""Build and run one simulation from a :class:`SimulationConfig`, and write its result directory."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.cluster.config import SimulationConfig
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.placements import make_run_placement
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.results import write_streamed_run
from gpuweave.cluster.simulator import RecordSink, SimulationRecords, Simulator
from gpuweave.engine.gc_pause import old_objects_left_alone
from gpuweave.errors import InputError
from gpuweave.workload.job import scale_arrivals
from gpuweave.workload.profile_source import ProfileSource
from gpuweave.workload.traced_rates import TRACED, TracedDurations

if TYPE_CHECKING:
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.workload.job import Job


@dataclasses.dataclass
class PreparedRun:
    config: SimulationConfig
    nodes: list[Node]
    jobs: list[Job]
    profiles: ProfileSource
    gpu_power: dict[str, tuple[float, float]]
    ideal_placement: bool = False  # the cluster's ``placement: ideal``
    notes: list[str] = dataclasses.field(default_factory=list)  # what the user should know before reading results


def prepare(config: SimulationConfig, jobs: list[Job] | None = None) -> PreparedRun:
    """Cluster nodes, profiles and jobs of a run; ``jobs`` given (the service's, possibly none) replace the trace
    and keep their own arrivals, while the trace's or generator's are scaled by ``arrival_scale``."""
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.hardware.cluster_spec import load_cluster
    from gpuweave.workload.profiles import load_profiles

    spec = load_cluster(config.cluster)
    nodes = spec.expand()
    if config.sharing is not None:
        nodes = with_sharing(nodes, config.sharing)
    profiles: ProfileSource
    if config.profiles == TRACED:  # every job at its trace's duration, on any GPU (a replay)
        if config.trace is None:
            raise InputError("profiles: traced runs a trace's own durations; give a trace", field="profiles")
        profiles = TracedDurations()
    else:
        profiles = load_profiles(config.profiles, extrapolate=config.extrapolate_profiles)
    max_gpus = max(spec.gpus_by_model().values())
    # The cyclic collector left off the jobs while they are made: otherwise its full collections walk the growing
    # trace again and again (a generated 3 x 10^5-job trace: 1.05 s of CPU with them, 0.74 s without).
    with old_objects_left_alone():
        if jobs is not None:
            jobs = list(jobs)
        else:
            if config.trace is not None:
                from gpuweave.workload.traces.schema import read_trace

                jobs = read_trace(config.trace, profiles=profiles, max_gpus=max_gpus)
            else:
                from gpuweave.workload.traces.generate import generate_philly_like

                assert not isinstance(profiles, TracedDurations)  # refused above
                jobs = generate_philly_like(config.jobs, config.rate_per_hour, config.seed, profiles=profiles)
            scale_arrivals(jobs, config.arrival_scale)  # the one place a run's arrivals are compressed or stretched
    ideal = (config.placement or spec.placement) == "ideal"
    notes = unprofiled_gpus(spec.gpus_by_model(), profiles, config.profiles)
    return PreparedRun(config, nodes, jobs, profiles, gpu_power(nodes), ideal, notes)


def with_sharing(nodes: list[Node], sharing: str) -> list[Node]:
    """Every node with its GPUs shared as ``sharing`` says (a run config's ``sharing``); MIG needs MIG-capable GPUs
    (InputError naming the models that are not)."""
    from gpuweave.hardware.catalog import get_gpu

    if sharing == "mig":
        lacking = sorted({n.gpu_model for n in nodes if not get_gpu(n.gpu_model).mig_capable})
        if lacking:
            raise InputError(f"sharing mig needs MIG-capable GPUs; {', '.join(lacking)} are not", field="sharing")
    return [dataclasses.replace(n, sharing=sharing) for n in nodes]


def unprofiled_gpus(gpus_by_model: dict[str, int], profiles: ProfileSource, source: str | None) -> list[str]:
    """A note per GPU model of the cluster that the profiles have no rate for: no job can run there, so its GPUs
    stay idle (a PAI replay on PAI's machines has 994 T4s that Gavel's table does not cover). O(models)."""
    known = set(profiles.gpu_models())
    table = source or "the bundled Gavel table (K80, P100, V100)"
    return [
        f"{model}: {count:,} GPUs, and {table} has no throughput for {model}: no job can run on them (give "
        f"--profiles with {model} rows, or leave them out of the cluster)"
        for model, count in sorted(gpus_by_model.items())
        if model not in known
    ]


def gpu_power(nodes: list[Node]) -> dict[str, tuple[float, float]]:
    """(idle W, max W) of every GPU model of ``nodes``, from the GPU catalog."""
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.hardware.catalog import get_gpu

    power: dict[str, tuple[float, float]] = {}
    for node in nodes:
        gpu = get_gpu(node.gpu_model)
        power[node.gpu_model] = (gpu.power_idle_w, gpu.power_max_w)
    return power


def build_policy(config: SimulationConfig) -> ClusterPolicy:
    """The run's policy: its options from ``policy_options``, ``round_length`` and ``seed`` from the run config
    (the run's seed wins over a ``seed`` in policy_options). The simulator and the live runtime both use it."""
    options = dict(config.policy_options)
    options.pop("seed", None)
    return make_policy(config.policy, round_length=config.round_length, seed=config.seed, **options)


def simulate(
    config: SimulationConfig,
    prepared: PreparedRun | None = None,
    progress: Callable[[int], None] | None = None,
    sink: RecordSink | None = None,
    record_segments: bool = True,
) -> SimulationRecords:
    """Run the config's trace through the simulator; ``progress(done)`` gets the finished-job count now and then;
    ``sink`` takes the allocation and time-series records as they come (see :class:`Simulator`)."""
    prepared = prepared or prepare(config)
    policy = build_policy(config)
    sim = Simulator(
        prepared.nodes,
        prepared.jobs,
        policy,
        prepared.profiles,
        prepared.gpu_power,
        restart_delay=config.restart_delay,
        start_delay=config.start_delay,
        ideal_placement=prepared.ideal_placement,
        placement=make_run_placement(config.placement_rule),
        progress=progress,
        sink=sink,
        record_segments=record_segments,
    )
    return sim.run()


def run_simulation(
    config: SimulationConfig,
    out_dir: str | Path,
    progress: Callable[[int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> dict[str, float | int]:
    """Simulate and write jobs.csv, allocations.csv, timeseries.csv and summary.json into ``out_dir``;
    ``progress(done, total)`` is told the finished jobs about every 1% of the trace, ``notify`` the run's notes
    (:attr:`PreparedRun.notes`) before it starts."""
    prepared = prepare(config)
    if notify is not None:
        for note in prepared.notes:
            notify(note)
    total = len(prepared.jobs)
    hook = None if progress is None else (lambda done: progress(done, total))
    # Records go to the files as the run goes and segments (no file holds them) are not kept: a run's memory is
    # its jobs', whatever the number of allocation changes (10^6 jobs of Gavel move about 7 x 10^7 times).
    return write_streamed_run(
        lambda sink: simulate(config, prepared, hook, sink, record_segments=False),
        config.model_dump(mode="json"),
        Path(out_dir),
        prepared.nodes,
    )
