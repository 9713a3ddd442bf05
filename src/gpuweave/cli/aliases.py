"""The command spellings of earlier releases, kept working as hidden aliases of today's commands.

Each alias is the very same function as its new spelling (same options, same output); it is only left out of
``--help``. OLD_TO_NEW is the one list of them (the tests run both spellings from it).
"""

from __future__ import annotations

import typer

from gpuweave.cli import cluster, kernel, mig, packs

#: old spelling -> new spelling
OLD_TO_NEW = {
    ("simulate",): ("cluster", "simulate"),
    ("policies",): ("cluster", "policies"),
    ("plan", "mig"): ("mig", "plan"),
    ("plan", "packs"): ("packs", "plan"),
    ("plan", "andreas"): ("cluster", "plan", "andreas"),
    ("plan", "hadar"): ("cluster", "plan", "hadar"),
    ("run", "mig"): ("mig", "run"),
    ("run", "packs"): ("packs", "run"),
    ("fikit", "serve"): ("kernel", "serve"),
    ("fikit", "build-shim"): ("kernel", "build-shim"),
}

plan_app = typer.Typer(help="Plan a batch offline and print the schedule.", no_args_is_help=True)
run_app = typer.Typer(help="Execute a planned schedule on real hardware.", no_args_is_help=True)
fikit_app = typer.Typer(help="The FIKIT scheduler server (real path, UDP).", no_args_is_help=True)
plan_app.command("mig")(mig.plan)
plan_app.command("packs")(packs.plan)
plan_app.command("andreas")(cluster.plan_andreas)
plan_app.command("hadar")(cluster.plan_hadar)
run_app.command("mig")(mig.run)
run_app.command("packs")(packs.run)
fikit_app.command("serve")(kernel.serve)
fikit_app.command("build-shim")(kernel.build_shim)


def add_aliases(app: typer.Typer) -> None:
    """Add the old spellings to the root ``app``, hidden from its help."""
    app.command("simulate", hidden=True)(cluster.simulate)
    app.command("policies", hidden=True)(cluster.policies)
    app.add_typer(plan_app, name="plan", hidden=True)
    app.add_typer(run_app, name="run", hidden=True)
    app.add_typer(fikit_app, name="fikit", hidden=True)
