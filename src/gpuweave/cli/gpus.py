"""``gpuweave gpus [NAME] [--partitions] [--tree]``: the GPU catalog, one model, its MIG partitions and tree."""

from __future__ import annotations

from typing import Optional

import typer

from gpuweave.tables import print_table

NAME = "gpus"


def command(
    name: Optional[str] = typer.Argument(None, help="A GPU model or alias (e.g. A100, h100, k80)."),
    show_partitions: bool = typer.Option(False, "--partitions", help="List the GPU's maximal MIG partitions."),
    show_tree: bool = typer.Option(False, "--tree", help="Draw the GPU's MIG repartitioning tree (FAR)."),
) -> None:
    """Print the GPU catalog, or one model with its MIG partitions / repartitioning tree."""
    from rich.console import Console

    from gpuweave.errors import InputError
    from gpuweave.hardware.catalog import get_gpu

    console = Console()
    if name is None:
        if show_partitions or show_tree:
            raise InputError("--partitions and --tree need a GPU name, e.g. `gpuweave gpus A100 --partitions`")
        print_table(_catalog_table(), console)
        return
    gpu = get_gpu(name)
    if not (show_partitions or show_tree):
        print_table(_model_table(gpu), console)
        return
    if gpu.mig is None:
        raise InputError(f"GPU {gpu.name} has no MIG, so no partitions or tree", field="gpu")
    if show_partitions:
        print_table(_partitions_table(gpu), console)
    if show_tree:
        from gpuweave.hardware.mig import repartition_tree

        tree = repartition_tree(gpu.mig)
        console.print(
            f"{gpu.name} repartitioning tree (geometry {gpu.mig.name}, {tree.non_leaf_count()} non-leaf nodes):"
        )
        for line in tree.render():
            console.print(line, markup=False, highlight=False)


def _catalog_table():
    from rich.table import Table

    from gpuweave.hardware.catalog import all_gpus

    table = Table(title="GPU catalog")
    for col, justify in (
        ("name", "left"),
        ("memory GB", "right"),
        ("idle W", "right"),
        ("max W", "right"),
        ("MIG slices", "right"),
        ("aliases", "left"),
    ):
        table.add_column(col, justify=justify)
    for gpu in all_gpus().values():
        table.add_row(
            gpu.name,
            f"{gpu.memory_gb:g}",
            f"{gpu.power_idle_w:g}",
            f"{gpu.power_max_w:g}",
            str(gpu.mig_slices) if gpu.mig else "-",
            ", ".join(gpu.aliases),
        )
    return table


def _model_table(gpu):
    from rich.table import Table

    table = Table(title=f"{gpu.name} ({gpu.form_factor})" if gpu.form_factor else gpu.name)
    table.add_column("field")
    table.add_column("value", justify="right")
    table.add_column("source")
    rows = [("memory_gb", gpu.memory_gb), ("power_idle_w", gpu.power_idle_w), ("power_max_w", gpu.power_max_w)]
    if gpu.mig_slice_memory_gb is not None:
        rows.append(("mig_slice_memory_gb", gpu.mig_slice_memory_gb))
    for key, value in rows:
        table.add_row(key, f"{value:g}", gpu.sources.get(key, ""))
    if gpu.mig is not None:
        geo = gpu.mig
        table.add_row(
            "mig", f"{geo.name}: {geo.num_slices} slices, sizes {list(geo.sizes)}", gpu.sources.get("mig", geo.note)
        )
        for size in geo.sizes:
            table.add_row(
                f"create/destroy {size}g (s)",
                f"{geo.create_time(size):g} / {geo.destroy_time(size):g}",
                f"{geo.sources.get('create_s', '')}; {geo.sources.get('destroy_s', '')}",
            )
    return table


def _partitions_table(gpu):
    from rich.table import Table

    from gpuweave.hardware.mig import partition_label, partitions

    def fmt(values) -> str:
        return "{" + ",".join(f"S{v}" for v in sorted(values)) + "}"

    parts = partitions(gpu.mig)
    table = Table(title=f"{gpu.name}: {len(parts)} maximal MIG partitions (FAR Fig. 1 numbering)")
    for col in ("#", "partition", "instances (slices)", "occupancy"):
        table.add_column(col)
    for number, part in enumerate(parts, start=1):
        table.add_row(
            str(number),
            partition_label(part),
            " ".join(fmt(p.slices) for p in part),
            " ".join(fmt(p.occupancy) for p in part),
        )
    return table
