"""``gpuweave testbed up|down|list``: a multi-node test cluster on this machine, one network namespace per node.

The implementation is :mod:`gpuweave.live.testbed`; docs/gangs.md, "Try it", walks through a gang run on one.
"""

from __future__ import annotations

import typer

from gpuweave.cli.output import print_json

NAME = "testbed"

app = typer.Typer(
    help="A multi-node test cluster on this machine: network namespaces on a private bridge (root), optionally "
    "with a Ray head and worker nodes.",
    no_args_is_help=True,
)

NAME_HELP = "The testbed's name (1-6 lower-case letters or digits); its namespaces are gw-NAME-0, gw-NAME-1, ..."


def _usage_lines(bed: object) -> list[str]:
    from gpuweave.live.testbed import Testbed

    assert isinstance(bed, Testbed)
    lines = [
        f"testbed {bed.name}: {len(bed.nodes)} node(s) on {bed.host_addr.rsplit('.', 1)[0]}.0/24 "
        f"(this machine is {bed.host_addr} on bridge {bed.bridge})",
        *(f"  node {i}: namespace {n.namespace}, address {n.addr}" for i, n in enumerate(bed.nodes)),
        "run a node's command: ip netns exec " + bed.nodes[0].namespace + " COMMAND",
        "local executor, one node per namespace (in a run config):",
        "  executor: {kind: local, local: {namespaces: [" + ", ".join(bed.namespaces) + "]}}",
    ]
    if bed.ray_address:
        lines += [
            f"Ray: head on node 0 at {bed.ray_address}; nodes 1..{len(bed.nodes) - 1} offer "
            f"{bed.gpus_per_node} x gpu_type:{bed.gpu_model} each. A Ray driver runs on a Ray node, so start runs "
            "from the head's namespace:",
            f"  ip netns exec {bed.nodes[0].namespace} gpuweave cluster run RUN.yaml --executor ray "
            f"--address {bed.ray_address} --out OUT",
        ]
    if bed.slurm_conf:
        names = ", ".join(f"gw{i}" for i in range(len(bed.nodes) - 1))
        lines += [
            f"Slurm: control plane on node 0, slurmd {names} on nodes 1..{len(bed.nodes) - 1} (4 V100 + 2 K80 fake "
            "GPUs each, typed GRES). From this shell:",
            f"  export SLURM_CONF={bed.slurm_conf}",
            "  sinfo -N",
            "  gpuweave cluster run RUN.yaml --executor slurm --out OUT   # cluster nodes gw0-v100, gw1-v100, ...",
        ]
    lines.append(f"remove it: gpuweave testbed down --name {bed.name}")
    return lines


@app.command("up")
def up(
    nodes: int = typer.Option(3, "--nodes", min=1, help="Nodes (network namespaces)."),
    name: str = typer.Option("tb", "--name", help=NAME_HELP),
    ray: bool = typer.Option(False, "--ray", help="Start a Ray head on node 0 and a Ray worker node on the others."),
    slurm: bool = typer.Option(
        False, "--slurm", help="Start Slurm's control plane on node 0 and a slurmd on the others (Debian's Slurm)."
    ),
    gpus_per_node: int = typer.Option(2, "--gpus-per-node", min=1, help="GPUs each Ray worker node offers (emulated)."),
    gpu_model: str = typer.Option("V100", "--gpu-model", help="GPU model of the Ray worker nodes' gpu_type resource."),
    as_json: bool = typer.Option(False, "--json", help="Print the testbed's record as JSON."),
) -> None:
    """Make a testbed and return; it stays until `gpuweave testbed down`. Needs root (ip netns).

    Each node is a network namespace with one veth link to a bridge on this machine, on a private 10.213.X.0/24
    subnet routed nowhere. Prints each node's address and how to run on it (local executor or Ray)."""
    from gpuweave.live import testbed

    bed = testbed.up(name, nodes, ray=ray, slurm=slurm, gpus_per_node=gpus_per_node, gpu_model=gpu_model)
    if as_json:
        print_json(bed.describe())
        return
    for line in _usage_lines(bed):
        typer.echo(line)


@app.command("down")
def down(
    name: str = typer.Option("tb", "--name", help=NAME_HELP),
    all_: bool = typer.Option(False, "--all", help="Remove every testbed on this machine."),
) -> None:
    """Remove a testbed: every process in its namespaces (its Ray included), the namespaces, the bridge."""
    from gpuweave.live import testbed

    targets = testbed.names() if all_ else [name]
    for target in targets:
        found = testbed.down(target)
        typer.echo(f"testbed {target}: {'removed' if found else 'none'}")


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print every testbed's record as JSON.")) -> None:
    """The testbeds on this machine."""
    from gpuweave.live import testbed

    beds = [b for b in map(testbed.load, testbed.names()) if b is not None]
    if as_json:
        print_json([b.describe() for b in beds])
        return
    if not beds:
        typer.echo("no testbeds (gpuweave testbed up makes one)")
    for bed in beds:
        ray = f", Ray at {bed.ray_address}" if bed.ray_address else ""
        typer.echo(f"{bed.name}: {len(bed.nodes)} node(s), {', '.join(n.addr for n in bed.nodes)}{ray}")
