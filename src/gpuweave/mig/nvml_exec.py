"""Execute a MIG schedule on a real GPU through NVML (FAR paper Sec. 3.4, Algorithm 3; spec §2.6).

Problem. Turn a planned schedule into real MIG instances and processes, and measure it. Like
Algorithm 3, one thread per instance lifetime (a tree node for FAR): it waits until every earlier
lifetime whose slices overlap its own has been destroyed (for a FAR tree: its parent), creates the GPU
instance at the planned placement (``nvmlDeviceCreateGpuInstanceWithPlacement``; the placement is in
memory slices, ``data/nvml_profiles.toml``) and a full compute instance
(``nvmlGpuInstanceCreateComputeInstance``), runs its tasks one after another with
``CUDA_VISIBLE_DEVICES`` set to the MIG device UUID, logs each task's start and end relative to the
common start, and destroys the instance (compute instance, then GPU instance; "in use" is retried
as the authors' C++ tool does). No global lock: the driver serialises reconfiguration itself.
Instances the plan never destroys are destroyed after the run (cleanup, not timed).

``pynvml`` (package nvidia-ml-py) is imported lazily; without it, without a MIG-enabled GPU or
without permission the run is refused with one clear line (exit 2). Planned vs measured end times
are reported like the paper's Table 3: deviation = (measured - planned) / measured * 100.
Complexity: one thread per lifetime; wall time = the real execution.
"""

from __future__ import annotations

import csv
import os
import subprocess
import threading
import time
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.hardware.mig import Placement
from gpuweave.mig.schedule import Schedule

NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_IN_USE = 19
DESTROY_RETRIES = 200
DESTROY_RETRY_S = 0.05


class NvmlUnavailable(InputError):
    """No usable MIG GPU: pynvml missing, no such GPU, MIG off, or no permission."""


