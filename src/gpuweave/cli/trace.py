"""``gpuweave trace validate|convert|info|generate|cluster|import-torch|import-slurm``: job traces and node lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from gpuweave.checks import SEED
from gpuweave.cli.kernel import import_torch
from gpuweave.cli.output import ProgressBar, print_json, print_table, quiet_option, show_progress
from gpuweave.errors import InputError
from gpuweave.units import duration_text, metric_text

FORMAT_HELP = (
    "Input format: auto, schema, gavel, alibaba-pods, alibaba-jobs, tiresias, philly, helios, pai, pollux or "
    "slurm "
    "(auto = detect from name and header)."
)
PROFILES_HELP = (
    "Throughput profile CSV (job_type,gpu_model,num_gpus,consolidated,throughput) or a directory of Pollux "
    "application traces; default: the bundled Gavel table (for a Pollux workload: the traces/ beside it)."
)


def _profiles(path: Optional[Path], extrapolate: bool, source: Optional[Path] = None, fmt: str = "auto"):
    """The profile store; for a Pollux workload without --profiles, the job model in the traces beside it."""
    from gpuweave.workload.profiles import load_profiles
    from gpuweave.workload.traces.formats import detect_format
    from gpuweave.workload.traces.pollux import job_model_for

    if path is None and source is not None and (fmt if fmt != "auto" else detect_format(source)) == "pollux":
        return job_model_for(source)
    return load_profiles(path, extrapolate=extrapolate)


NAME = "trace"
app = typer.Typer(
    help="Work with cluster job traces: validate, convert to gpuweave's schema, summarise, generate.",
    no_args_is_help=True,
)


@app.command("validate")
def validate(
    file: Path = typer.Argument(..., help="Trace file to check."),
    fmt: str = typer.Option("auto", "--format", "-f", help=FORMAT_HELP),
    profiles: Optional[Path] = typer.Option(None, "--profiles", help=PROFILES_HELP),
    reference_gpu: str = typer.Option("V100", "--reference-gpu", help="GPU whose rate turns duration into work."),
    max_gpus: Optional[int] = typer.Option(
        None, "--max-gpus", help="Largest placement of the target cluster; bigger jobs are errors."
    ),
    extrapolate: bool = typer.Option(
        False,
        "--extrapolate",
        help="Scale the largest profiled GPU count linearly for bigger jobs (e.g. Philly's 16-128 GPU jobs).",
    ),
    any_job_type: bool = typer.Option(
        False,
        "--any-job-type",
        help="Do not require job types to be in the profile store (work must then be given).",
    ),
    seed: int = typer.Option(
        0, "--seed", min=SEED.lo, max=SEED.hi, help="Seed of the job-type assignment for sources without a model."
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Check every row of FILE; print a one-line summary, or one error line and exit with code 2."""
    from gpuweave.workload.traces.formats import load_trace_frame
    from gpuweave.workload.traces.schema import fill_work, frame_to_jobs

    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"trace validate: reading {file.name}")
        store = _profiles(profiles, extrapolate, file, fmt)
        frame = load_trace_frame(file, fmt, seed=seed, profiles=None if any_job_type else store, max_gpus=max_gpus)
        frame = fill_work(frame, store, reference_gpu, file=file)
        jobs = frame_to_jobs(frame)
    span = jobs[-1].arrival - jobs[0].arrival
    if as_json:
        facts = {"file": str(file), "format": frame.attrs["format"], "jobs": len(jobs), "arrival_span_s": span}
        largest = max(j.num_gpus for j in jobs)
        print_json({"valid": True, **facts, "largest_job_gpus": largest, "notes": list(frame.attrs.get("notes", []))})
        return
    for note in frame.attrs.get("notes", []):
        typer.echo(f"note: {note}")
    typer.echo(
        f"ok: {file}: {len(jobs)} jobs ({frame.attrs['format']}), arrivals over {span:,.0f} s, "
        f"largest job {max(j.num_gpus for j in jobs)} GPUs"
    )


