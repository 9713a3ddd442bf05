"""The built-in executor kinds, registered on :data:`gpuweave.executors.EXECUTORS`: ``local``, ``ray``, ``slurm``.

This module sits above ``live`` and ``sweep`` (it builds executors of both) and is imported by the registry on
its first lookup; each factory imports its executor only when it builds one, so Ray is loaded only for a Ray run.
"""

from __future__ import annotations

from pathlib import Path

from gpuweave.executors import register_executor


def _local_live(address, config, out: Path):
    from gpuweave.live.local import LocalExecutor

    namespaces = list(config.executor.local.namespaces) if config is not None else []
    return LocalExecutor(namespaces=namespaces)


def _local_sweep(workers, address):
    from gpuweave.sweep.executors import LocalExecutor

    return LocalExecutor(workers)


def _ray_live(address, config, out: Path):
    from gpuweave.live.ray_executor import RayExecutor  # ray is heavy: imported only for a Ray run

    return RayExecutor(address)


def _ray_sweep(workers, address):
    from gpuweave.sweep.executors import RayExecutor

    return RayExecutor(address=address, num_cpus=workers)


def _slurm_live(address, config, out: Path):
    from gpuweave.live.config import SlurmSection
    from gpuweave.live.slurm import SlurmExecutor, SlurmOptions

    section = (config.executor.slurm if config is not None else None) or SlurmSection()
    return SlurmExecutor(out, SlurmOptions(**section.model_dump()))


register_executor(
    "local", help="subprocesses (live) or a process pool (sweeps) on this machine", live=_local_live, sweep=_local_sweep
)
register_executor(
    "ray",
    help="a local Ray, or the Ray cluster at --address: one Ray task per worker or sweep cell",
    live=_ray_live,
    sweep=_ray_sweep,
    takes_address=True,
)
register_executor("slurm", help="one Slurm batch job per worker (docs/slurm.md); no sweeps", live=_slurm_live)
