"""``gpuweave slurm sandbox start|status|stop``: a throwaway Slurm on this machine to try the ``slurm`` executor.

The daemons (munged, MariaDB + slurmdbd, slurmctld, one slurmd with 4 V100 + 2 K80 fake GPUs, all on 127.0.0.1)
keep running after ``start`` returns; their process ids are in ``DIR/sandbox.json``, which ``status`` and ``stop``
read. The implementation is :mod:`gpuweave.live.slurm_sandbox`; docs/slurm.md, "Try it", walks through a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from gpuweave.cli.output import print_json

if TYPE_CHECKING:
    from gpuweave.live.slurm_sandbox import SandboxState

NAME = "slurm"
DEFAULT_DIR = Path("gpuweave-out/slurm-sandbox")
TRY_CONFIG = "examples/slurm/try.yaml"
TRY_OUT = "gpuweave-out/slurm-try"

app = typer.Typer(help="Slurm helpers: a throwaway local Slurm to try `--executor slurm` on.", no_args_is_help=True)
sandbox_app = typer.Typer(
    help="A throwaway Slurm on this machine (root; Debian's slurm-wlm, slurmdbd, munge, mariadb-server).",
    no_args_is_help=True,
)
app.add_typer(sandbox_app, name="sandbox")

DIR_HELP = "The sandbox's folder: its config, state, logs and sandbox.json (the daemons' process ids)."


def _where(root: Path) -> str:
    """The --dir to print in a command: as the user would type it from here."""
    try:
        shown = root.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = root.resolve()
    return str(shown) if str(shown) != "." else "."


def _usage_lines(state: SandboxState, root: Path) -> list[str]:
    gpus = ", ".join(f"{n} x {t.upper()}" for t, n in state.gpus.items())
    where = _where(root)
    conf = state.env["SLURM_CONF"]
    return [
        f"Slurm sandbox in {state.root}: node {state.node} ({gpus} as typed GRES), partition {state.partition}, "
        "everything on 127.0.0.1",
        "  daemons: " + ", ".join(f"{d.name} {d.pid}" for d in state.daemons),
        "use it from this shell:",
        f"  export SLURM_CONF={conf}",
        "  sinfo",
        f"  gpuweave cluster run {TRY_CONFIG} --executor slurm --out {TRY_OUT}",
        f"stop it: gpuweave slurm sandbox stop --dir {where}",
    ]


@sandbox_app.command("start")
def start(
    dir: Path = typer.Option(DEFAULT_DIR, "--dir", help=DIR_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the sandbox's state (dir, env, daemons) as JSON."),
) -> None:
    """Start a throwaway Slurm in DIR and return; the daemons run on until `gpuweave slurm sandbox stop`.

    Needs root (slurmd starts jobs as their user). A second start on a running sandbox says so, starts nothing.
    Prints the environment to export (SLURM_CONF) and a `gpuweave cluster run ... --executor slurm` line."""
    from gpuweave.live.slurm_sandbox import start_detached

    try:
        state, already = start_detached(dir)
    except RuntimeError as exc:  # a daemon that did not come up: its logs are in DIR/log
        typer.echo("error: " + " ".join(str(exc).split()), err=True)
        raise typer.Exit(1) from None
    if as_json:
        print_json({**state.to_json(), "state": "running", "already_running": already})
        return
    if already:
        typer.echo(f"a sandbox already runs in {state.root}; started nothing")
    for line in _usage_lines(state, dir):
        typer.echo(line)


def _status(root: Path) -> tuple[str, SandboxState | None]:
    from gpuweave.live.slurm_sandbox import read_state

    state = read_state(root) if root.is_dir() else None
    if state is None:
        return "none", None
    running = state.running()
    word = "running" if len(running) == len(state.daemons) else "partly running" if running else "stopped"
    return word, state


@sandbox_app.command("status")
def status(
    dir: Path = typer.Option(DEFAULT_DIR, "--dir", help=DIR_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the state and each daemon as JSON."),
) -> None:
    """Say whether the sandbox in DIR runs, and each daemon's process id: running | partly running | stopped | none."""
    word, state = _status(dir)
    if as_json:
        if state is None:
            print_json({"dir": str(dir.resolve()), "state": word, "daemons": []})
            return
        data = state.to_json()
        live = {d.pid for d in state.running()}
        for entry in data["daemons"]:
            entry["running"] = entry["pid"] in live
        print_json({**data, "state": word})
        return
    if state is None:
        typer.echo(f"no sandbox in {dir}: start one with `gpuweave slurm sandbox start --dir {_where(dir)}`")
        return
    typer.echo(f"sandbox in {state.root}: {word}")
    running = state.running()
    for d in state.daemons:
        typer.echo(f"  {d.name:<10} pid {d.pid:<8} {'running' if d in running else 'exited'}")
    if running:
        typer.echo(f"  export SLURM_CONF={state.env['SLURM_CONF']}")


