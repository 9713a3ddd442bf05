"""``gpuweave kernel simulate|profile|serve|build-shim|modes|import-torch|bench``: the kernel grain (FIKIT).

``simulate`` runs services sharing one GPU in the simulator (config: :mod:`gpuweave.kernel.sim_config`);
``serve`` and ``build-shim`` are the real path (UDP scheduler server, LD_PRELOAD shim).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from gpuweave.cli.listing import JSON_OPTION_HELP, print_listing
from gpuweave.cli.output import ProgressBar, cell, print_json, print_table, quiet_option, show_progress
from gpuweave.errors import InputError

NAME = "kernel"
app = typer.Typer(
    help="Kernel grain: simulate FIKIT and baselines, build profiles, import traces, run the scheduler server.",
    no_args_is_help=True,
)

#: the window (ms) a timeline PNG and a result directory's kernels.csv show
TIMELINE_WINDOW_MS = (0.0, 20.0)


@app.command("simulate")
def simulate(
    config: Path = typer.Argument(..., help="Simulation config (YAML/JSON): services, priorities, traces, mode."),
    mode: Optional[str] = typer.Option(None, "--mode", help="Override the config's mode."),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        help="FILE.csv: per-task JCTs; any other path: a result directory (tasks.csv, services.csv, summary.json).",
    ),
    timeline: Optional[Path] = typer.Option(None, "--timeline", help="Write a timeline PNG of the first 20 ms here."),
    as_json: bool = typer.Option(False, "--json", help="Print the run's metrics as JSON."),
    quiet: bool = quiet_option(),
) -> None:
    """Simulate services sharing one GPU and print per-service JCT statistics."""
    from dataclasses import replace

    from rich.console import Console

    from gpuweave.files import IMAGE_SUFFIXES, prepare_output_file
    from gpuweave.kernel.results import write_kernel_result, write_tasks_csv
    from gpuweave.kernel.sim import simulate as run_simulation
    from gpuweave.kernel.sim_config import build_simulation, load_config
    from gpuweave.staging import check_replaceable

    data = load_config(config)
    # Check the output paths before simulating, so a bad path costs nothing.
    out_csv = out is not None and out.suffix.lower() == ".csv"
    if out is not None and out_csv:
        prepare_output_file(out, field="out", suffixes=(".csv",))
    elif out:
        check_replaceable(out)
    if timeline:
        prepare_output_file(timeline, field="timeline", suffixes=IMAGE_SUFFIXES)
    if mode:
        data["mode"] = mode
    services, cfg = build_simulation(data, base=config.parent, file=str(config))
    if timeline or (out and not out_csv):  # a result directory keeps the first 20 ms as kernels.csv
        cfg = replace(cfg, record_kernels=True, record_window=TIMELINE_WINDOW_MS)
    with ProgressBar(show_progress(quiet or as_json)) as bar:
        bar.task(f"kernel simulate: {cfg.mode}")
        res = run_simulation(services, cfg)
    console = Console(stderr=as_json)
    written = None
    if out:
        written = write_tasks_csv(res, services, out) if out_csv else write_kernel_result(out, res, services, data)
    if as_json:
        from gpuweave.kernel.results import kernel_metrics

        print_json({"mode": cfg.mode, "metrics": kernel_metrics(res, services), "written": written and str(written)})
    else:
        _print_simulation(console, services, cfg, res)
        if written is not None:
            console.print(f"wrote {written}")
    if timeline:
        from gpuweave.kernel.timeline import plot_timelines

        plot_timelines([(cfg.mode, res.kernels)], TIMELINE_WINDOW_MS, timeline)
        console.print(f"wrote {timeline}")


def _print_simulation(console, services, cfg, res) -> None:
    from gpuweave.kernel.experiments import share_label

    rows = []
    for s in services:
        n = len(res.tasks[s.name])
        rows.append(
            (
                s.name,
                str(s.priority),
                str(n),
                cell(res.mean_jct(s.name), ".3f"),
                cell(res.std_jct(s.name), ".3f"),
                cell(res.cv_jct(s.name), ".4f") if n else "",
                f"{res.service_busy[s.name] / max(res.end_time, 1e-12):.3f}",
            )
        )
    columns = ("service", "priority", "tasks", "mean JCT ms", "std ms", "CV", "busy share")
    print_table(console, f"{cfg.mode} (sharing model: {share_label(cfg)})", columns, rows, right=columns[1:])
    console.print(
        f"simulated {res.end_time:.1f} ms, {res.kernels_run} kernels, device busy {res.busy_fraction():.3f}"
        + (f", fillers {res.core_stats.fillers}" if res.core_stats else "")
    )


@app.command("profile")
def profile(
    traces: list[Path] = typer.Argument(..., help="Recorded runs of one task (trace JSON files, one run each)."),
    task_key: str = typer.Option(..., "--task-key", help="Task key the profile is stored under."),
    out: Path = typer.Option(Path("."), "--out", help="Directory for {task_key}.json."),
    allow_different: bool = typer.Option(
        False,
        "--allow-different",
        help="Accept runs whose kernel sequences differ (one warning line); by default that is an error.",
    ),
) -> None:
    """Build SK/SG (spec §1.5) from T recorded runs of one task and save the profile JSON.

    The runs must launch the same kernel IDs in the same order (runs of one task); a run that differs is named
    and refused, unless --allow-different.
    """
    from gpuweave.files import prepare_output_dir, read_input_text
    from gpuweave.kernel.ids import validate_task_key
    from gpuweave.kernel.profile import ProfileBuilder
    from gpuweave.kernel.traces import Trace

    validate_task_key(task_key)
    for path in traces:
        read_input_text(path, what="trace file")
    prepare_output_dir(out, field="out", create=False)
    b = ProfileBuilder()
    first: list[str] | None = None
    for path in traces:
        tr = Trace.load(path)
        ids = [o.kid for o in tr.ops]
        if first is None:
            first = ids
        elif ids != first:
            where = next((i for i, (a, c) in enumerate(zip(first, ids)) if a != c), min(len(first), len(ids)))
            detail = (
                f"kernel {where + 1} is {ids[where]!r}, run 1 has {first[where]!r}"
                if where < min(len(first), len(ids))
                else f"{len(ids)} kernels, run 1 has {len(first)}"
            )
            message = (
                f"the kernel sequence differs from the first run's ({detail}): runs of one task launch the same kernels"
            )
            if not allow_different:
                raise InputError(message + "; pass --allow-different to profile them anyway", file=path, row=where + 1)
            typer.echo(f"warning: {path}: {message}"[:300], err=True)
        # a recorded run as a trace: gap after kernel i = host time before kernel i+1 (closed loop)
        b.add_run(ids, [o.dur for o in tr.ops], [o.cpu_before for o in tr.ops[1:]])
    prof = b.build(task_key)
    out.mkdir(parents=True, exist_ok=True)
    prof.save(out / f"{task_key}.json")
    typer.echo(
        f"profile {task_key}: {b.runs} runs, {prof.unique_ids} unique kernel IDs -> {out / (task_key + '.json')}"
    )


@app.command("import-torch")
def import_torch(
    profile: Path = typer.Argument(..., help="torch.profiler Chrome trace (export_chrome_trace)."),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Trace JSON to write (default: PROFILE stem + .trace.json)."
    ),
    name: Optional[str] = typer.Option(None, "--name", help="Trace name."),
    quiet: bool = quiet_option(),
) -> None:
    """Convert a torch.profiler Chrome trace into a kernel trace for `kernel simulate`."""
    from gpuweave.files import prepare_output_file, read_input_text
    from gpuweave.kernel.torch_import import import_chrome_trace

    read_input_text(profile, what="torch.profiler trace")
    if out:
        prepare_output_file(out, field="out")
    with ProgressBar(show_progress(quiet)) as bar:  # a large model's trace is hundreds of MB of JSON
        bar.task(f"import {profile.name}")
        trace, rep = import_chrome_trace(profile, name)
    dest = out or profile.with_suffix(".trace.json")
    trace.save(dest)
    typer.echo(
        f"{rep.kernels} kernels ({rep.with_launch_events} with launch events, {rep.syncs} syncs, "
        f"{rep.missing_dims} without grid/block) -> {dest}"
    )


@app.command("bench")
def bench(
    tasks: int = typer.Option(60, "--tasks", help="High-priority tasks (IV.a-sized run)."),
    mode: str = typer.Option("fikit", "--mode", help="Simulation mode."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Simulator speed in kernel events per second (never asserted, only reported)."""
    from gpuweave.kernel.bench import sim_speed

    r = sim_speed(tasks, mode)
    if as_json:
        print_json({"mode": mode, "tasks": tasks, **r})
        return
    typer.echo(
        f"{mode}: {r['events']} events, {r['kernels']} kernels in {r['seconds']:.3f} s -> "
        f"{r['events_per_s']:,.0f} events/s, {r['kernels_per_s']:,.0f} kernels/s"
    )


