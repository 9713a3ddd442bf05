"""One live run from a config file: pick the executor, check everything that can be checked, run, write results."""

from __future__ import annotations

from pathlib import Path

from gpuweave.errors import InputError
from gpuweave.files import prepare_output_dir
from gpuweave.live.config import LiveConfig, SlurmSection, load_live_config
from gpuweave.live.executor import Executor
from gpuweave.live.local import LocalExecutor
from gpuweave.live.results import write_live_run
from gpuweave.live.runtime import LiveRuntime


def make_executor(
    kind: str, address: str | None, config: LiveConfig | None = None, out: Path | None = None
) -> Executor:
    if kind in ("local", "slurm") and address is not None:
        raise InputError("--address is for the ray executor", field="address")
    if kind == "local":
        return LocalExecutor()
    if kind == "ray":
        from gpuweave.live.ray_executor import RayExecutor  # ray is heavy: imported only for a Ray run

        return RayExecutor(address)
    if kind == "slurm":
        from gpuweave.live.slurm import SlurmExecutor, SlurmOptions

        section = (config.executor.slurm if config is not None else None) or SlurmSection()
        return SlurmExecutor(Path(out or "."), SlurmOptions(**section.model_dump()))
    raise InputError(f"unknown executor '{kind}' (known: local, ray, slurm)", field="executor")


def run_live(config_path: Path, executor_kind: str | None, address: str | None, out: Path, progress=None) -> dict:
    """Run a live config to the end and write its results; ``progress(done, total)`` is told finished jobs."""
    config = load_live_config(config_path)
    out = prepare_output_dir(out, field="out", create=True)
    executor = make_executor(executor_kind or config.executor.kind, address, config, out)
    runtime = LiveRuntime(config, executor, out, config_dir=Path(config_path).parent)
    runtime.progress = progress
    runtime.run()
    return write_live_run(runtime, out)
