"""One live run from a config file: pick the executor, check everything that can be checked, run, write results."""

from __future__ import annotations

from pathlib import Path

from gpuweave.errors import InputError
from gpuweave.files import prepare_output_dir
from gpuweave.live.config import load_live_config
from gpuweave.live.executor import Executor
from gpuweave.live.local import LocalExecutor
from gpuweave.live.results import write_live_run
from gpuweave.live.runtime import LiveRuntime


def make_executor(kind: str, address: str | None) -> Executor:
    if kind == "local":
        if address is not None:
            raise InputError("--address is for the ray executor", field="address")
        return LocalExecutor()
    if kind == "ray":
        from gpuweave.live.ray_executor import RayExecutor  # ray is heavy: imported only for a Ray run

        return RayExecutor(address)
    raise InputError(f"unknown executor '{kind}' (known: local, ray)", field="executor")


def run_live(config_path: Path, executor_kind: str | None, address: str | None, out: Path, progress=None) -> dict:
    """Run a live config to the end and write its results; ``progress(done, total)`` is told finished jobs."""
    config = load_live_config(config_path)
    out = prepare_output_dir(out, field="out", create=True)
    executor = make_executor(executor_kind or config.executor.kind, address)
    runtime = LiveRuntime(config, executor, out, config_dir=Path(config_path).parent)
    runtime.progress = progress
    runtime.run()
    return write_live_run(runtime, out)
