"""``gpuweave gpus [NAME] [--partitions] [--tree]``: the GPU catalog (with the sharing modes each model supports),
one model (with its MIG profiles), its MIG partitions and tree. ``cluster show`` reuses the partitions and
profiles (:func:`mig_partitions`, :func:`mig_profiles`) for node groups with ``sharing: mig``."""

from __future__ import annotations

from typing import Optional

import typer

from gpuweave.cli.output import print_json, print_table
from gpuweave.errors import InputError

NAME = "gpus"


def command(
    name: Optional[str] = typer.Argument(None, help="A GPU model or alias (e.g. A100, h100, k80)."),
    show_partitions: bool = typer.Option(False, "--partitions", help="List the GPU's maximal MIG partitions."),
    show_tree: bool = typer.Option(False, "--tree", help="Draw the GPU's MIG repartitioning tree (FAR)."),
    as_json: bool = typer.Option(False, "--json", help="Print the catalog, the model or its partitions as JSON."),
) -> None:
    """Print the GPU catalog (with the sharing modes each model supports), or one model (with its MIG profiles),
    its MIG partitions / repartitioning tree."""
    from rich.console import Console

    from gpuweave.hardware.catalog import get_gpu

    console = Console()
    if name is None:
        if show_partitions or show_tree:
            raise InputError("--partitions and --tree need a GPU name, e.g. `gpuweave gpus A100 --partitions`")
        if as_json:
            from gpuweave.hardware.catalog import all_gpus

            print_json([_gpu_json(gpu) for gpu in all_gpus().values()])
            return
        _print_catalog(console)
        return
    gpu = get_gpu(name)
    if as_json:
        payload = _gpu_json(gpu)
        if show_partitions and gpu.mig is not None:
            payload["partitions"] = mig_partitions(gpu)
        print_json(payload)
        return
    if not (show_partitions or show_tree):
        _print_model(console, gpu)
        return
    if gpu.mig is None:
        raise InputError(f"GPU {gpu.name} has no MIG, so no partitions or tree", field="gpu")
    if show_partitions:
        _print_partitions(console, gpu)
    if show_tree:
        from gpuweave.hardware.mig import repartition_tree

        tree = repartition_tree(gpu.mig)
        console.print(
            f"{gpu.name} repartitioning tree (geometry {gpu.mig.name}, {tree.non_leaf_count()} non-leaf nodes):"
        )
        for line in tree.render():
            console.print(line, markup=False, highlight=False)


def sharing_modes(gpu) -> list[str]:
    """How tasks may share a GPU of this model (a cluster spec's ``sharing``): whole GPUs and fractions on any
    model, MIG instances where the catalog gives the model a MIG geometry."""
    from gpuweave.hardware.cluster_spec import SHARING_MODES

    return [mode for mode in SHARING_MODES if mode != "mig" or gpu.mig is not None]


def mig_partitions(gpu) -> list[dict]:
    """The GPU's maximal MIG partitions (FAR Fig. 1 numbering): label and each instance's slices."""
    from gpuweave.hardware.mig import partition_label, partitions

    if gpu.mig is None:
        return []
    return [
        {"label": partition_label(part), "instances": [sorted(p.slices) for p in part]} for part in partitions(gpu.mig)
    ]


def mig_profiles(gpu) -> list[str]:
    """NVIDIA's names of the MIG instance profiles gpuweave models on this GPU, one per instance size
    (:mod:`gpuweave.hardware.mig_profiles`); empty without MIG."""
    from gpuweave.hardware.mig_profiles import profiles_of

    return [p.name for p in profiles_of(gpu.name)]


def _gpu_json(gpu) -> dict:
    return {
        "name": gpu.name,
        "memory_gb": gpu.memory_gb,
        "power_idle_w": gpu.power_idle_w,
        "power_max_w": gpu.power_max_w,
        "mig_slices": gpu.mig_slices if gpu.mig else None,
        "mig_geometry": gpu.mig.name if gpu.mig else None,
        "mig_profiles": mig_profiles(gpu),
        "sharing": sharing_modes(gpu),
        "aliases": list(gpu.aliases),
        "sources": dict(gpu.sources),
    }


def _print_catalog(console) -> None:
    from gpuweave.hardware.catalog import all_gpus

    rows = [
        (
            gpu.name,
            f"{gpu.memory_gb:g}",
            f"{gpu.power_idle_w:g}",
            f"{gpu.power_max_w:g}",
            str(gpu.mig_slices) if gpu.mig else "-",
            ", ".join(sharing_modes(gpu)),
            ", ".join(gpu.aliases),
        )
        for gpu in all_gpus().values()
    ]
    columns = ("name", "memory GB", "idle W", "max W", "MIG slices", "sharing", "aliases")
    print_table(console, "GPU catalog", columns, rows, right=columns[1:5])


def _print_model(console, gpu) -> None:
    rows = [("memory_gb", gpu.memory_gb), ("power_idle_w", gpu.power_idle_w), ("power_max_w", gpu.power_max_w)]
    if gpu.mig_slice_memory_gb is not None:
        rows.append(("mig_slice_memory_gb", gpu.mig_slice_memory_gb))
    cells = [(key, f"{value:g}", gpu.sources.get(key, "")) for key, value in rows]
    if gpu.mig is not None:
        geo = gpu.mig
        cells.append(
            ("mig", f"{geo.name}: {geo.num_slices} slices, sizes {list(geo.sizes)}", gpu.sources.get("mig", geo.note))
        )
        cells.append(
            (
                "mig profiles",
                ", ".join(mig_profiles(gpu)),
                "NVIDIA MIG User Guide (hardware/mig_profiles.toml)",
            )
        )
        for size in geo.sizes:
            cells.append(
                (
                    f"create/destroy {size}g (s)",
                    f"{geo.create_time(size):g} / {geo.destroy_time(size):g}",
                    f"{geo.sources.get('create_s', '')}; {geo.sources.get('destroy_s', '')}",
                )
            )
    cells.append(("sharing", ", ".join(sharing_modes(gpu)), "cluster spec `sharing:` modes this model supports"))
    title = f"{gpu.name} ({gpu.form_factor})" if gpu.form_factor else gpu.name
    print_table(console, title, ("field", "value", "source"), cells, right=("value",))


def _print_partitions(console, gpu) -> None:
    from gpuweave.hardware.mig import partition_label, partitions

    def fmt(values) -> str:
        return "{" + ",".join(f"S{v}" for v in sorted(values)) + "}"

    parts = partitions(gpu.mig)
    rows = [
        (
            str(number),
            partition_label(part),
            " ".join(fmt(p.slices) for p in part),
            " ".join(fmt(p.occupancy) for p in part),
        )
        for number, part in enumerate(parts, start=1)
    ]
    title = f"{gpu.name}: {len(parts)} maximal MIG partitions (FAR Fig. 1 numbering)"
    print_table(console, title, ("#", "partition", "instances (slices)", "occupancy"), rows, right=("#",))