def load_nvml() -> Any:
    """Import pynvml (nvidia-ml-py) lazily; refuse clearly when it is not installed."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        raise NvmlUnavailable(
            "nvidia-ml-py is not installed, so no MIG GPU can be driven (pip install 'gpuweave[gpu]'); "
            "plan and validate work without it"
        ) from None
    return pynvml


@cache
def _profiles() -> dict:
    return tomllib.loads(resources.files("gpuweave.mig").joinpath("data").joinpath("nvml_profiles.toml").read_text())


@dataclass(slots=True)
class TaskTiming:
    task: str
    size: int
    start_slice: int
    planned_start: float
    planned_end: float
    measured_start: float = float("nan")
    measured_end: float = float("nan")
    returncode: int | None = None

    @property
    def deviation_pct(self) -> float:
        return (
            (self.measured_end - self.planned_end) / self.measured_end * 100.0
            if self.measured_end > 0
            else float("nan")
        )


@dataclass(slots=True)
class ExecutionResult:
    timings: list[TaskTiming]
    planned_makespan: float
    measured_makespan: float
    operations: list[tuple[str, int, int, float, float]] = field(default_factory=list)  # op, size, start, t0, t1

    def write_csv(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(
                [
                    "task",
                    "size",
                    "start_slice",
                    "planned_start",
                    "planned_end",
                    "measured_start",
                    "measured_end",
                    "deviation_pct",
                    "returncode",
                ]
            )
            for t in self.timings:
                w.writerow(
                    [
                        t.task,
                        t.size,
                        t.start_slice,
                        f"{t.planned_start:.6f}",
                        f"{t.planned_end:.6f}",
                        f"{t.measured_start:.6f}",
                        f"{t.measured_end:.6f}",
                        f"{t.deviation_pct:.3f}",
                        t.returncode,
                    ]
                )
        return path


@dataclass(slots=True)
class _Lifetime:
    placement: Placement
    create_at: float
    destroy: bool
    initial: bool
    tasks: list = field(default_factory=list)
    deps: list[_Lifetime] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


def _lifetimes(schedule: Schedule) -> list[_Lifetime]:
    geom = get_mig_geometry(schedule.gpu)
    per_place: dict[tuple[int, int], list[_Lifetime]] = {}
    lives: list[_Lifetime] = []
    for i in schedule.initial_instances:
        life = _Lifetime(geom.placement(i.size, i.start_slice), -1.0, False, True)
        per_place.setdefault((i.size, i.start_slice), []).append(life)
        lives.append(life)
    for o in sorted(schedule.operations, key=lambda o: (o.start, o.op != "destroy")):
        key = (o.size, o.start_slice)
        if o.op == "create":
            life = _Lifetime(geom.placement(o.size, o.start_slice), o.start, False, False)
            per_place.setdefault(key, []).append(life)
            lives.append(life)
        else:
            per_place[key][-1].destroy = True
    for t in sorted(schedule.tasks, key=lambda t: t.start):
        cands = per_place[(t.size, t.start_slice)]
        host = [life for life in cands if life.create_at <= t.start + 1e-9][-1]
        host.tasks.append(t)
    lives.sort(key=lambda life: life.create_at)
    for i, life in enumerate(lives):
        life.deps = [e for e in lives[:i] if e.placement.overlaps(life.placement)]
    return lives


def _call(nvml: Any, what: str, fn: Callable, *args: Any) -> Any:
    try:
        return fn(*args)
    except nvml.NVMLError as exc:  # type: ignore[attr-defined]
        code = getattr(exc, "value", None)
        if code == NVML_ERROR_NO_PERMISSION:
            raise NvmlUnavailable(
                f"{what}: no permission (MIG management needs root or the mig/config capability)"
            ) from None
        if code == NVML_ERROR_NOT_SUPPORTED:
            raise NvmlUnavailable(f"{what}: not supported on this GPU (not MIG-capable?)") from None
        raise NvmlUnavailable(f"{what} failed: {exc}") from None


def execute_schedule(
    schedule: Schedule,
    nvml: Any,
    *,
    gpu_index: int = 0,
    commands: dict[str, str | None] | None = None,
    shell: str = "/bin/bash",
) -> ExecutionResult:
    """Run ``schedule`` on GPU ``gpu_index`` with the NVML module ``nvml`` (pynvml or a fake)."""
    from gpuweave.mig.validate import check_schedule

    check_schedule(schedule)
    if schedule.gpus != 1:
        raise InputError(
            f"the executor drives one GPU; this schedule uses {schedule.gpus} (split it per GPU)", field="gpus"
        )
    geom = get_mig_geometry(schedule.gpu)
    table = _profiles().get(geom.name)
    if table is None:
        raise InputError(f"no NVML profile table for {geom.name}")
    cmd_of = {t.task: (commands or {}).get(t.task) or t.command for t in schedule.tasks}
    missing = [n for n, c in cmd_of.items() if not c]
    if missing:
        raise InputError(
            f"{len(missing)} task(s) have no command (add a 'command' column to TASKS.csv): {', '.join(missing[:5])}"
        )

    _call(nvml, "nvmlInit", nvml.nvmlInit)
    try:
        count = _call(nvml, "nvmlDeviceGetCount", nvml.nvmlDeviceGetCount)
        if not (0 <= gpu_index < count):
            raise NvmlUnavailable(f"no GPU with index {gpu_index} ({count} GPU(s) found)")
        device = _call(nvml, f"GPU {gpu_index}", nvml.nvmlDeviceGetHandleByIndex, gpu_index)
        current, _pending = _call(nvml, f"MIG mode of GPU {gpu_index}", nvml.nvmlDeviceGetMigMode, device)
        if current != getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1):
            raise NvmlUnavailable(
                f"MIG mode is disabled on GPU {gpu_index} (enable it: sudo nvidia-smi -i {gpu_index} -mig 1)"
            )
        gi_ids: dict[int, int] = {}
        ci_ids: dict[int, int] = {}
        for size, row in table.items():
            info = _call(
                nvml,
                f"GPU instance profile {size}g",
                nvml.nvmlDeviceGetGpuInstanceProfileInfo,
                device,
                getattr(nvml, row["gi_profile"]),
            )
            gi_ids[int(size)] = info.id
        return _run(schedule, nvml, device, table, gi_ids, ci_ids, cmd_of, shell)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutdown errors must not hide the result
            pass


class _Execution:
    """One run of a schedule on one device: the state its per-lifetime threads share."""

    def __init__(self, nvml, device, table, gi_ids, cmd_of, shell, timings: dict[str, TaskTiming]) -> None:
        self.nvml, self.device, self.table, self.gi_ids = nvml, device, table, gi_ids
        self.cmd_of, self.shell, self.timings = cmd_of, shell, timings
        self.ops: list[tuple[str, int, int, float, float]] = []
        self.ops_lock = threading.Lock()
        self.errors: list[BaseException] = []
        self.alive: list[tuple[Any, Any]] = []
        self.t0 = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def _mig_uuid(self, gi: Any, p: Placement) -> str:
        """The UUID of the MIG device of GPU instance ``gi`` (what CUDA_VISIBLE_DEVICES takes)."""
        nvml, device = self.nvml, self.device
        gi_id = _call(nvml, "GPU instance info", nvml.nvmlGpuInstanceGetInfo, gi).id
        for idx in range(_call(nvml, "max MIG devices", nvml.nvmlDeviceGetMaxMigDeviceCount, device)):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(device, idx)
            except nvml.NVMLError:
                continue
            if nvml.nvmlDeviceGetGpuInstanceId(mig) == gi_id:
                uuid = nvml.nvmlDeviceGetUUID(mig)
                return uuid if isinstance(uuid, str) else uuid.decode()
        raise NvmlUnavailable(f"no MIG device found for the new {p.size}g instance at S{p.start}")

    def create(self, p: Placement) -> tuple[Any, Any, str]:
        """Create the GPU instance and its compute instance at ``p``; log the operation."""
        nvml = self.nvml
        row = self.table[str(p.size)]
        placement = nvml.c_nvmlGpuInstancePlacement_t()
        placement.start = p.start
        placement.size = row["memory_slices"]
        a = self.now()
        gi = _call(
            nvml,
            f"create {p.size}g instance at S{p.start}",
            nvml.nvmlDeviceCreateGpuInstanceWithPlacement,
            self.device,
            self.gi_ids[p.size],
            placement,
        )
        ci_info = _call(
            nvml,
            "compute instance profile",
            nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo,
            gi,
            getattr(nvml, row["ci_profile"]),
            nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
        )
        ci = _call(nvml, "create compute instance", nvml.nvmlGpuInstanceCreateComputeInstance, gi, ci_info.id)
        with self.ops_lock:
            self.ops.append(("create", p.size, p.start, a, self.now()))
            self.alive.append((gi, ci))
        return gi, ci, self._mig_uuid(gi, p)

    def destroy(self, p: Placement, gi: Any, ci: Any) -> None:
        """Destroy the instance, retrying while the driver still reports it in use; log the operation."""
        nvml = self.nvml
        a = self.now()
        _call(nvml, "destroy compute instance", nvml.nvmlComputeInstanceDestroy, ci)
        for attempt in range(DESTROY_RETRIES):
            try:
                nvml.nvmlGpuInstanceDestroy(gi)
                break
            except nvml.NVMLError as exc:
                if getattr(exc, "value", None) != NVML_ERROR_IN_USE or attempt == DESTROY_RETRIES - 1:
                    raise NvmlUnavailable(f"destroy {p.size}g instance at S{p.start} failed: {exc}") from None
                time.sleep(DESTROY_RETRY_S)
        with self.ops_lock:
            self.ops.append(("destroy", p.size, p.start, a, self.now()))
            self.alive.remove((gi, ci))

    def run_lifetime(self, life: _Lifetime) -> None:
        """Thread body: wait for the overlapping earlier lifetimes, create, run the tasks in order, destroy."""
        try:
            for dep in life.deps:
                dep.done.wait()
            if self.errors:
                return
            gi, ci, uuid = self.create(life.placement)
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=uuid)
            for t in life.tasks:
                tt = self.timings[t.task]
                tt.measured_start = self.now()
                proc = subprocess.run(self.cmd_of[t.task], shell=True, executable=self.shell, env=env)
                tt.measured_end = self.now()
                tt.returncode = proc.returncode
            if life.destroy:
                self.destroy(life.placement, gi, ci)
        except BaseException as exc:  # noqa: BLE001 - reported after join
            self.errors.append(exc)
        finally:
            life.done.set()

    def clean_up(self) -> None:
        """Destroy the instances the plan keeps to the end; then raise the first error of a thread, if any."""
        for gi, ci in list(self.alive):
            try:
                self.nvml.nvmlComputeInstanceDestroy(ci)
                self.nvml.nvmlGpuInstanceDestroy(gi)
            except self.nvml.NVMLError:
                pass
        if self.errors:
            err = self.errors[0]
            if isinstance(err, InputError):
                raise err
            raise NvmlUnavailable(f"execution failed: {err}")


def _run(schedule, nvml, device, table, gi_ids, ci_ids, cmd_of, shell) -> ExecutionResult:
    """One thread per instance lifetime; a lifetime starts once the earlier ones sharing its slices are done."""
    lives = _lifetimes(schedule)
    timings = {t.task: TaskTiming(t.task, t.size, t.start_slice, t.start, t.end) for t in schedule.tasks}
    execution = _Execution(nvml, device, table, gi_ids, cmd_of, shell, timings)
    threads = [threading.Thread(target=execution.run_lifetime, args=(life,), daemon=True) for life in lives]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    execution.clean_up()
    rows = sorted(timings.values(), key=lambda t: t.planned_start)
    measured = max((t.measured_end for t in rows), default=0.0)
    return ExecutionResult(rows, schedule.makespan, measured, execution.ops)


def print_timings(result: ExecutionResult) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="planned vs measured (like FAR Table 3)")
    for col in ("task", "instance", "planned end (s)", "measured end (s)", "deviation (%)", "rc"):
        table.add_column(col)
    for t in sorted(result.timings, key=lambda t: t.planned_end):
        table.add_row(
            t.task,
            f"{t.size}g@S{t.start_slice}",
            f"{t.planned_end:.3f}",
            f"{t.measured_end:.3f}",
            f"{t.deviation_pct:+.2f}",
            str(t.returncode),
        )
    console = Console()
    console.print(table)
    console.print(f"makespan planned {result.planned_makespan:.3f} s, measured {result.measured_makespan:.3f} s")