@sandbox_app.command("stop")
def stop(dir: Path = typer.Option(DEFAULT_DIR, "--dir", help=DIR_HELP)) -> None:
    """Cancel the sandbox's jobs and end every daemon it started (SIGTERM, SIGKILL after 15 s); removes no file.

    Stopping a stopped sandbox says so and does nothing."""
    from gpuweave.errors import InputError
    from gpuweave.live.slurm_sandbox import read_state, stop_recorded

    if not dir.is_dir():
        raise InputError(f"no folder {dir}: no sandbox was started there, nothing to stop")
    if read_state(dir) is None:
        typer.echo(f"no sandbox in {dir} (no sandbox.json): nothing to stop")
        return
    try:
        ended = stop_recorded(dir)
    except (RuntimeError, PermissionError) as exc:
        typer.echo("error: " + " ".join(str(exc).split()), err=True)
        raise typer.Exit(1) from None
    if not ended:
        typer.echo(f"the sandbox in {dir} is not running: nothing to stop")
        return
    typer.echo(f"stopped the sandbox in {dir.resolve()}: " + ", ".join(f"{d.name} {d.pid}" for d in ended))


@app.command("advise")
def advise(
    policy: str = typer.Option(..., "--policy", "-p", help="The policy whose order Slurm's pending GPU jobs get."),
    policy_option: list[str] = typer.Option([], "--policy-option", "-O", help="Policy option KEY=VALUE (repeat)."),
    mode: str = typer.Option(
        "priority",
        "--mode",
        help="priority: set each ranked job's priority (Slurm still backfills); hold: also hold every job the "
        "policy would not start now (its order exactly).",
    ),
    partition: Optional[str] = typer.Option(None, "--partition", help="Only this partition's nodes and jobs."),
    interval: float = typer.Option(5.0, "--interval", min=0.1, max=86400, help="Seconds between rounds."),
    rounds: int = typer.Option(0, "--rounds", min=0, help="Stop after this many rounds (0: until stopped)."),
    until_idle: bool = typer.Option(False, "--until-idle", help="Stop once no GPU job is pending or running."),
    gpu_map: list[str] = typer.Option([], "--gpu-map", help="Slurm GPU type=catalog model, e.g. a6000=A10 (repeat)."),
    out: Path = typer.Option(Path("gpuweave-out/slurm-advise"), "--out", help="advice.csv and held.json go here."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per round on standard output."),
) -> None:
    """Advisor mode: order Slurm's own pending GPU jobs under a gpuweave policy; launch nothing.

    Every round reads squeue and scontrol, projects the queue under the policy (each job runs for its time
    limit) and sets the ranked jobs' priorities (and holds, in hold mode) with scontrol; Slurm keeps placing,
    backfilling and accounting. Needs a Slurm operator or admin (scontrol update Priority). Ctrl-C, SIGTERM and
    SIGHUP release every job it holds. docs/slurm.md, "Advisor mode"."""
    import json as jsonlib
    import signal
    import time

    from gpuweave.cli.cluster import parse_policy_options
    from gpuweave.cluster.policies import make_policy
    from gpuweave.live.slurm_advisor import SlurmAdvisor
    from gpuweave.workload.traces.slurm_nodes import parse_gpu_map

    options: dict[str, Any] = parse_policy_options(policy_option)
    advisor = SlurmAdvisor(
        lambda: make_policy(policy, **options), out, mode=mode, partition=partition, gpu_map=parse_gpu_map(gpu_map)
    )

    def _stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    try:
        while True:
            result = advisor.round()
            if as_json:
                typer.echo(jsonlib.dumps(result.to_json()))
            else:
                r = result.ranking
                typer.echo(
                    f"round {result.round}: {len(r.order)} ranked, {len(r.starts_now)} to start now, "
                    f"{result.changed} priorities set, {result.held} held"
                    + (f", {len(r.would_preempt)} the policy would preempt (not done)" if r.would_preempt else "")
                    + (f", {len(r.unranked)} keep Slurm's order" if r.unranked else "")
                    + f" ({result.seconds:.2f} s)"
                )
            if (rounds and result.round >= rounds) or (until_idle and result.idle):
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    finally:
        released = advisor.close()
        if released and not as_json:
            typer.echo(f"released the {released} job(s) it held")
