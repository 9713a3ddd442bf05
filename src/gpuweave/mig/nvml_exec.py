"""Execute a MIG schedule on a real GPU through NVML (FAR paper Sec. 3.4, Algorithm 3; spec §2.6).

Problem. Turn a planned schedule into real MIG instances and processes, and measure it. Like
Algorithm 3, one thread per instance lifetime (a tree node for FAR): it waits until every earlier
lifetime whose slices overlap its own has been destroyed (for a FAR tree: its parent), creates the GPU
instance at the planned placement (``nvmlDeviceCreateGpuInstanceWithPlacement``; the placement is in
memory slices, ``data/nvml_profiles.toml``, and goes to C by pointer) and a full compute instance
(``nvmlGpuInstanceCreateComputeInstance``), runs its tasks one after another with
``CUDA_VISIBLE_DEVICES`` set to the MIG device UUID, logs each task's start and end relative to the
common start, and destroys the instance (compute instance, then GPU instance; "in use" is retried
as the authors' C++ tool does). No global lock: the driver serialises reconfiguration itself.

Safety. The GPU is checked first (:func:`gpuweave.mig.nvml_preflight.preflight`). Every instance is
tracked from the moment NVML returns it (a GPU instance before its compute instance exists), and a
``finally`` destroys whatever is left -- after an error in any thread, on Ctrl-C, SIGTERM or SIGHUP (the
task process groups are killed first; no signal can cut this cleanup short, :class:`_StopSignals`) and for
the instances the plan keeps to the end (cleanup, not timed). An
instance that cannot be destroyed is reported with the ``nvidia-smi`` commands that remove it.
``nvmlShutdown`` runs only once every worker thread has stopped. ``dry_run_calls`` lists the NVML
calls a run would make, without NVML.

Planned vs measured end times are reported like the paper's Table 3:
deviation = (measured - planned) / measured * 100.
Complexity: one thread per lifetime; wall time = the real execution.
"""

from __future__ import annotations

import csv
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.hardware.mig import Placement
from gpuweave.mig.nvml_preflight import (
    MigDevice,
    NvmlUnavailable,
    destroy_with_retries,
    load_nvml,
    nvml_call,
    nvml_profiles,
    preflight,
)
from gpuweave.mig.schedule import Schedule
from gpuweave.mig.validate import check_schedule

__all__ = ["ExecutionResult", "NvmlUnavailable", "TaskTiming", "dry_run_calls", "execute_schedule", "load_nvml"]

KILL_GRACE_S = 3.0  # SIGTERM to a task's process group, then SIGKILL after this
#: exit status of ``mig run`` when the schedule ran to its end but some task's command exited non-zero:
#: 0 is every task done, 2 bad input or a refused GPU (nothing ran), 1 an internal error; docs/hardening.md
INCOMPLETE_EXIT_CODE = 3
NAMED_TASKS = 5  # tasks named in the last line of a run with failed tasks
WORKER_STOP_S = 60.0  # how long to wait for worker threads to stop before cleaning up without them
LOOKUP_ATTEMPTS = 20  # MIG device scans before giving up (instances of other threads come and go meanwhile)
LOOKUP_RETRY_S = 0.05
POLL_S = 0.1
LEFTOVERS_FILE = "gpuweave-mig-leftovers.txt"  # where instances left behind are named when stderr is gone


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

    @property
    def unfinished(self) -> list[TaskTiming]:
        """Tasks whose command did not exit 0 (a task that never ran has no exit status and counts too)."""
        return [t for t in self.timings if t.returncode != 0]

    def unfinished_line(self, written: Path | None = None) -> str | None:
        """The last line of a run with unfinished tasks (``mig run`` then exits :data:`INCOMPLETE_EXIT_CODE`);
        None when every task exited 0."""
        bad = self.unfinished
        if not bad:
            return None
        named = ", ".join(
            f"{t.task} ({'not run' if t.returncode is None else t.returncode})" for t in bad[:NAMED_TASKS]
        )
        more = f" and {len(bad) - NAMED_TASKS} more" if len(bad) > NAMED_TASKS else ""
        see = f"; see the returncode column of {written}" if written is not None else ""
        return f"{len(bad)} of {len(self.timings)} tasks did not finish (exit status not 0: {named}{more}){see}"

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
    destroy_at: float | None
    initial: bool
    tasks: list = field(default_factory=list)
    deps: list[_Lifetime] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


