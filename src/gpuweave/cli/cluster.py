"""``gpuweave cluster simulate|fill|plan hadar|plan andreas|run|compare|policies|placements|list|show|import-slurm``:
the cluster grain.

``simulate`` runs a trace through the simulator under one policy; ``fill`` is FGD's experiment on shared GPUs (tasks
placed at arrival until the cluster is full); ``plan hadar``/``plan andreas`` plan one round of a snapshot;
``run``/``compare`` are the live runtime; ``list``/``show`` the bundled cluster specs; ``import-slurm`` makes a
cluster spec of a Slurm cluster's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from gpuweave.checks import SEED
from gpuweave.cli.listing import JSON_OPTION_HELP, print_listing
from gpuweave.cli.output import (
    JSON_HELP,
    ProgressBar,
    cell,
    metric_cell,
    print_json,
    print_table,
    quiet_option,
    show_progress,
)
from gpuweave.executors import executor_names, spoken

if TYPE_CHECKING:
    from gpuweave.cluster.config import SimulationConfig

NAME = "cluster"
app = typer.Typer(help="Cluster grain: simulate, plan and run policies; cluster specs.", no_args_is_help=True)
plan_app = typer.Typer(help="Plan one scheduling round of a cluster snapshot and print it.", no_args_is_help=True)
app.add_typer(plan_app, name="plan")


ARRIVAL_SCALE_HELP = (
    "Compress or stretch the jobs' arrivals (same jobs, same run times): each arrives at first + (arrival - first) "
    "× scale, first being the earliest arrival. 0.5 = twice as dense (twice the load), 2 = half as dense; default 1 "
    "(the trace's own arrivals)."
)


@app.command("simulate")
def simulate(
    config: Optional[Path] = typer.Argument(None, help="Run config YAML (see docs); flags below override it."),
    policy: Optional[str] = typer.Option(None, "--policy", "-p", help="Cluster policy (gpuweave cluster policies)."),
    cluster: Optional[str] = typer.Option(None, "--cluster", "-c", help="Bundled cluster name or cluster YAML."),
    trace: Optional[str] = typer.Option(None, "--trace", "-t", help="Trace file in the gpuweave schema."),
    jobs: Optional[int] = typer.Option(None, "--jobs", help="Generated jobs when no trace is given."),
    rate: Optional[float] = typer.Option(None, "--rate", help="Generated arrival rate, jobs/hour."),
    seed: Optional[int] = typer.Option(None, "--seed", min=SEED.lo, max=SEED.hi),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="Result directory (default gpuweave-out/runs/POLICY-KEY)."
    ),
    report: bool = typer.Option(False, "--report", help="Also write report.html into the result directory."),
    restart_delay: Optional[float] = typer.Option(
        None, "--restart-delay", help="Seconds a resumed or moved job holds GPUs without progress (default 10)."
    ),
    round_length: Optional[float] = typer.Option(None, "--round-length", help="Override the policy's round (s)."),
    profiles: Optional[str] = typer.Option(
        None,
        "--profiles",
        help="Throughput profile CSV (default: bundled), or 'traced': every job runs for its trace's duration on any "
        "GPU (a replay, e.g. of openb's pods).",
    ),
    placement: Optional[str] = typer.Option(
        None, "--placement", help="Override the cluster's placement: physical or ideal (always consolidated)."
    ),
    placement_rule: Optional[str] = typer.Option(
        None,
        "--placement-rule",
        help="Where a gang goes on a GPU model (gpuweave cluster placements; default packed), or a task placement "
        "(fgd, best-fit, ...): jobs then share GPUs by their gpu_milli, cpu_milli and memory_mib "
        "(fifo, sjf, yarn-cs, tiresias, gavel's family).",
    ),
    extrapolate: Optional[bool] = typer.Option(
        None,
        "--extrapolate/--no-extrapolate",
        help="Scale a job type's largest profiled GPU count linearly to larger jobs (e.g. a trace's 16-GPU jobs).",
        show_default=False,
    ),
    sharing: Optional[str] = typer.Option(
        None,
        "--sharing",
        help="With a task placement: every node group shares its GPUs as whole (shares rounded up), fraction or "
        "mig. A comma list (whole,fraction,mig) runs the same jobs under each mode into OUT/MODE/ and compares them "
        "in OUT/report/report.html: waiting, JCT, GPUs held and fragmentation.",
    ),
    arrival_scale: Optional[float] = typer.Option(None, "--arrival-scale", help=ARRIVAL_SCALE_HELP),
    policy_option: list[str] = typer.Option(
        [], "--policy-option", "-O", help="Policy option KEY=VALUE (repeatable; VALUE read as YAML)."
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the run's metrics and paths as JSON."),
) -> None:
    """Simulate a trace on a cluster under one policy; write jobs.csv, allocations.csv, timeseries.csv, summary.json.

    Every run setting of a YAML config is also a flag (--restart-delay, --round-length, --profiles, --placement,
    --placement-rule, --sharing, --extrapolate, --arrival-scale, -O policy options), so a variant needs no YAML."""
    overrides = {
        "policy": policy,
        "cluster": cluster,
        "trace": trace,
        "jobs": jobs,
        "rate_per_hour": rate,
        "seed": seed,
        "restart_delay": restart_delay,
        "round_length": round_length,
        "profiles": profiles,
        "placement": placement,
        "placement_rule": placement_rule,
        "extrapolate_profiles": extrapolate,
        "arrival_scale": arrival_scale,
    }
    if sharing is not None and _simulated_modes(config, overrides, policy_option, sharing, out, quiet, as_json):
        return
    _simulate_one(_config_with_flags(config, overrides, policy_option), out, report, quiet, as_json)


def _simulate_one(cfg: SimulationConfig, out: Optional[Path], report: bool, quiet: bool, as_json: bool) -> None:
    """``cluster simulate`` of one run config into ``out`` (default gpuweave-out/runs/POLICY-KEY), then shown."""
    from gpuweave.cluster.run import run_simulation
    from gpuweave.staging import check_replaceable

    out_dir = out or Path("gpuweave-out") / "runs" / f"{cfg.policy}-{cfg.key()}"
    check_replaceable(out_dir)  # fail before simulating, not after (a file, or a directory of other files)
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        summary = run_simulation(cfg, out_dir, bar.task(f"simulate {cfg.policy}: jobs done"), _note_to_stderr)
    _show_run(cfg.policy, summary, out_dir, report, as_json)


def _show_run(policy: str, summary: dict, out_dir: Path, report: bool, as_json: bool) -> None:
    """After ``cluster simulate``: its report (``--report``), then its metrics as a table or JSON."""
    from rich.console import Console

    path = None
    if report:
        from gpuweave.report.html import render_report

        path = render_report([out_dir], out_dir / "report", title=f"gpuweave: {policy}")
    if as_json:
        print_json({"policy": policy, "metrics": summary, "results": str(out_dir), "report": path and str(path)})
        return
    console = Console()
    _print_summary(console, policy, summary)
    if path is not None:
        console.print(f"report: {path}")
    console.print(f"results: {out_dir}")


def _simulated_modes(config: Path | None, overrides: dict, policy_option: list[str], sharing: str, *args: Any) -> bool:
    """``--sharing``: several modes are simulated side by side (True); one mode goes into ``overrides`` (False)."""
    from gpuweave.cluster.sharing.modes import parse_modes

    modes = parse_modes(sharing)
    if len(modes) == 1:
        overrides["sharing"] = modes[0]
        return False
    configs = [_config_with_flags(config, {**overrides, "sharing": mode}, policy_option) for mode in modes]
    _simulate_modes(configs, *args)
    return True


def _simulate_modes(configs: list, out: Optional[Path], quiet: bool, as_json: bool) -> None:
    """``cluster simulate --sharing A,B,..``: one run per sharing mode of the same jobs into ``OUT/<mode>/``, then
    one report of them all, ``OUT/report/`` (its page removed first: a comparison that fails halfway has none)."""
    from rich.console import Console

    from gpuweave.cluster.run import run_simulation, with_sharing
    from gpuweave.cluster.sharing.modes import MODE_WORDS, REPORT_DIR, check_out
    from gpuweave.hardware.cluster_spec import load_cluster
    from gpuweave.report.html import render_report

    first = configs[0]
    modes = [cfg.sharing for cfg in configs]
    out_dir = out or Path("gpuweave-out") / "runs" / f"{first.policy}-{first.placement_rule}-{'+'.join(modes)}"
    check_out(out_dir, modes)
    nodes = load_cluster(first.cluster).expand()
    for mode in modes:  # a mode the cluster cannot have is refused before any run (MIG on GPUs without it)
        with_sharing(nodes, mode)
    (out_dir / REPORT_DIR / "report.html").unlink(missing_ok=True)
    metrics: dict[str, dict] = {}
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        for cfg in configs:
            task = bar.task(f"simulate {cfg.policy}, {MODE_WORDS[cfg.sharing]}: jobs done")
            metrics[cfg.sharing] = run_simulation(cfg, out_dir / cfg.sharing, task, _note_to_stderr)
    words = " vs ".join(MODE_WORDS[m] for m in modes)
    title = f"gpuweave: {first.policy} with {first.placement_rule}, {words}"
    path = render_report([out_dir / m for m in modes], out_dir / REPORT_DIR, title=title)
    if as_json:
        runs = {m: {"metrics": metrics[m], "results": str(out_dir / m)} for m in modes}
        print_json({"policy": first.policy, "modes": runs, "report": str(path), "results": str(out_dir)})
        return
    names = ["avg_jct_s", "p99_jct_s", "mean_queueing_delay_s", "makespan_s", "mean_gpu_allocation_pct"]
    names += ["peak_gpu_allocation_pct", "mean_fragment_ratio_pct", "gpu_hours", "energy_kwh"]
    rows = [(name, *(metric_cell(name, metrics[m].get(name)) for m in modes)) for name in names]
    console = Console()
    print_table(
        console, f"{first.policy} with {first.placement_rule}", ("metric", *[MODE_WORDS[m] for m in modes]), rows
    )
    console.print(f"report: {path}")
    console.print(f"results: {out_dir} ({', '.join(f'{m}/' for m in modes)})")


def _note_to_stderr(note: str) -> None:
    typer.echo(f"note: {note}", err=True)


def parse_policy_options(pairs: list[str]) -> dict[str, object]:
    """``KEY=VALUE`` pairs of --policy-option, each VALUE parsed as YAML (numbers, booleans, lists stay typed)."""
    from gpuweave.checks import finite_options
    from gpuweave.errors import InputError
    from gpuweave.files import parse_yaml

    options: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {pair!r}", field="policy-option")
        options[key.strip()] = parse_yaml(value, source=f"--policy-option {key.strip()}", what="option value")
    try:
        return finite_options(options)  # YAML reads .inf and .nan
    except InputError as exc:
        raise InputError(exc.message, field="policy-option") from None


def _config_with_flags(config: Path | None, overrides: dict, policy_option: list[str]):
    """The run config file's settings (none without a file), with the flags that were given in their place."""
    from gpuweave.cluster.config import load_config, parse_config
    from gpuweave.errors import InputError

    data = load_config(config).model_dump() if config else {}
    data.update({key: value for key, value in overrides.items() if value is not None})
    if policy_option:
        data["policy_options"] = {**data.get("policy_options", {}), **parse_policy_options(policy_option)}
    if "policy" not in data:
        raise InputError("no policy given: pass --policy NAME or a config with 'policy:'", field="policy")
    return parse_config(data, config or "<command line>")


