"""One live run from a config file: pick the executor, check everything that can be checked, run, write results."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from gpuweave.errors import InputError
from gpuweave.executors import EXECUTORS, executor_names, spoken
from gpuweave.files import prepare_output_dir
from gpuweave.live.config import LiveConfig, load_live_config
from gpuweave.live.executor import Executor
from gpuweave.live.results import write_live_run
from gpuweave.live.runtime import LiveRuntime


def make_executor(
    kind: str, address: str | None, config: LiveConfig | None = None, out: Path | None = None
) -> Executor[Any]:
    """The live executor registered as ``kind`` (:data:`gpuweave.executors.EXECUTORS`)."""
    entry = EXECUTORS.get(kind).impl
    if address is not None and not entry.takes_address:
        raise InputError(f"--address is for the {spoken(executor_names(address=True))} executor", field="address")
    executor: Executor[Any] = entry.live(address, config, Path(out or "."))
    return executor


def run_live(
    config_path: Path,
    executor_kind: str | None,
    address: str | None,
    out: Path,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run a live config to the end and write its results; ``progress(done, total)`` is told finished jobs."""
    config = load_live_config(config_path)
    out = prepare_output_dir(out, field="out", create=True)
    kind = executor_kind or config.executor.kind
    executor = make_executor(kind, address, config, out)
    # summary.json's config records the executor that ran, not the one the file named (--executor overrides it)
    config = config.model_copy(update={"executor": config.executor.model_copy(update={"kind": kind})})
    runtime = LiveRuntime(config, executor, out, config_dir=Path(config_path).parent)
    runtime.progress = progress
    runtime.run()
    return write_live_run(runtime, out)