def _lifetimes(schedule: Schedule) -> list[_Lifetime]:
    geom = get_mig_geometry(schedule.gpu)
    per_place: dict[tuple[int, int], list[_Lifetime]] = {}
    lives: list[_Lifetime] = []
    for i in schedule.initial_instances:
        life = _Lifetime(geom.placement(i.size, i.start_slice), -1.0, None, True)
        per_place.setdefault((i.size, i.start_slice), []).append(life)
        lives.append(life)
    for o in sorted(schedule.operations, key=lambda o: (o.start, o.op != "destroy")):
        key = (o.size, o.start_slice)
        if o.op == "create":
            life = _Lifetime(geom.placement(o.size, o.start_slice), o.start, None, False)
            per_place.setdefault(key, []).append(life)
            lives.append(life)
        else:
            per_place[key][-1].destroy_at = o.start
    for t in sorted(schedule.tasks, key=lambda t: t.start):
        cands = per_place[(t.size, t.start_slice)]
        host = [life for life in cands if life.create_at <= t.start + 1e-9][-1]
        host.tasks.append(t)
    lives.sort(key=lambda life: life.create_at)
    for n, life in enumerate(lives):
        life.deps = [e for e in lives[:n] if e.placement.overlaps(life.placement)]
    return lives


def _commands(schedule: Schedule, commands: dict[str, str | None] | None) -> dict[str, str]:
    """Each task's command (``commands`` first, then the schedule's); InputError naming the tasks without one."""
    cmd_of = {t.task: (commands or {}).get(t.task) or t.command for t in schedule.tasks}
    missing = [n for n, c in cmd_of.items() if not c]
    if missing:
        raise InputError(
            f"{len(missing)} task(s) have no command (add a 'command' column to TASKS.csv): {', '.join(missing[:5])}"
        )
    return {n: str(c) for n, c in cmd_of.items()}


def _check_runnable(schedule: Schedule) -> None:
    check_schedule(schedule)
    if schedule.gpus != 1:
        raise InputError(
            f"the executor drives one GPU; this schedule uses {schedule.gpus} (split it per GPU)", field="gpus"
        )


def dry_run_calls(
    schedule: Schedule, *, gpu_index: int = 0, commands: dict[str, str | None] | None = None
) -> list[str]:
    """The NVML calls (and task starts) a run of ``schedule`` would make, in planned order; touches no GPU."""
    _check_runnable(schedule)
    cmd_of = _commands(schedule, commands)
    table = nvml_profiles()[get_mig_geometry(schedule.gpu).name]
    lines = [
        "nvmlInit()",
        f"pre-flight (read-only): nvmlDeviceGetHandleByIndex({gpu_index}), nvmlDeviceGetName, nvmlDeviceGetMigMode, "
        "nvmlDeviceGetGpuInstanceProfileInfo + nvmlDeviceGetGpuInstancePossiblePlacements_v2 per profile, "
        "nvmlDeviceGetGpuInstances per profile",
    ]
    events: list[tuple[float, int, str]] = []
    for life in _lifetimes(schedule):
        p, row = life.placement, table[str(life.placement.size)]
        at = max(life.create_at, 0.0)
        events.append(
            (
                at,
                1,
                f"nvmlDeviceCreateGpuInstanceWithPlacement(device, id of {row['gi_profile']}, "
                f"byref(placement start={p.start} size={row['memory_slices']}))  # {p.size}g at S{p.start}",
            )
        )
        events.append(
            (
                at,
                2,
                f"nvmlGpuInstanceCreateComputeInstance(gi, id of {row['ci_profile']}); "
                "MIG UUID via nvmlDeviceGetMigDeviceHandleByIndex + nvmlDeviceGetUUID",
            )
        )
        events += [(t.start, 3, f"run {t.task} on {p.size}g at S{p.start}: {cmd_of[t.task]}") for t in life.tasks]
        end = f"t={life.destroy_at:.3f}" if life.destroy_at is not None else "cleanup"
        destroy_at = life.destroy_at if life.destroy_at is not None else schedule.makespan
        events.append(
            (
                destroy_at,
                0,
                f'nvmlComputeInstanceDestroy(ci) then nvmlGpuInstanceDestroy(gi), "in use" '
                f"retried  # {p.size}g at S{p.start}, {end}",
            )
        )
    lines += [f"t={at:9.3f}  {line}" for at, _order, line in sorted(events, key=lambda e: (e[0], e[1]))]
    lines.append("nvmlShutdown()")
    return lines