@app.command("modes")
def modes(as_json: bool = typer.Option(False, "--json", help=JSON_OPTION_HELP)) -> None:
    """List the registered kernel arbitration modes (--mode of `gpuweave kernel simulate`)."""
    from gpuweave.kernel.modes import MODES

    print_listing(MODES, "kernel arbitration modes (mode: of a simulation config)", as_json)


@app.command("build-shim")
def build_shim(
    out: Path = typer.Option(Path("."), "--out", help="Directory for libfikit_shim.so (created if needed)."),
) -> None:
    """Compile the C LD_PRELOAD shim (kernel-level hook; needs only a C compiler) and print how to use it."""
    from gpuweave.kernel.shim import build_shim as compile_shim
    from gpuweave.kernel.shim import preload_line

    lib = compile_shim(out)
    typer.echo(f"built {lib}")
    typer.echo("run a CUDA program (dynamically linked libcudart) under the scheduler with:")
    typer.echo(f"  {preload_line(lib)}")


@app.command("serve")
def serve(
    port: int = typer.Option(47800, "--port", help="UDP port."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
    preset_name: str = typer.Option("recommended", "--preset", help="recommended | paper_literal | no_feedback"),
    profiles: Optional[Path] = typer.Option(None, "--profiles", help="Directory of {task_key}.json profiles."),
    client_timeout: float = typer.Option(
        30.0, "--client-timeout", help="Seconds of silence before a client is dropped."
    ),
    token: Optional[str] = typer.Option(
        None,
        "--token",
        envvar="FIKIT_TOKEN",
        show_envvar=True,
        help="Shared secret every message must carry (clients: FIKIT_TOKEN); prefer the environment variable, "
        "which other users cannot read in the process list.",
    ),
) -> None:
    """Run the FIKIT scheduler server until interrupted.

    It listens on loopback unless --host names another address (then it warns: anything that reaches the port
    can gate this GPU's launches; use --token). Each pid is bound to the address that registered it.
    """
    import asyncio
    import logging

    from gpuweave.kernel.protocol import check_token
    from gpuweave.kernel.sched import preset

    if not 0 < port < 65536:
        raise InputError(f"port must be 1-65535, got {port}", field="port")
    if token is not None:
        check_token(token)
    if not _is_loopback(host):
        advice = "" if token else "; set --token (or FIKIT_TOKEN) so that only your clients are served"
        typer.echo(
            f"warning: {host} is not a loopback address: every machine that reaches udp port {port} can register, "
            f"launch and unregister{advice}",
            err=True,
        )
    if not client_timeout > 0:
        raise InputError(f"must be a positive number of seconds, got {client_timeout}", field="client_timeout")
    if profiles is not None and not profiles.is_dir():
        raise InputError("expected a directory of {task_key}.json profiles", file=profiles, field="profiles")
    cfg = preset(preset_name)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        asyncio.run(_serve_forever(host, port, cfg, profiles, client_timeout, preset_name, token))
    except OSError as exc:
        raise InputError(f"cannot bind udp://{host}:{port}: {exc.strerror}") from None
    except KeyboardInterrupt:
        typer.echo("stopped")


def _is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost`` counts; other names do not, they may resolve anywhere)."""
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def _serve_forever(
    host: str, port: int, cfg, profiles: Optional[Path], client_timeout: float, name: str, token: Optional[str]
) -> None:
    import asyncio

    from gpuweave.kernel.server import start_server

    srv, transport = await start_server(
        host, port, config=cfg, profile_dir=profiles, client_timeout_s=client_timeout, token=token
    )
    secured = ", token required" if token else ""
    typer.echo(f"FIKIT scheduler on udp://{host}:{port} (preset {name}{secured}); Ctrl-C to stop")
    try:
        await asyncio.Event().wait()
    finally:
        transport.close()