@app.command("convert")
def convert(
    source: Path = typer.Argument(..., metavar="IN", help="Input trace (any readable format)."),
    out: Path = typer.Argument(..., metavar="OUT", help="Output trace in gpuweave's schema: a .csv or .parquet path."),
    from_format: str = typer.Option("auto", "--from", "--format", "-f", help=FORMAT_HELP),
    profiles: Optional[Path] = typer.Option(None, "--profiles", help=PROFILES_HELP),
    max_gpus: Optional[int] = typer.Option(
        None, "--max-gpus", help="Largest placement of the target cluster; bigger jobs are errors."
    ),
    fill: bool = typer.Option(
        False,
        "--fill-work",
        help="Also write work (iterations) for duration-only rows: duration x rate on --reference-gpu.",
    ),
    reference_gpu: str = typer.Option(
        "V100", "--reference-gpu", help="GPU whose rate turns duration into work (with --fill-work)."
    ),
    extrapolate: bool = typer.Option(
        False,
        "--extrapolate",
        help="With --fill-work: scale the largest profiled GPU count linearly for bigger jobs.",
    ),
    any_job_type: bool = typer.Option(
        False, "--any-job-type", help="Do not require job types to be in the profile store."
    ),
    seed: int = typer.Option(
        0, "--seed", min=SEED.lo, max=SEED.hi, help="Seed of the job-type assignment for sources without a model."
    ),
    schema_only: bool = typer.Option(
        False,
        "--schema-only",
        help="Write only the schema's columns (docs/trace-schema.md), not the source's own facts (state, start, end, "
        "...): a 10^6-job replay then reads in about half the time and memory, but trace info has no recorded "
        "schedule.",
    ),
    cpu_tasks: bool = typer.Option(
        False,
        "--cpu-tasks",
        help="alibaba-pods: keep the CPU-only pods as tasks of 0 GPUs (job type cpu-only), for a shared run's replay "
        "(cluster simulate --placement-rule fgd --profiles traced); dropped otherwise.",
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Convert IN (any readable format) to gpuweave's trace schema at OUT (.csv or .parquet)."""
    from gpuweave.workload.traces.formats import load_trace_frame
    from gpuweave.workload.traces.schema import COLUMN_NAMES, fill_work, write_frame

    with ProgressBar(show_progress(quiet)) as bar:
        bar.task(f"trace convert: {source.name}")
        store = _profiles(profiles, extrapolate, source, from_format)
        frame = load_trace_frame(
            source,
            from_format,
            seed=seed,
            profiles=None if any_job_type else store,
            max_gpus=max_gpus,
            cpu_tasks=cpu_tasks,
        )
        if fill:
            frame = fill_work(frame, store, reference_gpu, file=source)
        if schema_only:
            frame = frame[[name for name in frame.columns if name in COLUMN_NAMES or name.startswith("_")]]
        frame = frame.dropna(axis=1, how="all")
        write_frame(frame, out)
    for note in frame.attrs.get("notes", []):
        typer.echo(f"note: {note}")
    typer.echo(f"wrote {out}: {len(frame)} jobs from {source} ({frame.attrs['format']})")


@app.command("info")
def info(
    file: Path = typer.Argument(..., help="Trace file."),
    fmt: str = typer.Option("auto", "--format", "-f", help=FORMAT_HELP),
    seed: int = typer.Option(
        0, "--seed", min=SEED.lo, max=SEED.hi, help="Seed of the job-type assignment for sources without a model."
    ),
    top: int = typer.Option(10, "--top", help="How many job types to list."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    quiet: bool = quiet_option(),
) -> None:
    """Summarise FILE: jobs, arrival span, GPU-count histogram and job types; with the source's facts, its final
    states and the schedule its own scheduler ran."""
    from gpuweave.workload.traces.formats import load_trace_frame

    if top < 0:
        raise InputError(f"--top must be >= 0, got {top}", field="top")
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"trace info: reading {file.name}")
        frame = load_trace_frame(file, fmt, seed=seed)
    summary = _trace_summary(file, frame, top)
    if as_json:
        print_json(summary)
    else:
        _print_trace_summary(summary, file.name)


def _trace_summary(file: Path, frame, top: int) -> dict:
    """What ``trace info`` says of a trace frame, as one JSON-ready dict."""
    from gpuweave.workload.traces.recorded import recorded_schedule

    durations = frame["duration"].notna().any()
    return {
        "file": str(file),
        "format": frame.attrs["format"],
        "jobs": len(frame),
        "first_arrival_s": float(frame["arrival"].min()),
        "last_arrival_s": float(frame["arrival"].max()),
        "gpus_requested": int(frame["num_gpus"].sum()),
        "rows_with_work": int(frame["work"].notna().sum()),
        "rows_with_duration": int(frame["duration"].notna().sum()),
        "median_duration_s": float(frame["duration"].median()) if durations else None,
        "gpus_per_job": {str(k): int(v) for k, v in frame["num_gpus"].value_counts().sort_index().items()},
        "job_types_distinct": int(frame["job_type"].nunique()),
        "job_types": {str(k): int(v) for k, v in frame["job_type"].value_counts().head(top).items()},
        # what a converted log tells beside the schema: GPU-hours on the reference GPU, states and VCs (Helios, Slurm)
        "gpu_hours_on_reference_gpu": float((frame["duration"] * frame["num_gpus"]).sum()) / 3600
        if durations
        else None,
        "states": {str(k): int(v) for k, v in frame["state"].value_counts().items()} if "state" in frame else None,
        "vcs": int(frame["vc"].nunique()) if "vc" in frame and frame["vc"].notna().any() else None,
        "sharing": _sharing_facts(frame),
        "recorded_schedule": recorded_schedule(frame),
        "notes": list(frame.attrs.get("notes", [])),
    }


def _sharing_facts(frame) -> dict | None:
    """What a trace asks beside whole GPUs (None when it asks nothing more): jobs holding a share of one GPU, with
    a GPU-type constraint, per MIG profile asked, and the median CPU and memory asked."""
    columns = ("gpu_milli", "cpu_milli", "memory_mib", "allowed_models", "mig_profile")
    if not any(c in frame and frame[c].notna().any() for c in columns):
        return None
    facts: dict = {}
    if "gpu_milli" in frame:
        milli = frame["gpu_milli"]
        facts["jobs_sharing_a_gpu"] = int((milli.notna() & (milli < 1000)).sum())
        shared = milli[milli.notna() & (milli < 1000)]
        facts["median_gpu_share"] = float(shared.median()) / 1000 if len(shared) else None
    if "allowed_models" in frame:
        facts["jobs_with_gpu_type_constraint"] = int(frame["allowed_models"].notna().sum())
    if "mig_profile" in frame and frame["mig_profile"].notna().any():
        counts = frame["mig_profile"].value_counts()
        facts["jobs_per_mig_profile"] = {str(k): int(v) for k, v in sorted(counts.items(), key=_by_slices)}
    for column, key, scale in (("cpu_milli", "median_cores", 1000), ("memory_mib", "median_memory_gib", 1024)):
        if column in frame and frame[column].notna().any():
            facts[key] = float(frame[column].median()) / scale
    return facts


def _by_slices(item: tuple) -> tuple[int, str]:
    """A MIG profile's (slices, name): ``1g.5gb`` before ``3g.20gb`` before ``7g.40gb``."""
    name = str(item[0])
    return int(name.split("g.", 1)[0]), name


def _print_trace_summary(info: dict, name: str) -> None:
    from rich.console import Console

    console = Console()
    first, last, jobs = info["first_arrival_s"], info["last_arrival_s"], info["jobs"]
    rows = [
        ("jobs", f"{jobs:,}"),
        ("arrivals", f"{first:,.0f} s ... {last:,.0f} s ({duration_text(last - first)})"),
        ("GPUs requested", f"{info['gpus_requested']:,}"),
        ("rows with work", f"{info['rows_with_work']:,}"),
        ("rows with duration", f"{info['rows_with_duration']:,}"),
    ]
    if info["median_duration_s"] is not None:
        rows.append(("median duration", metric_text("median_duration_s", info["median_duration_s"])))
        rows.append(("GPU-hours (duration x GPUs)", f"{info['gpu_hours_on_reference_gpu']:,.0f}"))
    if info["vcs"] is not None:
        rows.append(("virtual clusters (vc)", f"{info['vcs']:,}"))
    labels = {
        "jobs_sharing_a_gpu": "jobs holding a share of one GPU",
        "median_gpu_share": "median share of those",
        "jobs_with_gpu_type_constraint": "jobs with allowed GPU models",
        "median_cores": "median CPU cores asked",
        "median_memory_gib": "median memory asked (GiB)",
    }
    for key, value in (info.get("sharing") or {}).items():
        if key == "jobs_per_mig_profile":
            rows.extend((f"jobs asking MIG {profile}", f"{n:,}") for profile, n in value.items())
        elif value is not None:
            rows.append((labels[key], f"{value:,}" if isinstance(value, int) else f"{value:,.3g}"))
    print_table(console, f"{name} ({info['format']})", ("what", "value"), rows, right=("value",))
    gpus = [(count, f"{n:,}", f"{n / jobs:.1%}") for count, n in info["gpus_per_job"].items()]
    print_table(console, "GPUs per job", ("GPUs", "jobs", "share"), gpus, right=("GPUs", "jobs", "share"))
    types = [(job_type, f"{n:,}") for job_type, n in info["job_types"].items()]
    title = f"job types ({info['job_types_distinct']} distinct)"
    print_table(console, title, ("job type", "jobs"), types, right=("jobs",))
    if info["states"] is not None:
        states = [(state, f"{n:,}", f"{n / jobs:.1%}") for state, n in info["states"].items()]
        print_table(console, "final state", ("state", "jobs", "share"), states, right=("jobs", "share"))
    recorded = info["recorded_schedule"]
    if recorded is not None:
        rows = [
            ("finished jobs (with an end)", f"{recorded['finished']:,}"),
            ("not finished", f"{recorded['unfinished']:,}"),
            ("mean JCT (end - arrival)", f"{recorded['avg_jct_s']:,.0f} s"),
            ("median / p99 JCT", f"{recorded['p50_jct_s']:,.0f} s / {recorded['p99_jct_s']:,.0f} s"),
            ("makespan", f"{recorded['makespan_s']:,.0f} s"),
        ]
        if recorded["mean_queueing_delay_s"] is not None:
            rows.append(("mean wait (start - arrival)", f"{recorded['mean_queueing_delay_s']:,.0f} s"))
        print_table(console, "as the source's scheduler ran it (start, end)", ("what", "value"), rows, right=("value",))
    for note in info["notes"]:
        console.print(f"note: {note}")


@app.command("generate")
def generate(
    out: Path = typer.Argument(..., help="Output trace (.csv or .parquet)."),
    jobs: int = typer.Option(200, "--jobs", "-n", help="Number of jobs."),
    rate: float = typer.Option(4.0, "--rate", "-r", help="Poisson arrival rate in jobs per hour."),
    seed: int = typer.Option(0, "--seed", "-s", min=SEED.lo, max=SEED.hi, help="Random seed (same seed, same trace)."),
    priority: bool = typer.Option(
        False, "--priority", help="Give 20% of the jobs priority weight 5 (Gavel's generator)."
    ),
    slo: bool = typer.Option(
        False, "--slo", help="Give every job a deadline: arrival + SLO x duration, SLO in {1.2, 2, 10}."
    ),
    profiles: Optional[Path] = typer.Option(None, "--profiles", help=PROFILES_HELP),
) -> None:
    """Generate a Philly-like trace with Gavel's distributions (1/2/4/8 GPUs, Poisson arrivals)."""
    from gpuweave.workload.traces.generate import generate_philly_like
    from gpuweave.workload.traces.schema import write_trace

    generated = generate_philly_like(jobs, rate, seed, _profiles(profiles, False), with_priority=priority, with_slo=slo)
    write_trace(generated, out)
    typer.echo(f"wrote {out}: {len(generated)} jobs, seed {seed}, {rate:g} jobs/hour")


@app.command("cluster")
def cluster(
    source: Path = typer.Argument(
        ...,
        metavar="IN",
        help=(
            "Node list: openb_node_list_*.csv, node_info_df.csv or pai_machine_spec.csv; or Helios' "
            "cluster_gpu_number.csv (with --gpu)."
        ),
    ),
    out: Optional[Path] = typer.Argument(None, metavar="OUT", help="Output YAML (default: print)."),
    from_format: str = typer.Option(
        "auto", "--from", help="openb-nodes, spot-nodes, pai-machines, helios-vcs or auto (from the name and header)."
    ),
    gpu: Optional[str] = typer.Option(
        None, "--gpu", help="helios-vcs: the GPU model of every node (the file gives counts only), e.g. V100."
    ),
    date: Optional[str] = typer.Option(None, "--date", help="helios-vcs: the day YYYY-MM-DD (default: the last)."),
    gpus_per_node: int = typer.Option(8, "--gpus-per-node", help="helios-vcs: GPUs per node (Helios' servers: 8)."),
    name: Optional[str] = typer.Option(None, "--name", help="Cluster name (default: from the source)."),
    price_per_kwh: Optional[float] = typer.Option(
        None, "--price-per-kwh", help="Energy price for every node (the traces have none)."
    ),
    pue: Optional[float] = typer.Option(
        None, "--pue", help="Power usage effectiveness for every node (the traces have none)."
    ),
    catalog_only: bool = typer.Option(
        False,
        "--catalog-only",
        help="Leave out nodes whose GPU model the hardware catalog does not know (e.g. the undisclosed G2).",
    ),
    gpu_map: list[str] = typer.Option(
        [],
        "--gpu-map",
        help="Node lists: take an undisclosed or mixed GPU type as a catalog model, TYPE=MODEL (repeat), e.g. "
        "MISC=K80 for PAI's older GPUs.",
    ),
) -> None:
    """Turn an Alibaba node list (openb 2023, spot 2026, PAI 2020 machines), or a Helios VC file on one day, into a
    cluster spec (YAML: name, description, source, nodes)."""
    import math

    from gpuweave.hardware.cluster_spec import check_cluster_yaml
    from gpuweave.workload.traces.alibaba import check_catalog_models, cluster_gpu_count, cluster_to_yaml

    if price_per_kwh is not None and not (math.isfinite(price_per_kwh) and price_per_kwh >= 0):
        raise InputError(f"--price-per-kwh must be a number >= 0, got {price_per_kwh}", field="price_per_kwh")
    if pue is not None and not (math.isfinite(pue) and pue >= 1):
        raise InputError(f"--pue must be a number >= 1 (power usage effectiveness), got {pue}", field="pue")
    kind = from_format if from_format != "auto" else _node_list_kind(source)
    reader = _node_list_reader(kind)
    kwargs: dict[str, Any] = {"price_per_kwh": price_per_kwh, "pue": pue}
    if kind == "helios-vcs":
        if gpu_map:
            raise InputError("--gpu-map is for node lists; a Helios VC file takes --gpu MODEL", field="gpu-map")
        kwargs.update(gpu=gpu, date=date, gpus_per_node=gpus_per_node)
    else:
        from gpuweave.workload.traces.slurm_nodes import parse_gpu_map

        kwargs.update(catalog_only=catalog_only, gpu_map=parse_gpu_map(gpu_map))
    if name:
        kwargs["name"] = name
    cluster = reader(source, **kwargs)
    check_catalog_models(cluster, file=source)  # an undisclosed type would not load: say how to map or drop it
    text = cluster_to_yaml(cluster)
    check_cluster_yaml(text, source=source)  # what `cluster show` would refuse is not written (nor printed)
    if out is None:
        typer.echo(text, nl=False)
    else:
        from gpuweave.files import prepare_output_file

        prepare_output_file(out, field="out", suffixes=(".yaml", ".yml")).write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}: {len(cluster['nodes'])} node groups, {cluster_gpu_count(cluster):,} GPUs")


def _node_list_reader(kind: str):
    """The reader of node-list format ``kind``; InputError naming the formats for any other."""
    from gpuweave.workload.traces.alibaba import read_openb_nodes, read_spot_nodes
    from gpuweave.workload.traces.helios import read_helios_vcs
    from gpuweave.workload.traces.pai import read_pai_machines

    readers = {
        "openb-nodes": read_openb_nodes,
        "spot-nodes": read_spot_nodes,
        "pai-machines": read_pai_machines,
        "helios-vcs": read_helios_vcs,
    }
    if kind not in readers:
        raise InputError(f"unknown node-list format {kind!r}; expected {', '.join(readers)}", field="from")
    return readers[kind]


def _node_list_kind(source: Path) -> str:
    """The node-list format of ``source``, from its published name (PAI's headerless machine list) or its header."""
    from gpuweave.workload.traces._tables import read_text

    if source.name.lower().startswith("pai_machine_spec"):
        return "pai-machines"
    text = read_text(source)
    columns = {c.strip() for c in (text.splitlines()[0] if text.strip() else "").split(",")}
    for kind, signature in (
        ("spot-nodes", {"gpu_capacity_num"}),
        ("openb-nodes", {"sn"}),
        ("helios-vcs", {"date", "total"}),
        ("pai-machines", {"machine", "gpu_type", "cap_gpu"}),
    ):
        if signature <= columns:
            return kind
    raise InputError("cannot tell the node-list format from the name or header; pass --from", file=source, row=0)


app.command("import-torch")(import_torch)  # the same command as `gpuweave kernel import-torch`


@app.command("import-slurm")
def import_slurm(
    source: Optional[str] = typer.Argument(
        None,
        metavar="SACCT",
        help="sacct --parsable2 output with the fields of docs/slurm.md ('-' = stdin); none: run sacct here.",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output trace in gpuweave's schema (.csv or .parquet)."),
    starttime: Optional[str] = typer.Option(None, "--starttime", "-S", help="Running sacct: its --starttime."),
    endtime: Optional[str] = typer.Option(None, "--endtime", "-E", help="Running sacct: its --endtime."),
    partition: Optional[str] = typer.Option(None, "--partition", help="Running sacct: only this partition."),
    save_sacct: Optional[Path] = typer.Option(None, "--save-sacct", help="Running sacct: keep its output here too."),
    gpu_map: list[str] = typer.Option([], "--gpu-map", help="Slurm GPU type to catalog model, TYPE=MODEL (repeat)."),
    profiles: Optional[Path] = typer.Option(None, "--profiles", help=PROFILES_HELP),
    seed: int = typer.Option(
        0, "--seed", min=SEED.lo, max=SEED.hi, help="Seed of the job-type assignment (Slurm records no model)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was written (path, jobs, GPUs, notes) as JSON."),
) -> None:
    """Turn a Slurm cluster's job history (sacct) into a gpuweave trace: submit, start, end, GPUs, GPU type,
    user, partition, state. Jobs without GPUs or that never ran are left out (the notes count them)."""
    from gpuweave.workload.traces.schema import validate_frame, write_frame
    from gpuweave.workload.traces.slurm import sacct_command, sacct_frame
    from gpuweave.workload.traces.slurm_nodes import parse_gpu_map

    mapping = parse_gpu_map(gpu_map)
    if source is None:
        from gpuweave.files import prepare_output_file
        from gpuweave.live.slurm_commands import run_slurm

        command = sacct_command(starttime, endtime, partition)
        text, label = run_slurm(command), " ".join(command[:2]) + " ..."
        if save_sacct is not None:
            prepare_output_file(save_sacct, field="save-sacct").write_text(text, encoding="utf-8")
    elif source == "-":
        from gpuweave.files import STDIN, read_stdin_text

        text, label = read_stdin_text(), STDIN  # bytes decoded as UTF-8: another encoding is one line
    else:
        from gpuweave.workload.traces._tables import read_text

        text, label = read_text(source), source
    store = _profiles(profiles, False)
    raw = sacct_frame(text, source=label, seed=seed, profiles=store, gpu_map=mapping)
    frame = validate_frame(raw, file=label, profiles=store)
    write_frame(frame.dropna(axis=1, how="all"), out)
    notes, gpus = raw.attrs.get("notes", []), int(frame["num_gpus"].sum())
    if as_json:
        from gpuweave.cli.output import print_json

        print_json({"out": str(out), "source": label, "jobs": len(frame), "gpus": gpus, "notes": notes})
        return
    for note in notes:
        typer.echo(f"note: {note}")
    typer.echo(f"wrote {out}: {len(frame)} jobs ({gpus} GPUs requested) from {label} (slurm)")