def _print_summary(console, policy: str, summary: dict) -> None:
    rows = [(k, metric_cell(k, v)) for k, v in summary.items()]
    print_table(console, f"summary: {policy}", ("metric", "value"), rows, right=("value",))
    from gpuweave.cluster.metrics import placement_note  # numpy is loaded by now: the run computed its metrics

    note = placement_note(summary)
    if note:
        console.print(f"note: {note} (utilization counts GPUs held, not work done)", markup=False, highlight=False)


@app.command("policies")
def policies(as_json: bool = typer.Option(False, "--json", help=JSON_OPTION_HELP)) -> None:
    """List the registered cluster policies: trigger, what they do, options."""
    from gpuweave.cluster.policies import POLICIES

    title = "cluster policies (options go in the run config's policy_options)"
    print_listing(POLICIES, title, as_json, meta_columns=("trigger",))


@app.command("placements")
def placements(as_json: bool = typer.Option(False, "--json", help=JSON_OPTION_HELP)) -> None:
    """List the registered placement rules: 'gangs' place whole-GPU gangs on one GPU model (a run config's
    placement_rule, --placement-rule); 'tasks' place tasks on shared GPUs (gpuweave cluster fill, crosscheck fgd)."""
    from gpuweave.cluster.placements import PLACEMENTS

    print_listing(PLACEMENTS, "placement rules", as_json, meta_columns=("places",))


