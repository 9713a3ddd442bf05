"""The ``gpuweave`` command line: one module per command group, commands as module-level functions.

Grains: ``cluster``, ``mig``, ``packs``, ``kernel`` (each with its ``plan``/``simulate``/``run`` and a registry
listing: ``policies``, ``algos``, ``modes``). Cross-cutting groups: ``trace``, ``repro``, ``crosscheck``, ``sweep``,
``report``, ``bench``, ``demo``, ``gpus``; the service: ``serve`` and its clients ``submit``, ``jobs``, ``cancel``,
``nodes``. The spellings of earlier releases (``simulate``, ``policies``,
``plan mig|packs|andreas|hadar``, ``run mig|packs``, ``fikit serve|build-shim``) stay as hidden aliases of the same
functions (:mod:`gpuweave.cli.aliases`). This package is the top layer: it only parses options, calls the library
and prints; heavy imports stay inside the command bodies so that ``gpuweave --help`` is instant.
:class:`~gpuweave.errors.InputError` becomes one line on stderr and exit code 2 (:func:`main`).
"""

from __future__ import annotations

import sys

import typer

from gpuweave import __version__
from gpuweave.cli import (
    aliases,
    bench,
    client,
    cluster,
    crosscheck,
    demo,
    gpus,
    kernel,
    mig,
    packs,
    report,
    repro,
    serve,
    sweep,
    trace,
)
from gpuweave.errors import InputError

app = typer.Typer(
    name="gpuweave",
    help="Plan, compare and run GPU schedulers: MIG slices, kernels, packs and heterogeneous clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


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


for _group in (cluster, mig, packs, kernel, trace, repro, bench, serve):
    app.add_typer(_group.app, name=_group.NAME)
for _single in (sweep, report, demo, gpus, crosscheck):
    app.command(_single.NAME)(_single.command)
for _name, _command in client.COMMANDS.items():
    app.command(_name)(_command)
aliases.add_aliases(app)


def main() -> None:
    """Console entry point: user errors become one line and exit code 2."""
    try:
        app()
    except InputError as exc:
        typer.echo(f"error: {exc.one_line()}", err=True)
        sys.exit(2)
