"""Sia's job model (Jayaram Subramanya et al., SOSP'23, sec. 6 and its artifact's simulator), as a profile source.

Problem: replay Sia's workloads with the job progress of Sia's own simulator (siasosp23/artifacts, commit aaf7a0d,
``sia-simulator/job.py``, ``applications.py``, ``simulator_config.py``). It is Pollux's job model
(:mod:`gpuweave.workload.pollux`) once per GPU type: each application keeps one set of ``validation-<batch>.csv``
(statistical efficiency does not depend on the GPU) and, per GPU type ``<t>``, its own ``placements-<t>.csv`` and
``scalability-<t>.csv``. Where Sia's simulator departs from Pollux's:

- a batch is split by the largest local batch measured *on the job's placement* (else on the scalability rows
  with at least its nodes and GPUs), then capped at the largest measured for its GPU count
  (:meth:`~gpuweave.workload.pollux.PolluxApp.placement_batch_plan`);
- a job's progress is divided by its application's calibration slowdown (``SLOWDOWNS``: cifar10 1.8, ncf 1.5, the
  others 1.2);
- every allocation that changes a job's GPUs per node, its first included, idles it for the application's
  checkpoint-restore time (cifar10 50 s, deepspeech2 25 s, bert 120 s, yolov3 80 s, imagenet 250 s, ncf 15 s);
  the same GPUs per node on other nodes of the same type cost nothing;
- placements are keyed as given (GPUs per node in node order, rotated to the smallest), not sorted.

Sia's cluster names map to the GPU catalog (:data:`SIA_GPU_TYPES`): ``aws`` (g4dn.12xlarge) is T4, ``dgx-ext``
(DGX-A100 with the extended batch sizes, Sia's default) A100-40GB, ``rtx`` RTX2080Ti, ``azure`` (ND40rs_v2) V100.
Its ``dgx`` (the same A100s, fewer batch sizes) and ``quad`` (Quadro RTX 6000) are not mapped.

Job types are Pollux's, ``"<app> (batch size <B>)"``; a job's ``work`` is counted in steps of the reference type
(``rtx``, Sia's calibration cluster) and only sizes the book's progress: the clock
(:mod:`gpuweave.cluster.adaptive_clock`) advances each job by its progress on the type it runs on.

Complexity: loading is O(table rows) per type; a rate is O(log rows) once per (job type, type, shape), cached.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import numpy as np

from gpuweave.errors import InputError, MissingProfileError
from gpuweave.workload.pollux import PolluxApp, PolluxJobModel, load_app, node_order_shape, packed_counts

APP_CONSTANTS = "sia_apps.csv"
# Sia's cluster name -> (catalog GPU model, GPUs per node): simulator_config.py's cluster_ngpus_per_node
SIA_GPU_TYPES: dict[str, tuple[str, int]] = {
    "aws": ("T4", 4),
    "dgx-ext": ("A100-40GB", 8),
    "rtx": ("RTX2080Ti", 8),
    "azure": ("V100", 8),
}
# simulator_config.py's cluster_max_physical_nnodes: the most nodes of a type its tables cover (Sia's program plans
# with at most these, whatever the cluster's size)
MAX_PHYSICAL_NODES = {"aws": 16, "dgx-ext": 2, "rtx": 3, "azure": 5}
REFERENCE_TYPE = "rtx"  # Sia's calibrate_cluster: its tables give a job's constants and our work units
# Sia's applications.py overrides one application's largest local batch on one type (used when batches adapt)
MAX_LOCAL_BSZ = {("deepspeech2", "rtx"): 57}
# Sia's Gavel plans with at most 16 four-GPU or 8 eight-GPU nodes per type (gavel.py's CONFIGS_4GPU/CONFIGS_8GPU)
GAVEL_MAX_NODES = {4: 16}
GAVEL_MAX_NODES_OTHER = 8
SIA_FIT_TOL = 1e-5  # Sia's goodput.py fits the throughput model with scipy's tol 1e-5 ("for speed")
UNFIT_THROUGHPUT = 0.1  # what Sia's Gavel predicts for a job larger than a type (it may still be given a share)


class SiaJobModel(PolluxJobModel):
    """Pollux's job model per GPU type (module docstring): rates per (type, placement), Sia's rules."""

    def __init__(self, by_model: dict[str, dict[str, PolluxApp]], *, source: str, reference: str) -> None:
        per_node = {model: n for model, n in SIA_GPU_TYPES.values()}
        super().__init__(by_model[reference], source=source, gpu_model=reference, gpus_per_node=per_node[reference])
        self.by_model = by_model
        self.per_node = {model: per_node[model] for model in by_model}
        self.rescale_times = {name: app.rescale for name, app in _constants().items()}
        self._sia_rates: dict[tuple[str, str, tuple[int, ...]], float] = {}

    def max_nodes(self, gpu_model: str) -> int:
        """The most nodes of ``gpu_model`` Sia's program gives one job (its tables' physical nodes)."""
        for sia_type, (model, _) in SIA_GPU_TYPES.items():
            if model == gpu_model:
                return MAX_PHYSICAL_NODES[sia_type]
        return 1_000_000

    def physical_counts(self, gpu_model: str, counts: tuple[int, ...]) -> tuple[int, ...]:
        """The GPUs per node a job on ``counts`` (GPUs per node, zeros for nodes it does not use) runs as in Sia's
        simulator: ``counts`` itself, unless it spans more nodes than Sia's tables cover for the type
        (:meth:`max_nodes`; only on a cluster scaled past them, ``--cluster_scale``), where Sia's ``Cluster``
        re-spreads the GPUs over that many nodes, ``ceil(GPUs / nodes)`` each and the rest on the last, before the
        job's step times, batch and restarts are taken from it ("FIXING PLACEMENT FOR LARGE CLUSTER")."""
        used = tuple(c for c in counts if c)
        most = self.max_nodes(gpu_model)
        if len(used) <= most:
            return counts
        total = sum(used)
        per_node = -(-total // most)
        spread = [per_node] * (total // per_node)
        if total % per_node:
            spread.append(total % per_node)
        return tuple(spread)

    def app_on(self, job_type: str, gpu_model: str) -> tuple[PolluxApp, int]:
        """The application's tables on ``gpu_model`` and the job type's batch size."""
        app, batch_size = self.app_of(job_type)
        apps = self.by_model.get(gpu_model)
        if apps is None or app.name not in apps:
            raise MissingProfileError(f"no Sia tables for {app.name} on {gpu_model}", file=self.source)
        return apps[app.name], batch_size

    def rescale_time(self, job_type: str) -> float:
        """Seconds an allocation idles a job of ``job_type`` (Sia's checkpoint-restore time, 30 s if unlisted)."""
        return float(self.rescale_times.get(self.app_of(job_type)[0].name, 30.0))

    def placement_rate(self, job_type: str, gpu_model: str, counts: tuple[int, ...]) -> float:
        """Steps/s (calibrated) of the job type's batch on GPUs ``counts`` per node, as Sia runs them
        (:meth:`physical_counts`); 0.0 where nothing is known. (The book's check that a placement can run; the
        clock advances each job by its own batch.)"""
        if gpu_model not in self.by_model:
            return 0.0
        key = (job_type, gpu_model, node_order_shape(self.physical_counts(gpu_model, counts)))
        value = self._sia_rates.get(key)
        if value is None:
            app, batch_size = self.app_on(job_type, gpu_model)
            # at least the smallest local batch on every GPU: an adaptive job's first batch (its agent's rule);
            # a rigid one's trace batch is that large already
            batch_size = max(batch_size, app.min_local_bsz * sum(key[2]))
            plan = app.placement_batch_plan(batch_size, key[2])
            value = self._sia_rates[key] = _steps_per_second(app, key[2], plan.atomic_bsz, plan.accum_steps)
        return value

    def rate(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        per_node = self.per_node.get(gpu_model, num_gpus)
        counts = (num_gpus,) if consolidated or num_gpus == 1 else packed_counts(num_gpus, per_node)
        return self.placement_rate(job_type, gpu_model, counts)

    def has(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool | None = None) -> bool:
        return job_type in self and gpu_model in self.by_model

    def gpu_models(self) -> tuple[str, ...]:
        return tuple(self.by_model)

    def gavel_throughput(self, job_type: str, replicas: int, gpu_model: str, type_gpus: int) -> float:
        """Steps/s Sia's Gavel predicts for the job on ``replicas`` GPUs of a type with ``type_gpus`` GPUs
        (``gavel.py``'s ``predict_throughput``): packed on full nodes, one GPU always accumulating at least once,
        no cap at the largest local batch measured for the GPU count; :data:`UNFIT_THROUGHPUT` if larger than
        the type."""
        per_node = self.per_node[gpu_model]
        most = min(type_gpus, GAVEL_MAX_NODES.get(per_node, GAVEL_MAX_NODES_OTHER) * per_node)
        if replicas > most:
            return UNFIT_THROUGHPUT
        app, batch_size = self.app_on(job_type, gpu_model)
        counts = packed_counts(replicas, per_node)
        plan = app.placement_batch_plan(batch_size, counts, alone_accumulates=True, capped=False)
        rate = _steps_per_second(app, node_order_shape(counts), plan.atomic_bsz, plan.accum_steps)
        if rate <= 0:
            raise MissingProfileError(f"no step time for {job_type} on {replicas} x {gpu_model}", file=self.source)
        return rate

    def atomic_throughput(self, application: str, gpu_model: str) -> float:
        """Samples/s on one GPU of ``gpu_model`` at the largest local batch measured there over the slowest step
        measured there (Sia's ``compute_throughput_ratios``: its ratio between two types projects a goodput model
        fitted on one onto the other)."""
        curve = self.by_model[gpu_model][application].by_shape.get((1,))
        if curve is None:
            raise MissingProfileError(f"no one-GPU measurements of {application} on {gpu_model}", file=self.source)
        return float(curve.local_bsz[-1] / np.max(curve.step_time))

    def __repr__(self) -> str:
        return f"SiaJobModel({sorted(self.apps)}, GPUs {list(self.by_model)}, source={self.source!r})"


def _steps_per_second(app: PolluxApp, shape: tuple[int, ...], atomic_bsz: int, accum_steps: int) -> float:
    times = app.step_times(shape, atomic_bsz)
    if times is None:
        return 0.0
    step, sync = times
    return 1.0 / (step + (step - sync) * accum_steps) * app.calibration


class _AppConstants:
    __slots__ = ("max_epochs", "rescale", "slowdown")

    def __init__(self, max_epochs: int, rescale: float, slowdown: float) -> None:
        self.max_epochs, self.rescale, self.slowdown = max_epochs, rescale, slowdown


def _constants() -> dict[str, _AppConstants]:
    text = resources.files("gpuweave.workload").joinpath("data", APP_CONSTANTS).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return {
        r["application"]: _AppConstants(int(r["max_epochs"]), float(r["rescale_time"]), float(r["slowdown"]))
        for r in csv.DictReader(lines)
    }


def is_sia_traces(path: str | Path) -> bool:
    """True for a directory holding at least one ``<app>/placements-<type>.csv`` of a mapped type."""
    folder = Path(path)
    return folder.is_dir() and any(any(folder.glob(f"*/placements-{t}.csv")) for t in SIA_GPU_TYPES)


def load_sia_job_model(path: str | Path, types: tuple[str, ...] | None = None) -> SiaJobModel:
    """The job model of every application under ``path`` (Sia's ``traces/`` layout) on Sia's GPU ``types``
    (default: every mapped type with tables for all the applications). Loaded once per process while the files
    stay the same."""
    folder = Path(path)
    if not is_sia_traces(folder):
        raise InputError("not a Sia traces directory: expected <app>/placements-<type>.csv inside", file=folder)
    apps_dirs = sorted(p.parent for p in folder.glob("*/validation-*.csv"))
    names = sorted({d.name for d in apps_dirs})
    wanted = types or tuple(
        t for t in SIA_GPU_TYPES if all((folder / a / f"placements-{t}.csv").is_file() for a in names)
    )
    if not wanted:
        raise InputError("no Sia GPU type has tables for every application", file=folder)
    unknown = [t for t in wanted if t not in SIA_GPU_TYPES]
    if unknown:
        raise InputError(f"unknown Sia GPU type {unknown[0]!r} (known: {', '.join(SIA_GPU_TYPES)})", field="types")
    files = sorted(p for p in folder.glob("*/*.csv") if p.is_file())
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    key = (str(folder.resolve()), tuple(wanted))
    cached = _LOADED.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    constants = _constants()
    # an application without tables for every type is left out (Sia's pipeline-parallel gpt_pmp has two types)
    names = [a for a in names if all((folder / a / f"placements-{t}.csv").is_file() for t in wanted)]
    by_model: dict[str, dict[str, PolluxApp]] = {}
    for sia_type in wanted:
        model = SIA_GPU_TYPES[sia_type][0]
        by_model[model] = {}
        for name in names:
            const = constants.get(name)
            local = MAX_LOCAL_BSZ.get((name, sia_type))
            app = load_app(folder / name, (const.max_epochs, local, None) if const else None, suffix=f"-{sia_type}")
            app.calibration = 1 / const.slowdown if const else 1.0
            app.per_placement_limits = True
            by_model[model][name] = app
    reference = SIA_GPU_TYPES[REFERENCE_TYPE][0] if REFERENCE_TYPE in wanted else SIA_GPU_TYPES[wanted[0]][0]
    loaded = SiaJobModel(by_model, source=str(folder), reference=reference)
    _LOADED[key] = (stamp, loaded)
    return loaded


_LOADED: dict[tuple[str, tuple[str, ...]], tuple[tuple[tuple[str, int, int], ...], SiaJobModel]] = {}
