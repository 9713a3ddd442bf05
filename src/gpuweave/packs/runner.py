"""Run a pack schedule on this machine: packs one after another, tasks pinned to disjoint CPU sets.

A "processor" of the schedule is ``cpus_per_proc`` CPUs of this machine (the paper's processor is an
8-core node). For each pack, in plan order, every task is started at once with its CPU set
(``os.sched_setaffinity`` in the child before ``exec``, so threads and sub-processes inherit it); the next
pack starts when the last task of the current one has ended. Each task gets its processor count as the
``{procs}`` placeholder of its command and in the environment (``GPUWEAVE_PROCS``, ``GPUWEAVE_CPUS``,
``OMP_NUM_THREADS``). The report compares planned and measured pack and task times.

Commands come from the plan (``command`` per task, from the profile's ``command`` column) or from a
template given to :func:`run_plan`; placeholders ``{procs}``, ``{cpus}`` (comma list), ``{task}`` and
``{python}`` (this interpreter), ``{{``/``}}`` for literal braces. A plan file's commands run as they are
written, with this user's rights: only run plans you trust (``--dry-run`` prints them first). The template
is split with :mod:`shlex` *before* the placeholders are filled in, each inside its own word, so a value
(a task name with spaces or quotes) is always exactly one argument; nothing but the four names is a
placeholder (no attribute access or format specs, unlike ``str.format``). Commands run without a shell.
A task that fails stops the run after its pack; the report says so (``ok`` is False).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from gpuweave.errors import InputError
from gpuweave.packs.plan_io import Plan, PlannedTask


@dataclass(slots=True)
class TaskRun:
    task: str
    procs: int
    cpus: list[int]
    planned: float
    start: float
    end: float
    returncode: int
    output: str

    @property
    def measured(self) -> float:
        return self.end - self.start


@dataclass(slots=True)
class PackRun:
    index: int
    planned: float
    start: float
    end: float
    tasks: list[TaskRun] = field(default_factory=list)

    @property
    def measured(self) -> float:
        return self.end - self.start


@dataclass(slots=True)
class RunReport:
    procs: int
    cpus_per_proc: int
    planned_cost: float
    measured_cost: float
    ok: bool
    packs: list[PackRun]

    def as_dict(self) -> dict:
        out = asdict(self)
        for pk, raw in zip(self.packs, out["packs"]):
            raw["measured"] = pk.measured
            for tr, rt in zip(pk.tasks, raw["tasks"]):
                rt["measured"] = tr.measured
        return out


def available_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def cpu_blocks(plan: Plan, cpus_per_proc: int, cpus: list[int] | None = None) -> list[list[list[int]]]:
    """Disjoint CPU sets for every task of every pack: contiguous blocks, in pack order."""
    cpus = available_cpus() if cpus is None else cpus
    need = plan.procs * cpus_per_proc
    if cpus_per_proc < 1:
        raise InputError(f"--cpus-per-proc must be at least 1, got {cpus_per_proc}")
    if need > len(cpus):
        raise InputError(
            f"the schedule has {plan.procs} processors x {cpus_per_proc} CPUs = {need} CPUs; "
            f"this process may use {len(cpus)} ({','.join(map(str, cpus))})"
        )
    out = []
    for pk in plan.packs:
        pos = 0
        sets = []
        for pt in pk.tasks:
            n = pt.procs * cpus_per_proc
            sets.append(cpus[pos : pos + n])
            pos += n
        out.append(sets)
    return out


PLACEHOLDERS = ("procs", "cpus", "task", "python")


def expand_command(template: str, values: dict[str, str], *, task: str = "") -> list[str]:
    """The argv of ``template``: split with shlex, then each ``{name}`` of :data:`PLACEHOLDERS` replaced inside its
    word by ``values[name]`` (``{{`` and ``}}`` are literal braces). InputError for anything else in braces."""
    who = f"task '{task}': " if task else ""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise InputError(f"{who}cannot split the command {template!r}: {exc}", field="command") from None
    if not words:
        raise InputError(f"{who}empty command", field="command")
    argv = [_fill(word, values, who, template) for word in words]
    if any("\0" in word for word in argv):
        raise InputError(f"{who}a NUL character in the command {template!r}", field="command")
    return argv


def _fill(word: str, values: dict[str, str], who: str, template: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(word):
        if word.startswith("{{", i) or word.startswith("}}", i):
            out.append(word[i])
            i += 2
            continue
        if word[i] == "{":
            end = word.find("}", i)
            name = word[i + 1 : end] if end > i else None
            if name not in values:
                shown = word[i : end + 1] if end > i else word[i:]
                raise InputError(
                    f"{who}unknown placeholder {shown!r} in the command {template!r}: use "
                    + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                    + " ({{ and }} for literal braces)",
                    field="command",
                )
            out.append(values[name])
            i = end + 1
            continue
        if word[i] == "}":
            raise InputError(f"{who}a lone '}}' in the command {template!r} (write }}}} for a brace)", field="command")
        out.append(word[i])
        i += 1
    return "".join(out)


def _argv(pt: PlannedTask, template: str | None, cpus: list[int]) -> list[str]:
    cmd = pt.command or template
    if cmd is None:
        raise InputError(f"task '{pt.name}' has no command (add a 'command' column to the profile or pass --command)")
    values = {"procs": str(pt.procs), "cpus": ",".join(map(str, cpus)), "task": pt.name, "python": sys.executable}
    return expand_command(cmd, values, task=pt.name)


def planned_commands(
    plan: Plan, *, cpus_per_proc: int = 1, command: str | None = None
) -> list[tuple[int, PlannedTask, list[int], list[str]]]:
    """``(pack, task, cpus, argv)`` of every task, in run order: what :func:`run_plan` would start."""
    blocks = cpu_blocks(plan, cpus_per_proc)
    return [
        (b, pt, cs, _argv(pt, command, cs))
        for b, (pk, sets) in enumerate(zip(plan.packs, blocks))
        for pt, cs in zip(pk.tasks, sets)
    ]


def run_plan(
    plan: Plan,
    *,
    cpus_per_proc: int = 1,
    command: str | None = None,
    timeout: float | None = None,
    on_pack: Callable[[int, int], None] | None = None,
) -> RunReport:
    """Execute ``plan``; return the planned-vs-measured report. ``on_pack(done, total)`` is called after each
    pack (a progress bar)."""
    blocks = cpu_blocks(plan, cpus_per_proc)
    argvs = [[_argv(pt, command, cs) for pt, cs in zip(pk.tasks, sets)] for pk, sets in zip(plan.packs, blocks)]
    t0 = time.perf_counter()
    packs: list[PackRun] = []
    ok = True
    for b, (pk, sets, cmds) in enumerate(zip(plan.packs, blocks, argvs)):
        runs: list[TaskRun] = []
        threads = []
        pack_start = time.perf_counter() - t0
        procs: list[subprocess.Popen] = []
        # Start every task of the pack first (no waiter thread runs while we fork), then wait in threads.
        for pt, cs, argv in zip(pk.tasks, sets, cmds):
            env = dict(os.environ)
            env.update(GPUWEAVE_PROCS=str(pt.procs), GPUWEAVE_CPUS=",".join(map(str, cs)), OMP_NUM_THREADS=str(len(cs)))
            cpuset = set(cs)
            start = time.perf_counter() - t0
            try:
                proc = subprocess.Popen(
                    argv,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    preexec_fn=lambda s=cpuset: os.sched_setaffinity(0, s),  # type: ignore[misc]  # default-bound
                )
            except OSError as exc:
                for other in procs:
                    other.kill()
                raise InputError(f"task '{pt.name}': cannot start {argv[0]!r}: {exc}") from None
            procs.append(proc)
            runs.append(TaskRun(pt.name, pt.procs, cs, pt.time, start, start, -1, ""))
        for proc, tr in zip(procs, runs):

            def wait(proc=proc, tr=tr) -> None:
                try:
                    out, _ = proc.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    out, _ = proc.communicate()
                tr.end = time.perf_counter() - t0
                tr.returncode = proc.returncode
                tr.output = (out or "")[-2000:]

            th = threading.Thread(target=wait, daemon=True)
            th.start()
            threads.append(th)
        for th in threads:
            th.join()
        pack_end = time.perf_counter() - t0
        packs.append(PackRun(b, pk.cost, pack_start, pack_end, runs))
        if on_pack is not None:
            on_pack(len(packs), len(plan.packs))
        if any(tr.returncode != 0 for tr in runs):
            ok = False
            break
    measured = packs[-1].end if packs else 0.0
    return RunReport(plan.procs, cpus_per_proc, plan.cost, measured, ok and len(packs) == len(plan.packs), packs)
