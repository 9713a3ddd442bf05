"""Commands ``gpuweave kernel simulate|profile|import-torch|bench`` and ``gpuweave fikit serve|build-shim``.

Simulation config (YAML or JSON)::

    mode: fikit                 # exclusive | share_timeslice | share_fifo | share_rr_kernel | fikit
    quantum_ms: 2.0             # time slice of the default-sharing model
    device: share_timeslice     # arbitration under fikit
    preset: recommended         # recommended | paper_literal | no_feedback
    jitter: 0.05
    ipc_rtt_ms: 0.0
    seed: 0
    services:
      - {name: A, trace: canonical:HI, priority: 0, workload: {kind: back_to_back, n: 20}}
      - {name: B, trace: canonical:LO, priority: 1, workload: {kind: back_to_back, n: null}}

``trace`` is ``canonical:HI|LO|LIGHT``, ``model:<Table 1 model>`` (synthetic) or a trace JSON path
(relative to the config file). Heavy imports stay inside the command bodies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def _load_config(path: Path) -> dict:
    from gpuweave.errors import InputError
    from gpuweave.files import read_input_text

    text = read_input_text(path, what="config file")
    try:
        if path.suffix.lower() == ".json":
            import json

            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # yaml/json parse errors → one line
        detail = " ".join(str(exc).split())[:200]
        raise InputError(f"cannot parse config ({type(exc).__name__}: {detail})", file=path) from None
    if not isinstance(data, dict):
        raise InputError("config must be a mapping", file=path)
    return data


def build_simulation(data: dict, base: Path | None = None, file: str | None = None):
    """(services, SimConfig) from a parsed config mapping; InputError naming the field on bad input."""
    from gpuweave.errors import InputError
    from gpuweave.kernel.sched import preset
    from gpuweave.kernel.sim import Service, SimConfig, Workload
    from gpuweave.kernel.traces import resolve_trace

    known = {
        "mode",
        "quantum_ms",
        "device",
        "preset",
        "jitter",
        "ipc_rtt_ms",
        "seed",
        "services",
        "launch_overhead_ms",
        "profiling_runs",
        "horizon_ms",
        "stop_when",
        "holder_grace_ms",
    }
    extra = set(data) - known
    if extra:
        raise InputError(f"unknown config keys: {', '.join(sorted(extra))}", file=file)
    svcs = data.get("services")
    if not isinstance(svcs, list) or not svcs:
        raise InputError("config needs a non-empty list 'services'", file=file, field="services")
    services = []
    for row, s in enumerate(svcs, 1):
        if not isinstance(s, dict):
            raise InputError("service must be a mapping", file=file, row=row)
        for req in ("name", "trace", "priority"):
            if req not in s:
                raise InputError(f"service needs '{req}'", file=file, row=row, field=req)
        wl = s.get("workload", {"kind": "back_to_back", "n": 1})
        if not isinstance(wl, dict):
            raise InputError("workload must be a mapping", file=file, row=row, field="workload")
        try:
            kind = wl.get("kind", "back_to_back")
            if kind == "times":
                workload = Workload.at_times([float(x) for x in wl.get("times", [])])
            else:
                workload = Workload(
                    kind, wl.get("n", 1), float(wl.get("period_ms", 0.0)), float(wl.get("start_ms", 0.0))
                )
            services.append(Service(str(s["name"]), resolve_trace(str(s["trace"]), base=base), s["priority"], workload))
        except InputError as exc:
            if exc.file:
                raise
            raise InputError(exc.message, file=file, row=row, field=exc.field) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad workload ({exc})", file=file, row=row, field="workload") from None
    try:
        over = {}
        if "holder_grace_ms" in data:
            over["holder_grace"] = float(data["holder_grace_ms"])
        cfg = SimConfig(
            mode=data.get("mode", "fikit"),
            quantum=float(data.get("quantum_ms", 2.0)),
            device=data.get("device", "share_timeslice"),
            scheduler=preset(data.get("preset", "recommended"), **over),
            jitter=float(data.get("jitter", 0.05)),
            ipc_rtt=float(data.get("ipc_rtt_ms", 0.0)),
            launch_overhead=float(data.get("launch_overhead_ms", 0.005)),
            seed=int(data.get("seed", 0)),
            profiling_runs=int(data.get("profiling_runs", 20)),
            horizon=float(data.get("horizon_ms", float("inf"))),
            stop_when=tuple(data["stop_when"]) if data.get("stop_when") else None,
        )
    except InputError as exc:
        raise InputError(exc.message, file=file, field=exc.field) from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad config value ({exc})", file=file) from None
    return services, cfg


def register(cli) -> None:
    kernel_app = typer.Typer(
        help="Kernel-level GPU sharing: simulate FIKIT and baselines, build profiles, import traces.",
        no_args_is_help=True,
    )
    fikit_app = typer.Typer(help="The FIKIT scheduler server (real path, UDP).", no_args_is_help=True)
    cli.app.add_typer(kernel_app, name="kernel")
    cli.app.add_typer(fikit_app, name="fikit")

    @kernel_app.command("simulate")
    def simulate_cmd(
        config: Path = typer.Argument(..., help="Simulation config (YAML/JSON): services, priorities, traces, mode."),
        mode: Optional[str] = typer.Option(None, "--mode", help="Override the config's mode."),
        out: Optional[Path] = typer.Option(
            None,
            "--out",
            help="FILE.csv: per-task JCTs; any other path: a result directory (tasks.csv, services.csv, summary.json).",
        ),
        timeline: Optional[Path] = typer.Option(
            None, "--timeline", help="Write a timeline PNG of the first 20 ms here."
        ),
    ) -> None:
        """Simulate services sharing one GPU and print per-service JCT statistics."""
        from dataclasses import replace

        from rich.console import Console
        from rich.table import Table

        from gpuweave.files import IMAGE_SUFFIXES, prepare_output_dir, prepare_output_file
        from gpuweave.kernel.experiments import share_label
        from gpuweave.kernel.results import write_kernel_result, write_tasks_csv
        from gpuweave.kernel.sim import simulate

        data = _load_config(config)
        # Check the output paths before simulating, so a bad path costs nothing.
        out_csv = out is not None and out.suffix.lower() == ".csv"
        if out_csv:
            prepare_output_file(out, field="out", suffixes=(".csv",))
        elif out:
            prepare_output_dir(out, field="out", create=False)
        if timeline:
            prepare_output_file(timeline, field="timeline", suffixes=IMAGE_SUFFIXES)
        if mode:
            data["mode"] = mode
        services, cfg = build_simulation(data, base=config.parent, file=str(config))
        if timeline:
            cfg = replace(cfg, record_kernels=True, record_window=(0.0, 20.0))
        res = simulate(services, cfg)
        table = Table(title=f"{cfg.mode} (sharing model: {share_label(cfg)})")
        for col in ("service", "priority", "tasks", "mean JCT ms", "std ms", "CV", "busy share"):
            table.add_column(col)
        for s in services:
            n = len(res.tasks[s.name])
            table.add_row(
                s.name,
                str(s.priority),
                str(n),
                f"{res.mean_jct(s.name):.3f}",
                f"{res.std_jct(s.name):.3f}",
                f"{res.cv_jct(s.name):.4f}" if n else "",
                f"{res.service_busy[s.name] / max(res.end_time, 1e-12):.3f}",
            )
        console = Console()
        console.print(table)
        console.print(
            f"simulated {res.end_time:.1f} ms, {res.kernels_run} kernels, device busy {res.busy_fraction():.3f}"
            + (f", fillers {res.core_stats.fillers}" if res.core_stats else "")
        )
        if out:
            written = write_tasks_csv(res, services, out) if out_csv else write_kernel_result(out, res, services, data)
            console.print(f"wrote {written}")
        if timeline:
            from gpuweave.kernel.timeline import plot_timelines

            plot_timelines([(cfg.mode, res.kernels)], (0.0, 20.0), timeline)
            console.print(f"wrote {timeline}")

    @kernel_app.command("profile")
    def profile_cmd(
        traces: list[Path] = typer.Argument(..., help="Recorded runs of one task (trace JSON files, one run each)."),
        task_key: str = typer.Option(..., "--task-key", help="Task key the profile is stored under."),
        out: Path = typer.Option(Path("."), "--out", help="Directory for {task_key}.json."),
    ) -> None:
        """Build SK/SG (spec §1.5) from T recorded runs and save the profile JSON."""
        from gpuweave.files import prepare_output_dir, read_input_text
        from gpuweave.kernel.profile import ProfileBuilder
        from gpuweave.kernel.traces import Trace

        for path in traces:
            read_input_text(path, what="trace file")
        prepare_output_dir(out, field="out")
        b = ProfileBuilder()
        for path in traces:
            tr = Trace.load(path)
            # a recorded run as a trace: gap after kernel i = host time before kernel i+1 (closed loop)
            b.add_run([o.kid for o in tr.ops], [o.dur for o in tr.ops], [o.cpu_before for o in tr.ops[1:]])
        prof = b.build(task_key)
        out.mkdir(parents=True, exist_ok=True)
        prof.save(out / f"{task_key}.json")
        typer.echo(
            f"profile {task_key}: {b.runs} runs, {prof.unique_ids} unique kernel IDs -> {out / (task_key + '.json')}"
        )

    @kernel_app.command("import-torch")
    def import_torch_cmd(
        profile: Path = typer.Argument(..., help="torch.profiler Chrome trace (export_chrome_trace)."),
        out: Optional[Path] = typer.Option(
            None, "--out", help="Trace JSON to write (default: PROFILE stem + .trace.json)."
        ),
        name: Optional[str] = typer.Option(None, "--name", help="Trace name."),
    ) -> None:
        """Convert a torch.profiler Chrome trace into a kernel trace for `kernel simulate`."""
        from gpuweave.files import prepare_output_file, read_input_text
        from gpuweave.kernel.torch_import import import_chrome_trace

        read_input_text(profile, what="torch.profiler trace")
        if out:
            prepare_output_file(out, field="out")
        trace, rep = import_chrome_trace(profile, name)
        dest = out or profile.with_suffix(".trace.json")
        trace.save(dest)
        typer.echo(
            f"{rep.kernels} kernels ({rep.with_launch_events} with launch events, {rep.syncs} syncs, "
            f"{rep.missing_dims} without grid/block) -> {dest}"
        )

    trace_app = getattr(cli, "trace", None)
    if trace_app is not None:  # the same command as `gpuweave trace import-torch`
        trace_app.command("import-torch")(import_torch_cmd)

    @kernel_app.command("bench")
    def bench_cmd(
        tasks: int = typer.Option(60, "--tasks", help="High-priority tasks (IV.a-sized run)."),
        mode: str = typer.Option("fikit", "--mode", help="Simulation mode."),
    ) -> None:
        """Simulator speed in kernel events per second (never asserted, only reported)."""
        from gpuweave.kernel.bench import sim_speed

        r = sim_speed(tasks, mode)
        typer.echo(
            f"{mode}: {r['events']} events, {r['kernels']} kernels in {r['seconds']:.3f} s -> "
            f"{r['events_per_s']:,.0f} events/s, {r['kernels_per_s']:,.0f} kernels/s"
        )

    @fikit_app.command("build-shim")
    def build_shim_cmd(
        out: Path = typer.Option(Path("."), "--out", help="Directory for libfikit_shim.so (created if needed)."),
    ) -> None:
        """Compile the C LD_PRELOAD shim (kernel-level hook; needs only a C compiler) and print how to use it."""
        from gpuweave.kernel.shim import build_shim, preload_line

        lib = build_shim(out)
        typer.echo(f"built {lib}")
        typer.echo("run a CUDA program (dynamically linked libcudart) under the scheduler with:")
        typer.echo(f"  {preload_line(lib)}")

    @fikit_app.command("serve")
    def serve_cmd(
        port: int = typer.Option(47800, "--port", help="UDP port."),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
        preset_name: str = typer.Option("recommended", "--preset", help="recommended | paper_literal | no_feedback"),
        profiles: Optional[Path] = typer.Option(None, "--profiles", help="Directory of {task_key}.json profiles."),
        client_timeout: float = typer.Option(
            30.0, "--client-timeout", help="Seconds of silence before a client is dropped."
        ),
    ) -> None:
        """Run the FIKIT scheduler server until interrupted."""
        import asyncio
        import logging

        from gpuweave.errors import InputError
        from gpuweave.kernel.sched import preset
        from gpuweave.kernel.server import start_server

        if not 0 < port < 65536:
            raise InputError(f"port must be 1-65535, got {port}", field="port")
        if not client_timeout > 0:
            raise InputError(f"must be a positive number of seconds, got {client_timeout}", field="client_timeout")
        if profiles is not None and not profiles.is_dir():
            raise InputError("expected a directory of {task_key}.json profiles", file=profiles, field="profiles")
        cfg = preset(preset_name)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

        async def main() -> None:
            srv, transport = await start_server(
                host, port, config=cfg, profile_dir=profiles, client_timeout_s=client_timeout
            )
            typer.echo(f"FIKIT scheduler on udp://{host}:{port} (preset {preset_name}); Ctrl-C to stop")
            try:
                await asyncio.Event().wait()
            finally:
                transport.close()

        try:
            asyncio.run(main())
        except OSError as exc:
            raise InputError(f"cannot bind udp://{host}:{port}: {exc.strerror}") from None
        except KeyboardInterrupt:
            typer.echo("stopped")