@dataclass(slots=True)
class _Instance:
    """A MIG instance this run created: tracked from the moment its GPU instance exists."""

    placement: Placement
    gi: Any
    gi_id: int | None = None
    ci: Any = None

    def removal_commands(self, gpu_index: int) -> list[str]:
        gi = "<id: sudo nvidia-smi mig -lgi>" if self.gi_id is None else str(self.gi_id)
        dci = [f"sudo nvidia-smi mig -i {gpu_index} -gi {gi} -dci"] if self.ci is not None else []
        return dci + [f"sudo nvidia-smi mig -i {gpu_index} -gi {gi} -dgi"]


def execute_schedule(
    schedule: Schedule,
    nvml: Any,
    *,
    gpu_index: int = 0,
    commands: dict[str, str | None] | None = None,
    shell: str = "/bin/bash",
    clean_existing: bool = False,
) -> ExecutionResult:
    """Run ``schedule`` on GPU ``gpu_index`` with the NVML module ``nvml`` (pynvml); see the module doc."""
    _check_runnable(schedule)
    cmd_of = _commands(schedule, commands)
    nvml_call(nvml, "nvmlInit", nvml.nvmlInit)
    workers_stopped = True
    signals = _StopSignals()
    try:
        device = preflight(nvml, schedule.gpu, gpu_index, clean_existing=clean_existing)
        execution = _Execution(nvml, device, cmd_of, shell, schedule, signals)
        with signals.installed():  # from here until every instance is gone no signal can cut the run short
            try:
                execution.run(_lifetimes(schedule))
            finally:
                workers_stopped = execution.stop()
                execution.destroy_remaining()
        return execution.result()
    finally:
        if workers_stopped:  # NVML must outlive every thread that may still call it
            try:
                nvml.nvmlShutdown()
            except nvml.NVMLError:
                pass  # shutdown errors must not hide the result


#: signals that stop a run: Ctrl-C, a batch system's kill or timeout, a dropped SSH session (docs/mig.md)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _StopSignals:
    """Stop signals as a request the main thread polls, never as an exception.

    An exception raised by a signal handler lands wherever the main thread happens to be -- in the middle of
    killing tasks or destroying an instance -- and a second Ctrl-C used to cut that cleanup short and leave an
    instance behind. Here the handler only records the signal: the first one stops the run (tasks killed,
    instances destroyed), a second one only skips the SIGTERM grace of the tasks (SIGKILL at once); the
    cleanup itself always runs to its end. Outside the main thread (a library caller) nothing is installed.
    """

    def __init__(self) -> None:
        self.received: list[int] = []

    def handle(self, signum: int, _frame: Any) -> None:
        self.received.append(signum)  # no I/O here: after SIGHUP the terminal may be gone

    @property
    def names(self) -> str:
        return ", ".join(dict.fromkeys(signal.Signals(s).name for s in self.received))

    @contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


