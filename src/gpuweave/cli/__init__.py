"""The ``gpuweave`` command line: one module per command group, commands as module-level functions.

Grains: ``cluster``, ``mig``, ``packs``, ``kernel`` (each with its ``plan``/``simulate``/``run`` and a registry
listing: ``policies``, ``algos``, ``modes``). Cross-cutting groups: ``trace``, ``repro``, ``crosscheck``, ``sweep``,
``report``, ``bench``, ``demo``, ``gpus``, ``slurm`` (a throwaway local Slurm); the service: ``serve`` and its
clients ``submit``, ``jobs``, ``cancel``, ``nodes``. The spellings of earlier releases (``simulate``, ``policies``,
``plan mig|packs|andreas|hadar``, ``run mig|packs``, ``fikit serve|build-shim``) stay as hidden aliases of the same
functions (:mod:`gpuweave.cli.aliases`). This package is the top layer: it only parses options, calls the library
and prints; heavy imports stay inside the command bodies so that ``gpuweave --help`` is instant.

:func:`main` is the contract with users: bad input -- an :class:`~gpuweave.errors.InputError` from a reader, an
option click cannot parse, input over a :mod:`gpuweave.limits` limit, or input so large or deep that Python
runs out of memory or recursion -- is one line on stderr starting ``error:`` and exit code 2, never a
traceback. ``gpuweave --limit NAME=VALUE`` raises a limit for one command (``gpuweave limits`` lists them).
"""

from __future__ import annotations

import errno
import sys
from typing import Optional

import typer

from gpuweave import __version__

# Every command module is imported to build the app, so `gpuweave --help` pays for whatever they import at the top:
# they import the library inside their command bodies instead, on purpose (keep it so).
from gpuweave.cli import (
    aliases,
    bench,
    client,
    cluster,
    crosscheck,
    demo,
    gpus,
    kernel,
    limits,
    mig,
    packs,
    report,
    repro,
    serve,
    slurm,
    sweep,
    testbed,
    trace,
)
from gpuweave.errors import InputError
from gpuweave.limits import limits_help

try:  # typer >= 0.20 carries its own copy of click; older versions use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors  # type: ignore[no-redef]  # the same module, from click

app = typer.Typer(
    name="gpuweave",
    help="Plan, compare and run GPU schedulers: MIG slices, kernels, packs and heterogeneous clusters.",
    epilog=limits_help(),
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
    limit: Optional[list[str]] = typer.Option(
        None,
        "--limit",
        metavar="NAME=VALUE",
        help="Raise (or lower) an input limit for this command, e.g. --limit trace_jobs=5000000; repeatable. "
        "`gpuweave limits` lists them.",
    ),
) -> None:
    """gpuweave: decide where and when GPU work runs."""
    if limit:
        from gpuweave.limits import set_overrides

        set_overrides(limit)


for _group in (cluster, mig, packs, kernel, trace, repro, bench, serve, slurm, testbed):
    app.add_typer(_group.app, name=_group.NAME)
for _single in (sweep, report, demo, gpus, crosscheck, limits):
    app.command(_single.NAME)(_single.command)
for _name, _command in client.COMMANDS.items():
    app.command(_name)(_command)
aliases.add_aliases(app)


def _error(message: str) -> None:
    typer.echo("error: " + " ".join(str(message).split()), err=True)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default: ``sys.argv[1:]``) and return the exit code; bad input is one line."""
    try:
        result = app(args=argv, prog_name="gpuweave", standalone_mode=False)
    except InputError as exc:
        _error(exc.one_line())
        return 2
    except click_errors.NoArgsIsHelpError as exc:  # `gpuweave mig`: the group's help, as click would
        from typer import rich_utils

        rich_utils.rich_format_error(exc)
        return exc.exit_code
    except click_errors.UsageError as exc:  # an option click cannot parse: one line, not a boxed usage message
        where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        _error(exc.format_message() + where)
        return 2
    except click_errors.ClickException as exc:
        _error(exc.format_message())
        return exc.exit_code
    except typer.Abort:
        _error("aborted")
        return 1
    except RecursionError:  # a reader missed a nesting check: still no traceback
        _error("the input is nested too deeply to read (see the limit json_depth in `gpuweave limits`)")
        return 2
    except MemoryError:
        _error("out of memory: the input is too large for this machine (see `gpuweave limits`)")
        return 2
    except OSError as exc:  # a path given on the command line that no file call accepts
        if exc.errno != errno.ENAMETOOLONG:
            raise
        _error(f"{exc.filename or 'a path'}: file name too long"[:300])
        return 2
    return result if isinstance(result, int) else 0


def main() -> None:
    """Console entry point: user errors become one line and exit code 2."""
    sys.exit(run())