@plan_app.command("hadar")
def plan_hadar(
    state: Path = typer.Argument(
        ...,
        metavar="SNAPSHOT",
        help="Snapshot JSON: cluster, jobs with work, remaining and running placements "
        "(see gpuweave.cluster.hadar_snapshot).",
    ),
    variant: str = typer.Option(
        "replan", "--variant", help="replan (spec §2.8), sticky (paper §IV-B) or literal (printed Alg. 2)."
    ),
    utility: str = typer.Option("raw", "--utility", help="raw (effective throughput) or normalized."),
    solver: str = typer.Option(
        "dp", "--solver", help="dp (memoised DP with a state budget) or exact (the round's optimum, HiGHS)."
    ),
    order: str = typer.Option("fifo", "--order", help="Q order: fifo (spec), srpt or slack-srpt (named variants)."),
    backfill: bool = typer.Option(False, "--backfill", help="Offer jobs the DP skipped the GPUs left free."),
    max_states: int = typer.Option(64, "--max-states", help="DP memo budget per round."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    quiet: bool = quiet_option(),
) -> None:
    """Plan one Hadar round: start, keep, move, stop or wait per job, with placements and rates."""
    from gpuweave.cluster.hadar_plan import plan_snapshot
    from gpuweave.errors import InputError

    if max_states < 1:
        raise InputError(f"--max-states must be >= 1, got {max_states}", field="max_states")
    options = dict(variant=variant, utility=utility, solver=solver, order=order, backfill=backfill)
    with ProgressBar(show_progress(quiet or as_json)) as bar:  # --solver exact on a large snapshot takes a while
        bar.task(f"plan hadar ({solver})")
        out = plan_snapshot(state, **options, max_states=max_states)
    if as_json:
        print_json(out)
    else:
        _print_hadar_plan(out, f"{variant}, {solver}, {order}")


def _print_hadar_plan(out: dict, setting: str) -> None:
    from rich.console import Console

    rows = []
    for r in out["jobs"]:
        where = " + ".join(f"{p['node']} ({p['gpu']}) × {p['gpus']}" for p in r["placement"])
        rate = cell(r["rate"]) if r["placement"] else ""
        rows.append((r["job"], r["job_type"], str(r["gpus"]), r["decision"], where, rate, cell(r["remaining"])))
    console = Console()
    title = f"Hadar round at t={out['now']:g} s (L = {out['round_length']:g} s; {setting})"
    columns = ("job", "job type", "W", "decision", "placement", "rate [it/s]", "remaining [it]")
    print_table(console, title, columns, rows, right=("W", "rate [it/s]", "remaining [it]"))
    fallback = "state budget hit (greedy fallback)" if out["fallback"] else "no fallback"
    console.print(
        f"payoff {cell(out['value'])}; {out['states']} FIND_ALLOC calls; "
        f"{fallback}; {out['decision_seconds'] * 1000:.1f} ms"
    )


@plan_app.command("andreas")
def plan_andreas(
    state: Path = typer.Argument(
        ..., metavar="STATE", help="Snapshot JSON: now, nodes, queued and running jobs (see gpuweave.andreas.snapshot)."
    ),
    method: str = typer.Option("andreas", "--method", help="andreas (Randomized Greedy), fifo, edf or priority."),
    seed: int = typer.Option(0, "--seed", min=SEED.lo, max=SEED.hi, help="RG seed."),
    max_it: int = typer.Option(1000, "--max-it", help="MaxIt_RG (capped at N*|Q|*G_cat)."),
    variant: str = typer.Option("code", "--variant", help="Proxy objective: code (default) or paper."),
    exact: bool = typer.Option(False, "--exact", help="Also solve the exact MILP (small queues) and print RG's gap."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    quiet: bool = quiet_option(),
) -> None:
    """Plan one ANDREAS rescheduling point: job -> node and GPUs, or postponed, with the cost terms."""
    from gpuweave.andreas.plan import plan_snapshot

    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"plan andreas ({method}{', exact MILP' if exact else ''})")
        out = plan_snapshot(state, method, seed, max_it, variant, exact)
    if as_json:
        print_json(out)  # an infinite tardiness or cost is null, never the invalid token Infinity
    else:
        _print_andreas_plan(out, method, variant)


def _print_andreas_plan(out: dict, method: str, variant: str) -> None:
    from rich.console import Console

    rows = []
    for r in out["jobs"]:
        if r["node"] is None:
            rows.append((r["job"], f"postponed (W={cell(r['postpone_cost'])} €)", "", "", f"{r['due']:g}", ""))
        else:
            decision = f"{r['node']} × {r['gpus']} ({r['config']})"
            times = (f"{r['time_s']:.1f}", f"{r['end']:.1f}", f"{r['due']:g}", f"{r['late_s']:.1f}")
            rows.append((r["job"], decision, *times))
    console = Console()
    columns = ("job", "decision", "time [s]", "ends", "due", "late [s]")
    title = f"ANDREAS plan at t={out['now']:g} s ({method}, proxy {variant})"
    print_table(console, title, columns, rows, right=columns[2:])
    line = (
        f"f_OBJ = {cell(out['f_obj'])} € = energy {cell(out['energy'])} + tardiness {cell(out['tardiness'])} + "
        f"postponement {cell(out['postpone'])}; greedy {cell(out['f_greedy'])}; {out['iterations']} iterations"
    )
    if "f_opt" in out:
        line += f"; exact optimum {cell(out['f_opt'])} (RG gap {out['gap']:.2%})"
    console.print(line)


@app.command("run")
def run(
    config: Path = typer.Argument(..., help="Run config YAML (the simulate config plus an executor section)."),
    executor: Optional[str] = typer.Option(
        None, "--executor", "-e", help=f"{spoken(executor_names())} (default: the config's; docs/slurm.md)."
    ),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: a local Ray)."),
    out: Path = typer.Option(..., "--out", "-o", help="Result directory (also holds the journal and checkpoints)."),
    replace: bool = typer.Option(
        False, "--replace", help="Delete the run already in --out (finished or not) and run from scratch."
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the run's summary as JSON."),
) -> None:
    """Run a trace for real under a policy: workers, checkpoints, preemption, moves; write simulator results.

    An unfinished run in --out (killed) is resumed from its journal; a finished one is refused unless --replace.
    Exit status 3 (last line: how many jobs did not finish) when some job failed after its retries.
    """
    from rich.console import Console

    from gpuweave.live.launch import run_live
    from gpuweave.live.results import INCOMPLETE_EXIT_CODE, unfinished_line

    with ProgressBar(show_progress(quiet or as_json)) as bar:
        summary = run_live(config, executor, address, out, bar.task("live run: jobs done"), replace=replace)
    unfinished = unfinished_line(summary, out)
    if as_json:
        print_json({"summary": summary, "results": str(out)})
    else:
        console = Console()
        for key in ("jobs", "completed", "avg_jct_s", "makespan_s", "restarts"):
            value = summary[key]
            console.print(f"{key}: {metric_cell(key, value)}")
        console.print(f"results: {out}")
    if unfinished is not None:
        typer.echo(unfinished, err=True)
        raise typer.Exit(INCOMPLETE_EXIT_CODE)


@app.command("compare")
def compare(
    sim_run: Path = typer.Argument(..., help="Result directory of `gpuweave cluster simulate`."),
    live_run: Path = typer.Argument(..., help="Result directory of `gpuweave cluster run`."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Print each job's JCT in the simulated and the live run, and the ratio live/sim."""
    from rich.console import Console

    from gpuweave.cluster.results import fmt
    from gpuweave.live.results import compare_jct

    rows = compare_jct(sim_run, live_run)
    if as_json:
        keys = ("job", "sim_jct_s", "live_jct_s", "live_over_sim")
        print_json([dict(zip(keys, row)) for row in rows])
        return
    cells = [
        (job_id, fmt(sim and round(sim, 2)), fmt(live and round(live, 2)), fmt(ratio and round(ratio, 3)))
        for job_id, sim, live, ratio in rows
    ]
    columns = ("job", "sim JCT s", "live JCT s", "live/sim")
    print_table(Console(), f"JCT: {live_run} (live) vs {sim_run} (sim)", columns, cells, right=columns[1:])


@app.command("list")
def list_clusters(as_json: bool = typer.Option(False, "--json", help="Print the bundled clusters as JSON.")) -> None:
    """List the bundled cluster specs."""
    from rich.console import Console

    from gpuweave.hardware.cluster_spec import bundled_clusters, load_cluster

    specs = {name: load_cluster(name) for name in bundled_clusters()}
    if as_json:
        print_json([_cluster_json(name, spec) for name, spec in specs.items()])
        return
    rows = [
        (
            name,
            spec.total_nodes,
            spec.total_gpus,
            ", ".join(f"{m} {n}" for m, n in spec.gpus_by_model().items()),
            spec.description,
        )
        for name, spec in specs.items()
    ]
    columns = ("name", "nodes", "GPUs", "by model", "description")
    print_table(Console(), "bundled clusters", columns, rows, right=("nodes", "GPUs"))


def _cluster_json(name: str, spec) -> dict:
    return {
        "name": name,
        "nodes": spec.total_nodes,
        "gpus": spec.total_gpus,
        "gpus_by_model": dict(spec.gpus_by_model()),
        "description": spec.description,
        "source": spec.source,
        "currency": spec.currency,
    }


@app.command("show")
def show(
    name_or_path: str = typer.Argument(..., help="A bundled cluster name (see `cluster list`) or a YAML path."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Summarise a cluster spec: node groups (sharing mode, cores, memory), the MIG partitions of `sharing: mig`
    groups, and GPUs by model."""
    from rich.console import Console

    from gpuweave.hardware.cluster_spec import load_cluster

    spec = load_cluster(name_or_path)
    if as_json:
        groups = [
            {
                "gpu": g.gpu,
                "count": g.count,
                "gpus_per_node": g.gpus_per_node,
                "sharing": g.sharing,
                **({"cpu_milli": g.cpu_milli} if g.cpu_milli is not None else {}),
                **({"memory_mib": g.memory_mib} if g.memory_mib is not None else {}),
                **(_mig_json(g.gpu) if g.sharing == "mig" else {}),
            }
            for g in spec.nodes
        ]
        print_json({**_cluster_json(spec.name, spec), "node_groups": groups})
        return
    console = Console()
    console.print(f"[bold]{spec.name}[/bold]: {spec.total_nodes} nodes, {spec.total_gpus} GPUs")
    if spec.description:
        console.print(spec.description, markup=False)
    if spec.source:
        console.print(f"source: {spec.source}", markup=False, highlight=False)
    _print_node_groups(console, spec)
    _print_mig_partitions(console, spec)
    rows = [(model, str(count)) for model, count in spec.gpus_by_model().items()]
    print_table(console, "GPUs by model", ("GPU", "GPUs"), rows, right=("GPUs",))


def _print_node_groups(console, spec) -> None:
    nodes = spec.expand()
    rows = []
    first = 0
    for i, group in enumerate(spec.nodes):
        members = nodes[first : first + group.count]
        first += group.count
        shown = members[0].name if len(members) == 1 else f"{members[0].name} .. {members[-1].name}"
        gpus = (str(group.gpus_per_node), str(group.count * group.gpus_per_node))
        node_facts = (str(members[0].price_per_kwh), f"{members[0].pue:g}")
        resources = (
            "-" if group.cpu_milli is None else f"{group.cpu_milli / 1000:g}",
            "-" if group.memory_mib is None else f"{group.memory_mib / 1024:g}",
        )
        rows.append((str(i), str(group.count), group.gpu, *gpus, group.sharing, *resources, *node_facts, shown))
    price = f"{spec.currency.strip()}/kWh"
    columns = ("#", "count", "GPU", "GPUs/node", "GPUs", "sharing", "cores", "GiB", price, "PUE", "nodes")
    right = ("#", "count", "GPUs/node", "GPUs", "cores", "GiB", price, "PUE")
    print_table(console, "node groups", columns, rows, right=right)


def _mig_json(model: str) -> dict:
    """A ``sharing: mig`` group's GPU in ``cluster show --json``: its MIG profiles and partitions (as ``gpus MODEL
    --partitions --json``)."""
    from gpuweave.cli.gpus import mig_partitions, mig_profiles
    from gpuweave.hardware.catalog import get_gpu

    gpu = get_gpu(model)
    return {"mig_profiles": mig_profiles(gpu), "mig_partitions": mig_partitions(gpu)}


def _print_mig_partitions(console, spec) -> None:
    """For the GPU models of ``sharing: mig`` groups: the MIG profiles and partitions their GPUs can be cut into."""
    models = dict.fromkeys(g.gpu for g in spec.nodes if g.sharing == "mig")
    if not models:
        return
    rows = []
    for model in models:
        mig = _mig_json(model)
        labels = [p["label"] for p in mig["mig_partitions"]]
        rows.append((model, ", ".join(mig["mig_profiles"]), f"{len(labels)}: {', '.join(labels)}"))
    title = "MIG partitions of the sharing: mig groups (gpuweave gpus MODEL --partitions)"
    print_table(console, title, ("GPU", "profiles", "maximal partitions"), rows)


@app.command("import-slurm")
def import_slurm(
    source: Optional[str] = typer.Argument(
        None, metavar="NODES", help="`scontrol show node` output, text or --json ('-' = stdin); none: ask Slurm here."
    ),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Cluster spec YAML (default: print it)."),
    scontrol_json: bool = typer.Option(
        False, "--scontrol-json", help="Asking Slurm: run `scontrol show node --json` (Slurm >= 23.02)."
    ),
    name: str = typer.Option("slurm", "--name", help="Cluster name."),
    partition: Optional[str] = typer.Option(None, "--partition", help="Only the nodes of this partition."),
    gpu_map: list[str] = typer.Option([], "--gpu-map", help="Slurm GPU type to catalog model, TYPE=MODEL (repeat)."),
    untyped_gpu: Optional[str] = typer.Option(None, "--untyped-gpu", help="Catalog model of GPUs with no type."),
    catalog_only: bool = typer.Option(
        False, "--catalog-only", help="Leave out GPUs whose type the catalog does not know (default: an error)."
    ),
    price_per_kwh: float = typer.Option(0.0, "--price-per-kwh", min=0.0, help="Energy price for every node."),
    pue: float = typer.Option(1.0, "--pue", min=1.0, help="Power usage effectiveness for every node."),
    as_json: bool = typer.Option(False, "--json", help="Print the spec, where it was written and the notes as JSON."),
) -> None:
    """Make a cluster spec of a Slurm cluster's GPU nodes (one gpuweave node per Slurm node and GPU type)."""
    import yaml

    from gpuweave.hardware.cluster_spec import check_cluster_yaml
    from gpuweave.workload.traces.slurm_nodes import import_cluster, parse_gpu_map, parse_nodes

    if source is None:
        from gpuweave.live.slurm_commands import run_slurm

        command = ["scontrol", "show", "node", "--json" if scontrol_json else "--oneliner"]
        text, label = run_slurm(command), " ".join(command)
    elif source == "-":
        from gpuweave.files import STDIN, read_stdin_text

        text, label = read_stdin_text(), STDIN  # bytes decoded as UTF-8: another encoding is one line
    else:
        from gpuweave.workload.traces._tables import read_text

        text, label = read_text(source), source
    spec, notes = import_cluster(
        parse_nodes(text, source=label),
        name=name,
        source=label,
        partition=partition,
        gpu_map=parse_gpu_map(gpu_map),
        untyped=untyped_gpu,
        skip_unknown=catalog_only,
        price_per_kwh=price_per_kwh,
        pue=pue,
    )
    text = yaml.safe_dump(spec, sort_keys=False)
    check_cluster_yaml(text, source=label)  # what `cluster show` would refuse is not written (nor printed)
    if out is not None:
        from gpuweave.files import prepare_output_file

        prepare_output_file(out, field="out", suffixes=(".yaml", ".yml")).write_text(text, encoding="utf-8")
    if as_json:
        print_json({"cluster": spec, "out": str(out) if out else None, "source": label, "notes": notes})
        return
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    if out is None:
        typer.echo(text, nl=False)
        return
    gpus = sum(g["count"] * g["gpus_per_node"] for g in spec["nodes"])
    typer.echo(f"wrote {out}: {sum(g['count'] for g in spec['nodes'])} gpuweave node(s), {gpus} GPUs from {label}")


@app.command("fill")
def fill(
    nodes: Optional[Path] = typer.Option(
        None, "--nodes", help="Node list: openb_node_list_*.csv (sn,cpu_milli,memory_mib,gpu,model); or --cluster."
    ),
    cluster: Optional[str] = typer.Option(
        None,
        "--cluster",
        "-c",
        help="A cluster spec (bundled name or YAML; cpu_milli, memory_mib per node group) instead of --nodes.",
    ),
    pods: Path = typer.Option(
        ...,
        "--pods",
        help="Pod list: openb_pod_list_*.csv (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec][,mig_profile]).",
    ),
    placement: str = typer.Option(
        "fgd", "--placement", help="Task placement (gpuweave cluster placements, kind 'tasks'): fgd, best-fit, ..."
    ),
    seed: int = typer.Option(42, "--seed", min=SEED.lo, max=SEED.hi, help="Seed (FGD's experiments use 42-51)."),
    tune: float = typer.Option(
        1.3, "--to", min=0.01, max=100.0, help="Stop when arrived GPU requests reach this share of the cluster's GPUs."
    ),
    sharing: str = typer.Option(
        "fraction",
        "--sharing",
        help="fraction: tasks share GPUs as they ask; whole: the same tasks on a cluster that cannot share a GPU "
        "(a share takes the whole GPU); mig: each task gets a MIG instance covering its share (needs --cluster "
        "with MIG-capable GPUs). A comma list (whole,fraction,mig) runs the same tasks under each mode, on every "
        "node, into OUT/MODE/ and compares them in OUT/report/report.html: what sharing buys.",
    ),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="Result directory (default gpuweave-out/fill/PLACEMENT-SHARING-SEED, modes joined by +).",
    ),
    report: bool = typer.Option(
        False, "--report", help="Also write report.html into the result directory (always with several modes)."
    ),
    quiet: bool = quiet_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the run's metrics and paths as JSON."),
) -> None:
    """FGD's experiment: place tasks at arrival, never removed, until the arrived GPU requests reach --to times the
    cluster's GPUs; allocation and fragmentation per arrived load (curves.csv), as FGD (ATC'23) measures them.

    Example: gpuweave cluster fill --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv
    --placement fgd --seed 42"""
    from gpuweave.cluster.placements import make_task_placement
    from gpuweave.cluster.sharing.modes import parse_modes

    make_task_placement(placement)  # an unknown name or a gang rule: one line before any file is read
    modes = parse_modes(sharing)
    inputs = _FillInputs(nodes, cluster, pods, placement, seed, tune)
    if len(modes) > 1:
        _fill_modes(inputs, modes, out, quiet, as_json)
    else:
        _fill_one(inputs, modes[0], out, report, quiet, as_json)


@dataclass(frozen=True)
class _FillInputs:
    """What every ``cluster fill`` reads and runs, whatever its sharing modes."""

    nodes: Optional[Path]
    cluster: Optional[str]
    pods: Path
    placement: str
    seed: int
    tune: float

    def config(self, **more: Any) -> dict[str, Any]:
        """The run's config as its result directories record it."""
        source = {"nodes": str(self.nodes) if self.nodes is not None else None, "cluster": self.cluster}
        return {
            **source,
            "pods": str(self.pods),
            "placement": self.placement,
            **more,
            "seed": self.seed,
            "to": self.tune,
        }


def _fill_one(inputs: _FillInputs, sharing: str, out: Optional[Path], report: bool, quiet: bool, as_json: bool) -> None:
    """``cluster fill`` with one ``--sharing`` mode: one result directory (and its report with ``--report``)."""
    from gpuweave.cluster.sharing.experiment import run_fill
    from gpuweave.cluster.sharing.results import fill_metrics, write_fill_result
    from gpuweave.staging import check_replaceable
    from gpuweave.workload.traces.openb import read_openb_tasks

    nodes, cluster, pods, placement, seed = inputs.nodes, inputs.cluster, inputs.pods, inputs.placement, inputs.seed
    node_table = _fill_nodes(nodes, cluster, sharing)
    out_dir = out or Path("gpuweave-out") / "fill" / f"{placement}-{sharing}-{seed}"
    check_replaceable(out_dir)
    tasks = read_openb_tasks(pods)
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        progress = bar.task(f"fill {placement}: tasks")
        result = run_fill(node_table, tasks, placement, seed=seed, tune=inputs.tune, sharing=sharing, progress=progress)
    write_fill_result(out_dir, result, tasks, inputs.config(sharing=sharing))
    path = None
    if report:
        from gpuweave.report.grains import report_runs

        path = report_runs([out_dir], out_dir / "report", title=f"gpuweave: fill with {placement}")
    metrics = fill_metrics(result)
    if as_json:
        print_json({"placement": placement, "metrics": metrics, "results": str(out_dir), "report": path and str(path)})
        return
    from rich.console import Console

    console = Console()
    rows = [(name, metric_cell(name, value)) for name, value in metrics.items()]
    title = f"fill {placement} ({sharing} GPUs), seed {seed}: {result.submitted} tasks"
    print_table(console, title, ("metric", "value"), rows)
    if path is not None:
        console.print(f"report: {path}")
    console.print(f"results: {out_dir}")


def _fill_modes(inputs: _FillInputs, modes: tuple[str, ...], out: Optional[Path], quiet: bool, as_json: bool) -> None:
    """``cluster fill`` with several ``--sharing`` modes (:mod:`gpuweave.cluster.sharing.modes`): every mode's
    nodes and the tasks checked, then every mode run, then ``OUT/<mode>/`` each and one report, ``OUT/report/``."""
    from gpuweave.cluster.sharing.modes import (
        MODE_WORDS,
        REPORT_DIR,
        check_out,
        mode_node_table,
        run_modes,
        write_modes,
    )
    from gpuweave.cluster.sharing.results import fill_metrics
    from gpuweave.report.grains import report_runs
    from gpuweave.workload.traces.openb import read_openb_tasks

    nodes, cluster, pods, placement, seed = inputs.nodes, inputs.cluster, inputs.pods, inputs.placement, inputs.seed
    tables = {"mig": mode_node_table(_fill_nodes(nodes, cluster, "mig"), "mig")} if "mig" in modes else {}
    others = [m for m in modes if m != "mig"]
    if others:  # the node list or spec read once for fractions and whole GPUs
        shared = _fill_nodes(nodes, cluster, "fraction")
        tables.update({m: mode_node_table(shared, m) for m in others})
    out_dir = out or Path("gpuweave-out") / "fill" / f"{placement}-{'+'.join(modes)}-{seed}"
    check_out(out_dir, modes)
    tasks = read_openb_tasks(pods)
    words = [MODE_WORDS[m] for m in modes]
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        results = run_modes(
            {m: tables[m] for m in modes},
            tasks,
            placement,
            seed=seed,
            tune=inputs.tune,
            progress=lambda mode: bar.task(f"fill {placement}, {MODE_WORDS[mode]}: tasks"),
        )
    dirs = write_modes(out_dir, results, tasks, inputs.config())
    title = f"gpuweave: fill with {placement}, {' vs '.join(words)}"
    path = report_runs(dirs, out_dir / REPORT_DIR, title=title)
    metrics = {mode: fill_metrics(result) for mode, result in results.items()}
    if as_json:
        runs = {m: {"metrics": metrics[m], "results": str(d)} for m, d in zip(modes, dirs)}
        print_json({"placement": placement, "modes": runs, "report": str(path), "results": str(out_dir)})
        return
    from rich.console import Console

    console = Console()
    names = list(dict.fromkeys(name for per_mode in metrics.values() for name in per_mode))
    rows = [
        (name, *(metric_cell(name, metrics[m][name]) if name in metrics[m] else "" for m in modes)) for name in names
    ]
    submitted = next(iter(results.values())).submitted
    print_table(console, f"fill {placement}, seed {seed}: {submitted:,} tasks", ("metric", *words), rows)
    console.print(f"report: {path}")
    console.print(f"results: {out_dir} ({', '.join(f'{m}/' for m in modes)})")


def _fill_nodes(nodes: Optional[Path], cluster: Optional[str], sharing: str):
    """The node table of ``cluster fill``: an openb node list or a cluster spec (MIG on every node for
    ``--sharing mig``); one InputError line for a missing or doubled source or a sharing mode it cannot have."""
    from gpuweave.errors import InputError
    from gpuweave.hardware.cluster_spec import load_cluster
    from gpuweave.hardware.node_resources import node_table_from_spec
    from gpuweave.workload.traces.openb import read_openb_node_table

    if (nodes is None) == (cluster is None):
        raise InputError("give the nodes as --nodes CSV or --cluster SPEC (one of them)", field="nodes")
    if sharing not in ("fraction", "whole", "mig"):
        raise InputError(f"--sharing must be fraction, whole or mig, got {sharing!r}", field="sharing")
    if cluster is not None:
        return node_table_from_spec(load_cluster(cluster), mig=sharing == "mig")
    if sharing == "mig":
        raise InputError("--sharing mig needs --cluster (a spec of MIG-capable GPUs); an openb node list has none")
    assert nodes is not None
    return read_openb_node_table(nodes)
