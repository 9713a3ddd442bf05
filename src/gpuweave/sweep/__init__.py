"""Parameter sweeps of cluster simulations on a local process pool or Ray."""

from gpuweave.sweep.executors import Executor, LocalExecutor, RayExecutor, TaskFailed, make_executor
from gpuweave.sweep.spec import Cell, SweepSpec, expand, load_sweep, parse_sweep
from gpuweave.sweep.sweep import run_sweep

__all__ = [
    "Cell",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "SweepSpec",
    "TaskFailed",
    "expand",
    "load_sweep",
    "make_executor",
    "parse_sweep",
    "run_sweep",
]
