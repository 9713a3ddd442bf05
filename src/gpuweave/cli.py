"""The ``gpuweave`` command line.

Each area of the package owns its commands in its own ``cli`` module with a ``register(cli)``
function; this file only builds the top-level app and the shared groups (``plan``, ``run``) and
turns :class:`~gpuweave.errors.InputError` into one line on stderr with exit code 2.
Heavy imports stay inside the commands so that ``gpuweave --help`` is instant.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import typer

from gpuweave import __version__
from gpuweave.errors import InputError
from gpuweave.plugins import import_if_present

app = typer.Typer(
    name="gpuweave",
    help="Plan, compare and run GPU schedulers: MIG slices, kernels, packs and heterogeneous clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
plan_app = typer.Typer(help="Plan a batch offline and print the schedule.", no_args_is_help=True)
run_app = typer.Typer(help="Execute a planned schedule on real hardware.", no_args_is_help=True)
app.add_typer(plan_app, name="plan")
app.add_typer(run_app, name="run")

# The modules that add commands. Each has `register(cli)`, where cli has .app, .plan and .run.
COMMAND_MODULES = [
    "gpuweave.hardware.cli",
    "gpuweave.live.cli",
    "gpuweave.workload.traces.cli",
    "gpuweave.cluster.cli",
    "gpuweave.andreas.cli",
    "gpuweave.cluster.hadar_cli",
    "gpuweave.report.cli",
    "gpuweave.sweep.cli",
    "gpuweave.repro.cli",
    "gpuweave.mig.cli",
    "gpuweave.packs.cli",
    "gpuweave.kernel.cli",
    "gpuweave.bench",
    "gpuweave.demo",
]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"gpuweave {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """gpuweave: decide where and when GPU work runs."""


def _register_all() -> None:
    cli = SimpleNamespace(app=app, plan=plan_app, run=run_app)
    for name in COMMAND_MODULES:
        module = import_if_present(name)
        if module is not None:
            module.register(cli)


_register_all()


def main() -> None:
    """Console entry point: user errors become one line and exit code 2."""
    try:
        app()
    except InputError as exc:
        typer.echo(f"error: {exc.one_line()}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
