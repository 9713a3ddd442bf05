"""Converters for Alibaba's GPU cluster traces (alibaba/clusterdata, commit 7a6c496).

Four inputs, each a CSV with a header:

* **openb 2023 pod list** (``cluster-trace-gpu-v2023/csv/openb_pod_list_*.csv``; Weng et al., ATC'23, FGD):
  ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,
  scheduled_time`` (times in seconds from 0) -> jobs, by :func:`read_openb_pods`;
* **openb 2023 node list** (``openb_node_list_*.csv``: ``sn,cpu_milli,memory_mib,gpu,model``) -> cluster
  description, by :func:`read_openb_nodes`;
* **2026 spot-GPU node list** (``cluster-trace-v2026-spot-gpu/node_info_df.csv``: ``gpu_model,
  gpu_capacity_num,cpu_num,node_name``; Duan et al., ASPLOS'26, GFS) -> cluster description, by
  :func:`read_spot_nodes`;
* **2026 spot-GPU job table** (``job_info_df.csv``: ``job_name,organization,gpu_model,cpu_request,
  gpu_request,worker_num,submit_time,duration,job_type``; absent from the shared snapshot, read by its
  documented columns) -> jobs, by :func:`read_spot_jobs`.

The v2023/v2026 data carry no licence file, only a research/study-use statement: convert them locally,
never ship them. A cluster description is the dict
``{"name", "description", "source", "nodes": [{"count", "gpu", "gpus_per_node"[, "price_per_kwh", "pue"]}]}``,
the format of :mod:`gpuweave.hardware.cluster_spec`; the traces give no energy prices or PUE, so those
are the caller's arguments (``None`` = left out, the cluster spec's defaults apply). GPU models are
canonicalised by :mod:`gpuweave.workload.traces.gpu_names` (``V100M16``/``V100M32`` -> ``V100``,
``A100-SXM4-80GB`` -> ``A100-80GB``; undisclosed codes such as ``G2`` and ``GPU-series-1`` kept). None of
the sources names a DL model, so each job's ``job_type`` is drawn by the seeded uniform rule of
:mod:`gpuweave.workload.traces.job_types` and marked in ``note``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuweave.checks import GPUS, MAX_SECONDS
from gpuweave.errors import InputError
from gpuweave.workload.profiles import ProfileStore
from gpuweave.workload.traces._tables import ROW, missing_mask, numeric_column, read_csv_strings, require_columns
from gpuweave.workload.traces.gpu_names import canonical_gpu_model
from gpuweave.workload.traces.job_types import assign_job_types, insert_job_types
from gpuweave.workload.traces.mig_column import profile_cells, read_pod_shares

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

CPU_JOB_TYPE = "cpu-only"  # the job type of a CPU-only pod kept by --cpu-tasks (no DL model to draw)
CPU_NOTE = "a CPU-only task: no job type drawn"
OPENB_POD_COLUMNS = ("name", "num_gpu", "gpu_milli", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
OPENB_NODE_COLUMNS = ("sn", "gpu", "model")
SPOT_NODE_COLUMNS = ("gpu_model", "gpu_capacity_num", "node_name")
SPOT_JOB_COLUMNS = (
    "job_name",
    "organization",
    "gpu_model",
    "cpu_request",
    "gpu_request",
    "worker_num",
    "submit_time",
    "duration",
    "job_type",
)


def _canonical_column(
    raw: "pd.DataFrame", column: str, *, file: Path, separator: str | None = None
) -> list[str | None]:
    """Canonical GPU model per row ('' -> None); with ``separator``, each alternative, deduplicated."""
    cache: dict[str, str] = {}
    out: list[str | None] = []
    for value, row in zip(raw[column].tolist(), raw[ROW].tolist()):
        text = str(value).strip()
        if not text:
            out.append(None)
            continue
        parts = text.split(separator) if separator else [text]
        names: list[str] = []
        for part in parts:
            part = part.strip()
            if part not in cache:
                cache[part] = canonical_gpu_model(part, file=str(file), row=int(row), field=column)
            if cache[part] not in names:
                names.append(cache[part])
        out.append("|".join(names))
    return out


# --------------------------------------------------------------------------- openb 2023 pods
def read_openb_pods(
    path: str | Path,
    *,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    reference_gpu: str = "V100",
    cpu_tasks: bool = False,
) -> "pd.DataFrame":
    """Convert an openb pod list to a schema frame of its GPU pods (and its CPU-only pods with ``cpu_tasks``).

    * CPU-only pods (``num_gpu == 0``; kept with ``cpu_tasks``, as ``num_gpus`` 0 with their ``cpu_milli`` and job
      type :data:`CPU_JOB_TYPE`, for a shared run's replay) and pods never scheduled (empty ``scheduled_time``, i.e.
      Pending) are dropped, as are pods with ``deletion_time <= scheduled_time``; counts go to
      ``frame.attrs["notes"]``. GPU pods get the same job types with and without ``cpu_tasks``.
    * ``arrival = creation_time``, ``duration = deletion_time - scheduled_time`` (run time; for pods still
      ``Running`` at the end of the trace it is a lower bound, said in ``note``), ``num_gpus = num_gpu``.
    * ``cpu_milli``, ``memory_mib`` and ``gpu_milli`` (GPU share of a 1-GPU pod, 1000 = whole) become the schema's
      resource columns, ``gpu_spec`` (allowed models) its ``allowed_models`` (canonical names joined by ``+``);
      ``qos`` and ``pod_phase`` stay as extra columns; a ``mig_profile`` column (not in openb's own files) is read
      for every pod, before any is dropped, as ``cluster fill`` reads it (:func:`.mig_column.read_pod_shares`: a
      profile's pod asks one GPU, its empty ``gpu_milli`` becomes the profile's share) and kept in canonical spelling.
    """
    import numpy as np
    import pandas as pd

    file = Path(path)
    raw = read_csv_strings(file)
    require_columns(
        raw, OPENB_POD_COLUMNS, file=file, what="an openb pod list with times (the multigpu* variants have none)"
    )
    num_gpu = numeric_column(raw, "num_gpu", file=file, unit="GPUs", maximum=GPUS.hi, integer=True, minimum=0.0)
    mig_names, mig_index, milli = read_pod_shares(raw, file=file, num_gpus=num_gpu.to_numpy())
    gpu_milli = pd.Series(milli, index=raw.index)
    creation = numeric_column(raw, "creation_time", file=file, unit="seconds", maximum=MAX_SECONDS, minimum=0.0)
    deletion = numeric_column(raw, "deletion_time", file=file, unit="seconds", maximum=MAX_SECONDS, minimum=0.0)
    scheduled = numeric_column(
        raw, "scheduled_time", file=file, unit="seconds", maximum=MAX_SECONDS, required=False, minimum=0.0
    )
    over = (gpu_milli > 1000).to_numpy()
    if over.any():
        position = int(np.flatnonzero(over)[0])
        raise InputError(
            f"expected a GPU share <= 1000 milli-GPU, got {gpu_milli.iloc[position]:g}",
            file=file,
            row=int(raw[ROW].iloc[position]),
            field="gpu_milli",
        )
    keep, notes = _pods_with_run_time(num_gpu, scheduled, deletion, file, cpu_tasks)
    gpu_milli = gpu_milli.astype("Int64").where(num_gpu > 0)  # a CPU-only task asks no share (empty cell)
    spec = (
        _canonical_column(raw, "gpu_spec", file=file, separator="|") if "gpu_spec" in raw.columns else [None] * len(raw)
    )
    phase = raw["pod_phase"].str.strip()
    columns = {"mig_profile": profile_cells(mig_names, mig_index, len(raw))} if "mig_profile" in raw.columns else {}
    frame = pd.DataFrame(
        {
            **columns,  # a hand-made pod list's MIG profiles (not in openb's files), checked by the schema
            "job_id": raw["name"].str.strip().to_numpy(),
            "arrival": creation.to_numpy(),
            "num_gpus": num_gpu.to_numpy().astype("int64"),
            "duration": (deletion - scheduled).to_numpy(),
            "allowed_models": [None if s is None else s.replace("|", "+") for s in spec],
            "gpu_milli": gpu_milli.to_numpy(),
            "cpu_milli": _positive_or_none(raw, "cpu_milli", file, "milli-CPU"),
            "memory_mib": _positive_or_none(raw, "memory_mib", file, "MiB"),
            "qos": raw["qos"].str.strip().to_numpy() if "qos" in raw.columns else [None] * len(raw),
            "pod_phase": phase.to_numpy(),
            ROW: raw[ROW].to_numpy(),
        }
    )[keep].reset_index(drop=True)
    if frame["allowed_models"].isna().all():
        frame = frame.drop(columns=["allowed_models"])
    for name in ("cpu_milli", "memory_mib"):
        if frame[name].isna().all():
            frame = frame.drop(columns=[name])
    _add_job_types(frame, seed, profiles, reference_gpu, file)
    frame.attrs["notes"] = notes
    return frame


def _add_job_types(
    frame: "pd.DataFrame", seed: int, profiles: ProfileStore | None, reference_gpu: str, file: Path
) -> None:
    """``job_type`` (drawn for the GPU pods alone, so ``cpu_tasks`` changes no GPU pod's type; :data:`CPU_JOB_TYPE`
    for a CPU-only one) and ``note`` (the pod list, a lower-bound duration, how the type was chosen)."""
    import numpy as np

    gpu_rows = (frame["num_gpus"] > 0).to_numpy()
    drawn, drawn_notes = assign_job_types(frame["num_gpus"].to_numpy()[gpu_rows], seed, profiles, reference_gpu)
    job_types, type_notes = [CPU_JOB_TYPE] * len(frame), [CPU_NOTE] * len(frame)
    for position, job_type, note in zip(np.flatnonzero(gpu_rows).tolist(), drawn, drawn_notes):
        job_types[position], type_notes[position] = job_type, note
    frame.insert(3, "job_type", job_types)
    censored = (frame["pod_phase"] == "Running").to_numpy()
    frame["note"] = [
        f"openb pod {file.name}" + ("; Running at trace end, duration is a lower bound" if c else "") + f"; {n}"
        for c, n in zip(censored.tolist(), type_notes)
    ]


def _pods_with_run_time(
    num_gpu: "pd.Series", scheduled: "pd.Series", deletion: "pd.Series", file: Path, cpu_tasks: bool = False
) -> tuple["np.ndarray", list[str]]:
    """The GPU pods (and with ``cpu_tasks`` the CPU-only ones) that ran for a positive time, and notes counting
    the pods dropped and why."""
    gpu_pod = (num_gpu > 0).to_numpy()
    ran = scheduled.notna().to_numpy()
    positive = (deletion - scheduled > 0).fillna(False).to_numpy()
    keep = (gpu_pod | cpu_tasks) & ran & positive
    cpu_pod = ~gpu_pod
    if cpu_tasks:
        notes = [f"kept {int((cpu_pod & keep).sum())} CPU-only pods as CPU-only tasks (num_gpus 0)"]
        if (cpu_pod & ~keep).any():
            notes.append(f"dropped {int((cpu_pod & ~keep).sum())} CPU-only pods never scheduled or without run time")
    else:
        notes = [f"dropped {int(cpu_pod.sum())} CPU-only pods"]
    notes.append(f"dropped {int((gpu_pod & ~ran).sum())} GPU pods never scheduled (empty scheduled_time)")
    if (gpu_pod & ran & ~positive).any():
        notes.append(f"dropped {int((gpu_pod & ran & ~positive).sum())} GPU pods with deletion_time <= scheduled_time")
    if not keep.any():
        raise InputError("no GPU pod with a run time (num_gpu > 0 and a scheduled_time)", file=file, field="num_gpu")
    return keep, notes


def _positive_or_none(raw: "pd.DataFrame", column: str, file: Path, unit: str) -> list[int | None]:
    """An optional resource column of a pod list: integers > 0 (0 or empty: not asked), or all None if absent."""
    if column not in raw.columns:
        return [None] * len(raw)
    values = numeric_column(raw, column, file=file, unit=unit, integer=True, required=False, minimum=0.0)
    return [int(v) if v == v and v > 0 else None for v in values.tolist()]


# --------------------------------------------------------------------------- cluster descriptions
def _catalog_knows(gpu: str) -> bool:
    try:
        from gpuweave.hardware.catalog import get_gpu
    except ModuleNotFoundError:
        return False
    try:
        get_gpu(gpu)
    except (InputError, KeyError, LookupError, ValueError):
        return False
    return True


NodeKey = tuple  # (model, GPUs per node) or (model, GPUs per node, cpu_milli, memory_mib)


def cluster_description(
    name: str,
    groups: dict[NodeKey, int],
    *,
    file: Path,
    source: str,
    price_per_kwh: float | None,
    pue: float | None,
    catalog_only: bool,
    gpu_map: dict[str, str] | None = None,
    sharing: str | None = None,
) -> dict[str, Any]:
    """The cluster description (module docstring) of node ``groups`` ``{(model, GPUs per node[, cpu_milli,
    memory_mib]): nodes}``; with ``catalog_only``, groups whose model the hardware catalog does not know are left
    out and named. ``gpu_map`` (``{type: catalog model}``, e.g. ``{"MISC": "K80"}``) first renames the types the
    trace does not disclose. ``sharing`` (None: not written, i.e. whole GPUs) goes on every node group."""
    groups, mapped = _mapped_groups(groups, gpu_map or {}, file)
    nodes = []
    dropped: list[str] = []
    for key, count in sorted(groups.items()):
        gpu, per_node = key[0], key[1]
        if catalog_only and not _catalog_knows(gpu):
            dropped.append(f"{count} x {per_node} {gpu}")
            continue
        node: dict[str, Any] = {"count": count, "gpu": gpu, "gpus_per_node": per_node}
        if len(key) == 4:
            node["cpu_milli"], node["memory_mib"] = key[2], key[3]
        if sharing is not None:
            node["sharing"] = sharing
        if price_per_kwh is not None:
            node["price_per_kwh"] = price_per_kwh
        if pue is not None:
            node["pue"] = pue
        nodes.append(node)
    if not nodes:
        raise InputError("no node group left: the hardware catalog knows none of the GPU models", file=file)
    gpus = sum(n["count"] * n["gpus_per_node"] for n in nodes)
    description = f"{sum(n['count'] for n in nodes)} GPU nodes, {gpus} GPUs, from {file.name}"
    if dropped:
        description += f"; left out (GPU model not in the hardware catalog): {', '.join(dropped)}"
    if mapped:
        description += f"; taken as (--gpu-map): {', '.join(mapped)}"
    return {"name": name, "description": description, "source": source, "nodes": nodes}


def _mapped_groups(
    groups: dict[NodeKey, int], gpu_map: dict[str, str], file: Path
) -> tuple[dict[NodeKey, int], list[str]]:
    """``groups`` with the GPU types named in ``gpu_map`` (case-insensitive) renamed to their catalog model, groups
    that become equal merged; and what was renamed. A type no node has, or a model the catalog lacks, is an error."""
    if not gpu_map:
        return groups, []
    present = {key[0].lower(): key[0] for key in groups}
    renames: dict[str, str] = {}
    for kind, model in gpu_map.items():
        if kind.strip().lower() not in present:
            types = ", ".join(sorted(present.values()))
            raise InputError(
                f"--gpu-map {kind}={model}: no node has GPU type {kind!r} (types: {types})",
                file=file,
                field="gpu-map",
            )
        if not _catalog_knows(model):
            raise InputError(
                f"--gpu-map {kind}={model}: {model!r} is not a model of the hardware catalog", field="gpu-map"
            )
        renames[present[kind.strip().lower()]] = canonical_gpu_model(model, field="gpu-map")
    merged: dict[NodeKey, int] = {}
    for key, count in groups.items():
        renamed = (renames.get(key[0], key[0]), *key[1:])
        merged[renamed] = merged.get(renamed, 0) + count
    return merged, [f"{kind} as {model}" for kind, model in sorted(renames.items())]


def group_nodes(
    raw: "pd.DataFrame",
    model_column: str,
    count_column: str,
    *,
    file: Path,
    resources: tuple[str, str] | None = None,
) -> dict[NodeKey, int]:
    """``{(canonical model, GPUs per node): nodes}`` of a node list; nodes without GPUs are skipped (their model
    cell is not read); a node with GPUs and no model, or an unknown model, is an error naming its row.
    ``resources`` names the CPU (milli) and memory (MiB) columns to group by as well (keys of four)."""
    gpus = numeric_column(
        raw, count_column, file=file, unit="GPUs per node", maximum=GPUS.hi, integer=True, minimum=0.0
    )
    empty_model = missing_mask(raw[model_column]).to_numpy()
    has_gpu = (gpus > 0).to_numpy()
    lacking = has_gpu & empty_model
    if lacking.any():
        position = int(lacking.nonzero()[0][0])
        raise InputError(
            "node has GPUs but no GPU model", file=file, row=int(raw[ROW].iloc[position]), field=model_column
        )
    models = _canonical_column(raw[has_gpu], model_column, file=file)  # a CPU node's model ("CPU" in PAI) is not read
    extra: list[tuple[int, ...]] = [()] * int(has_gpu.sum())
    if resources is not None:
        cpu = numeric_column(raw, resources[0], file=file, unit="milli-CPU", integer=True, strictly_above=0.0)
        memory = numeric_column(raw, resources[1], file=file, unit="MiB", integer=True, strictly_above=0.0)
        extra = list(zip(cpu[has_gpu].astype("int64").tolist(), memory[has_gpu].astype("int64").tolist()))
    groups: dict[NodeKey, int] = {}
    for model, count, more in zip(models, gpus[has_gpu].tolist(), extra):
        if model is not None:
            key = (model, int(count), *more)
            groups[key] = groups.get(key, 0) + 1
    if not groups:
        raise InputError("no GPU node in the node list", file=file, field=count_column)
    return groups


def read_openb_nodes(
    path: str | Path,
    *,
    name: str = "alibaba-openb-2023",
    price_per_kwh: float | None = None,
    pue: float | None = None,
    catalog_only: bool = False,
    gpu_map: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Cluster description of an openb node list; CPU-only nodes (``gpu == 0``) are left out. Nodes are grouped by
    model, GPUs, CPU and memory (each group with ``cpu_milli``, ``memory_mib`` and ``sharing: fraction``).

    ``price_per_kwh``/``pue`` (None = not set, the cluster spec's defaults apply) go on every node group.
    ``catalog_only`` leaves out node groups whose GPU model the hardware catalog does not know (the
    undisclosed ``G2``/``G3``), naming them in ``description``.
    """
    file = Path(path)
    raw = read_csv_strings(file, limit_name="cluster_gpus", what="nodes")
    require_columns(raw, OPENB_NODE_COLUMNS, file=file, what="an openb node list")
    resources = ("cpu_milli", "memory_mib") if {"cpu_milli", "memory_mib"} <= set(raw.columns) else None
    return cluster_description(
        name,
        group_nodes(raw, "model", "gpu", file=file, resources=resources),
        file=file,
        source=f"alibaba/clusterdata@7a6c496 cluster-trace-gpu-v2023/csv/{file.name} (FGD, ATC'23; research/study use)",
        price_per_kwh=price_per_kwh,
        pue=pue,
        catalog_only=catalog_only,
        gpu_map=gpu_map,
        sharing="fraction",  # openb's GPUs are shared by fractions (gpu_milli)
    )


def read_spot_nodes(
    path: str | Path,
    *,
    name: str = "alibaba-spot-2026",
    price_per_kwh: float | None = None,
    pue: float | None = None,
    catalog_only: bool = False,
    gpu_map: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Cluster description of the 2026 spot-GPU ``node_info_df.csv`` (columns read by name, not order).

    Options as in :func:`read_openb_nodes`; ``catalog_only`` drops A800, H800 and the undisclosed
    ``GPU-series-*`` groups unless the hardware catalog has learned them.
    """
    file = Path(path)
    raw = read_csv_strings(file, limit_name="cluster_gpus", what="nodes")
    require_columns(raw, SPOT_NODE_COLUMNS, file=file, what="a spot-GPU node list")
    return cluster_description(
        name,
        group_nodes(raw, "gpu_model", "gpu_capacity_num", file=file),
        file=file,
        source=(
            f"alibaba/clusterdata@7a6c496 cluster-trace-v2026-spot-gpu/{file.name} (GFS, ASPLOS'26; research/study use)"
        ),
        price_per_kwh=price_per_kwh,
        pue=pue,
        catalog_only=catalog_only,
        gpu_map=gpu_map,
    )


def check_catalog_models(cluster: dict[str, Any], *, file: Path) -> None:
    """InputError naming the node groups of a cluster description whose GPU model the hardware catalog does not
    know (openb's ``G2``, PAI's ``MISC``): a cluster spec with them would not load, so ``gpuweave trace cluster``
    writes none and says how to leave them out or take them as a catalog model. O(node groups)."""
    unknown = [n for n in cluster["nodes"] if not _catalog_knows(str(n["gpu"]))]
    if unknown:
        groups = ", ".join(f"{n['count']} x {n['gpus_per_node']} {n['gpu']}" for n in unknown[:6])
        more = f" and {len(unknown) - 6} more groups" if len(unknown) > 6 else ""
        example = f"{unknown[0]['gpu']}=MODEL"
        raise InputError(
            f"GPU model not in the hardware catalog: {groups}{more}; a cluster spec with them would not load: leave "
            f"them out with --catalog-only or take them as a catalog model with --gpu-map {example}",
            file=file,
            field="gpu",
        )


def cluster_gpu_count(cluster: dict[str, Any]) -> int:
    """Total GPUs of a cluster description."""
    return sum(int(node["count"]) * int(node["gpus_per_node"]) for node in cluster["nodes"])


# --------------------------------------------------------------------------- 2026 spot jobs
def read_spot_jobs(
    path: str | Path,
    *,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    reference_gpu: str = "V100",
) -> "pd.DataFrame":
    """Convert the 2026 spot-GPU ``job_info_df.csv`` to a schema frame.

    * ``num_gpus = worker_num * ceil(gpu_request)`` (``gpu_request`` is per instance: the upstream README's
      example has 1 GPU x 94 workers); a fractional ``gpu_request`` is kept in the extra column of that name.
    * ``arrival = submit_time`` (s from the first job), ``duration`` as is, ``user = organization``,
      ``gpu_model`` canonical, ``job_type`` HP/Spot -> the extra column ``tier``; HP jobs get
      ``priority`` 1 and Spot jobs too (the tier is data, the policy decides).
    * Jobs with ``gpu_request == 0`` or ``duration == 0`` are dropped (counted in ``frame.attrs["notes"]``).
    """
    import numpy as np
    import pandas as pd

    file = Path(path)
    raw = read_csv_strings(file)
    require_columns(raw, SPOT_JOB_COLUMNS, file=file, what="a spot-GPU job table")
    arrival = numeric_column(raw, "submit_time", file=file, unit="seconds", maximum=MAX_SECONDS, minimum=0.0)
    duration = numeric_column(raw, "duration", file=file, unit="seconds", maximum=MAX_SECONDS, minimum=0.0)
    gpu_request = numeric_column(raw, "gpu_request", file=file, unit="GPUs per worker", maximum=GPUS.hi, minimum=0.0)
    workers = numeric_column(raw, "worker_num", file=file, unit="workers", maximum=GPUS.hi, integer=True, minimum=1.0)
    tiers = raw["job_type"].str.strip()
    bad_tier = ~tiers.isin(["HP", "Spot"]).to_numpy()
    if bad_tier.any():
        position = int(np.flatnonzero(bad_tier)[0])
        raise InputError(
            f"expected HP or Spot, got {tiers.iloc[position]!r}",
            file=file,
            row=int(raw[ROW].iloc[position]),
            field="job_type",
        )
    models = _canonical_column(raw, "gpu_model", file=file)
    keep = ((gpu_request > 0) & (duration > 0)).to_numpy()
    notes = []
    if not keep.all():
        notes.append(f"dropped {int((~keep).sum())} jobs with gpu_request 0 or duration 0")
    if not keep.any():
        raise InputError("no job with GPUs and a positive duration", file=file, field="gpu_request")
    per_worker = np.ceil(gpu_request.to_numpy())
    frame = pd.DataFrame(
        {
            "job_id": raw["job_name"].str.strip().to_numpy(),
            "arrival": arrival.to_numpy(),
            "num_gpus": (per_worker * workers.to_numpy()).astype("int64"),
            "duration": duration.to_numpy(),
            "user": raw["organization"].str.strip().to_numpy(),
            "gpu_model": models,
            "tier": tiers.to_numpy(),
            "worker_num": workers.to_numpy().astype("int64"),
            "gpu_request": gpu_request.to_numpy(),
            ROW: raw[ROW].to_numpy(),
        }
    )[keep].reset_index(drop=True)
    if (frame["gpu_request"] == np.floor(frame["gpu_request"])).all():
        frame = frame.drop(columns=["gpu_request"])
    insert_job_types(frame, seed, profiles, reference_gpu, f"Alibaba spot-GPU job {file.name}")
    frame.attrs["notes"] = notes
    return frame


def cluster_to_yaml(cluster: dict[str, Any]) -> str:
    """The cluster description as YAML text."""
    import yaml

    return yaml.safe_dump(cluster, sort_keys=False)