class _Execution:
    """One run of a schedule on one device: the state its per-lifetime threads share."""

    def __init__(
        self,
        nvml: Any,
        device: MigDevice,
        cmd_of: dict[str, str],
        shell: str,
        schedule: Schedule,
        signals: _StopSignals | None = None,
    ) -> None:
        self.nvml, self.device, self.cmd_of, self.shell, self.schedule = nvml, device, cmd_of, shell, schedule
        self.signals = signals or _StopSignals()
        self.timings = {t.task: TaskTiming(t.task, t.size, t.start_slice, t.start, t.end) for t in schedule.tasks}
        self.ops: list[tuple[str, int, int, float, float]] = []
        self.lock = threading.Lock()
        self.errors: list[BaseException] = []
        self.live: list[_Instance] = []
        self.procs: set[subprocess.Popen] = set()
        self.abort = threading.Event()
        self.threads: list[threading.Thread] = []
        self.survivors: list[_Instance] = []
        self.survivors_file: Path | None = None
        self.t0 = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def run(self, lives: list[_Lifetime]) -> None:
        """Start one thread per lifetime and wait for them; a stop signal aborts the run (cleanup follows in stop)."""
        self.threads = [threading.Thread(target=self.run_lifetime, args=(life,), daemon=True) for life in lives]
        for th in self.threads:
            if self.signals.received:
                break  # a thread not started creates nothing
            th.start()
        while any(th.is_alive() for th in self.threads):
            if self.signals.received and not self.abort.is_set():
                self.interrupted()
            time.sleep(POLL_S)  # a sleep, not join(): the loop sees a signal within POLL_S
        if self.signals.received and not self.abort.is_set() and any(th.ident is None for th in self.threads):
            self.interrupted()

    def interrupted(self) -> None:
        self.fail(NvmlUnavailable(f"interrupted ({self.signals.names}): running tasks were killed"))

    def fail(self, exc: BaseException) -> None:
        """Record the first errors and stop the run: no new instance or task starts, running tasks are killed."""
        with self.lock:
            self.errors.append(exc)
        self.abort.set()
        self.kill_tasks()

    def kill_tasks(self) -> None:
        """SIGTERM every running task's process group, SIGKILL what is left after KILL_GRACE_S."""
        with self.lock:
            procs = list(self.procs)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for proc in procs:
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + KILL_GRACE_S
            while sig == signal.SIGTERM and time.monotonic() < deadline and any(p.poll() is None for p in procs):
                if len(self.signals.received) > 1:
                    break  # a second Ctrl-C: no more grace
                time.sleep(POLL_S)

    def stop(self) -> bool:
        """Wait for the worker threads to stop; True when all did (then NVML may be shut down)."""
        deadline = time.monotonic() + WORKER_STOP_S
        for th in self.threads:
            if th.ident is not None:  # a signal may come before every thread is started
                th.join(max(0.0, deadline - time.monotonic()))
        return not any(th.is_alive() for th in self.threads)

    def destroy_remaining(self) -> None:
        """Destroy every instance still tracked (plan's last instances, or all after an error); report survivors."""
        for inst in list(self.live):
            try:
                self.destroy(inst)
            except NvmlUnavailable:
                self.survivors.append(inst)
        if self.survivors:
            self.report_survivors()

    def report_survivors(self) -> None:
        """One line per instance left on the GPU, with the commands that remove it, on stderr; where stderr is
        gone (a dropped SSH session) in ``LEFTOVERS_FILE`` of the working directory instead."""
        index = self.device.index
        lines = [f"{len(self.survivors)} MIG instance(s) could not be destroyed; remove them with:"] + [
            f"  {inst.placement.size}g instance at S{inst.placement.start}: {' && '.join(inst.removal_commands(index))}"
            for inst in self.survivors
        ]
        try:
            print("\n".join(lines), file=sys.stderr, flush=True)
        except (OSError, ValueError):  # EIO on a hung-up terminal, or stderr closed
            Path(LEFTOVERS_FILE).write_text("\n".join(lines) + "\n")
            self.survivors_file = Path(LEFTOVERS_FILE).resolve()

    def result(self) -> ExecutionResult:
        if self.survivors:
            where = f"listed in {self.survivors_file}" if self.survivors_file else "commands above"
            cause = f"{self.errors[0]}; " if self.errors else ""
            raise NvmlUnavailable(f"{cause}{len(self.survivors)} MIG instance(s) survived the run ({where})")
        if self.errors:
            raise (
                self.errors[0]
                if isinstance(self.errors[0], InputError)
                else NvmlUnavailable(f"execution failed: {self.errors[0]}")
            )
        rows = sorted(self.timings.values(), key=lambda t: t.planned_start)
        measured = max((t.measured_end for t in rows), default=0.0)
        return ExecutionResult(rows, self.schedule.makespan, measured, self.ops)

    def _scan_mig_uuid(self, gi_id: int) -> str | None:
        """One pass over the MIG devices; handles of instances destroyed meanwhile (or reused) are skipped."""
        nvml, device = self.nvml, self.device.handle
        for idx in range(nvml_call(nvml, "max MIG devices", nvml.nvmlDeviceGetMaxMigDeviceCount, device)):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(device, idx)
                if nvml.nvmlDeviceGetGpuInstanceId(mig) != gi_id:
                    continue
                uuid = nvml.nvmlDeviceGetUUID(mig)
                if nvml.nvmlDeviceGetGpuInstanceId(mig) != gi_id:
                    continue  # the handle now names another instance
            except nvml.NVMLError:
                continue  # index past the end, or the instance went away mid-scan
            return uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        return None

    def mig_uuid(self, inst: _Instance) -> str:
        """The UUID of the MIG device of ``inst`` (what CUDA_VISIBLE_DEVICES takes)."""
        for _ in range(LOOKUP_ATTEMPTS):
            uuid = self._scan_mig_uuid(inst.gi_id)  # type: ignore[arg-type]  # set once created
            if uuid is not None:
                return uuid
            time.sleep(LOOKUP_RETRY_S)
        p = inst.placement
        raise NvmlUnavailable(f"no MIG device found for the new {p.size}g instance at S{p.start}")

    def create(self, p: Placement) -> tuple[_Instance, str]:
        """Create the GPU instance and its compute instance at ``p``, tracked as soon as each exists; log it."""
        nvml, profile = self.nvml, self.device.profiles[p.size]
        placement = nvml.c_nvmlGpuInstancePlacement_t()
        placement.start, placement.size = p.start, profile.memory_slices
        a = self.now()
        gi = nvml_call(
            nvml,
            f"create {p.size}g instance at S{p.start}",
            nvml.nvmlDeviceCreateGpuInstanceWithPlacement,
            self.device.handle,
            profile.gi_id,
            ctypes.byref(placement),
        )  # C takes a pointer
        inst = _Instance(p, gi)
        with self.lock:
            self.live.append(inst)
        inst.gi_id = nvml_call(nvml, "GPU instance info", nvml.nvmlGpuInstanceGetInfo, gi).id
        ci_info = nvml_call(
            nvml,
            "compute instance profile",
            nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo,
            gi,
            profile.ci_constant,
            nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
        )
        inst.ci = nvml_call(
            nvml,
            f"create compute instance in {p.size}g at S{p.start}",
            nvml.nvmlGpuInstanceCreateComputeInstance,
            gi,
            ci_info.id,
        )
        with self.lock:
            self.ops.append(("create", p.size, p.start, a, self.now()))
        return inst, self.mig_uuid(inst)

    def destroy(self, inst: _Instance) -> None:
        """Destroy the compute instance, then the GPU instance ("in use" retried); stop tracking it after."""
        nvml, p = self.nvml, inst.placement
        where = f"{p.size}g instance at S{p.start}"
        if inst.ci is not None:
            destroy_with_retries(nvml, nvml.nvmlComputeInstanceDestroy, inst.ci, f"destroy compute instance of {where}")
            inst.ci = None
        destroy_with_retries(nvml, nvml.nvmlGpuInstanceDestroy, inst.gi, f"destroy {where}")
        with self.lock:
            self.live.remove(inst)

    def run_task(self, task: str, env: dict[str, str]) -> None:
        """Run one task in its own process group (so an abort can kill all it started) and time it."""
        tt = self.timings[task]
        with self.lock:
            if self.abort.is_set():
                return
            tt.measured_start = self.now()
            proc = subprocess.Popen(
                self.cmd_of[task], shell=True, executable=self.shell, env=env, start_new_session=True
            )
            self.procs.add(proc)
        tt.returncode = proc.wait()
        tt.measured_end = self.now()
        with self.lock:
            self.procs.discard(proc)

    def run_lifetime(self, life: _Lifetime) -> None:
        """Thread body: wait for the overlapping earlier lifetimes, create, run the tasks in order, destroy."""
        try:
            for dep in life.deps:
                while not dep.done.wait(POLL_S):
                    if self.abort.is_set():
                        return
            if self.abort.is_set():
                return
            inst, uuid = self.create(life.placement)
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=uuid)
            for t in life.tasks:
                self.run_task(t.task, env)
            if life.destroy_at is not None and not self.abort.is_set():
                a = self.now()
                self.destroy(inst)
                with self.lock:
                    self.ops.append(("destroy", inst.placement.size, inst.placement.start, a, self.now()))
        except BaseException as exc:  # noqa: BLE001 - reported after the threads stop
            self.fail(exc)
        finally:
            life.done.set()
