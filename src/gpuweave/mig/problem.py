"""A batch of moldable tasks for one or several MIG GPUs, and its lower bound.

Problem (FAR paper Sec. 2.2, spec §1.3-1.4): n independent tasks, each with a time t_i(s) in seconds
on an instance of every size s the GPU offers (``+inf`` where the task cannot run on that size, e.g.
out of memory). The work of a task on s slices is s * t_i(s).

The lower bound of the paper (Sec. 6.1, spec §5.1) is LB = sum_i min_s s * t_i(s) / #slices (all
GPUs' slices together); no schedule can finish earlier.

Readers here turn a ``TASKS.csv`` (a ``task`` column, one column per instance size, optionally a
``command`` column) into a :class:`MigProblem`, with one clear :class:`InputError` for bad input.
Complexity: O(n * |sizes|) for reading and for the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gpuweave.checks import DURATION
from gpuweave.errors import InputError
from gpuweave.files import check_unique_columns, csv_rows, read_input_text
from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.hardware.mig import MigGeometry
from gpuweave.limits import check_limit

INF = math.inf


@dataclass(frozen=True, slots=True)
class MigProblem:
    """A batch: task names, ``times[i][k]`` = seconds of task i on ``sizes[k]`` slices, the geometry.

    ``sizes`` are the geometry's instance sizes in ascending order. ``gpus`` identical GPUs are
    available (FAR schedules them as a forest). ``commands`` (optional) are shell commands per task
    for the real execution path.
    """

    names: tuple[str, ...]
    times: tuple[tuple[float, ...], ...]
    geometry: MigGeometry
    gpus: int = 1
    gpu: str = ""
    commands: tuple[str | None, ...] | None = None
    sizes: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(sorted(self.geometry.sizes)))
        if not self.gpu:
            object.__setattr__(self, "gpu", self.geometry.name)
        if self.gpus < 1:
            raise InputError(f"--gpus must be at least 1, got {self.gpus}", field="gpus")
        check_problem_size(len(self.names), self.gpus)
        if len(self.names) != len(self.times):
            raise ValueError("names and times differ in length")
        if len(set(self.names)) != len(self.names):
            dup = next(n for n in self.names if self.names.count(n) > 1)
            raise InputError(f"task name {dup!r} appears twice", field="task")
        for name, row in zip(self.names, self.times):
            if len(row) != len(self.sizes):
                raise ValueError(f"task {name}: {len(row)} times for {len(self.sizes)} sizes")
            for size, t in zip(self.sizes, row):
                if not (0 < t <= DURATION.hi or t == INF):  # also rejects NaN
                    raise InputError(
                        f"task {name!r}: time on size {size} must be > 0 and <= {DURATION.hi:g} seconds "
                        f"(or inf), got {t!r}",
                        field=str(size),
                    )
            if all(math.isinf(t) for t in row):
                raise InputError(f"task {name!r} cannot run on any instance size (all times are inf)", field="task")

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def num_slices(self) -> int:
        """Slices of all GPUs together."""
        return self.geometry.num_slices * self.gpus

    def time(self, task: int, size: int) -> float:
        return self.times[task][self.sizes.index(size)]

    def min_work(self, task: int) -> float:
        return min(s * t for s, t in zip(self.sizes, self.times[task]))

    def with_gpus(self, gpus: int) -> MigProblem:
        return MigProblem(self.names, self.times, self.geometry, gpus, self.gpu, self.commands)

    def subset(self, indices: list[int]) -> MigProblem:
        cmds = None if self.commands is None else tuple(self.commands[i] for i in indices)
        return MigProblem(
            tuple(self.names[i] for i in indices),
            tuple(self.times[i] for i in indices),
            self.geometry,
            self.gpus,
            self.gpu,
            cmds,
        )


def check_problem_size(tasks: int, gpus: int, *, file: str | Path | None = None) -> None:
    """Limits ``mig_tasks``, ``mig_gpus`` and ``mig_task_gpus`` (FAR's planning time grows with tasks x GPUs)."""
    check_limit("mig_gpus", gpus, "GPUs", file=file, field="gpus")
    check_limit("mig_tasks", tasks, "tasks in the batch", file=file, field="task")
    check_limit("mig_task_gpus", tasks * gpus, f"{tasks:,} tasks x {gpus:,} GPUs", file=file, field="gpus")


def lower_bound(problem: MigProblem) -> float:
    """LB = sum_i min_s s * t_i(s) / #slices (paper Sec. 6.1); reconfiguration is not counted."""
    return sum(problem.min_work(i) for i in range(problem.n)) / problem.num_slices


def make_problem(
    names: list[str] | tuple[str, ...],
    times: dict[int, list[float]] | list[list[float]],
    gpu: str | MigGeometry = "A100",
    gpus: int = 1,
    commands: list[str | None] | None = None,
) -> MigProblem:
    """Convenience constructor: ``times`` as rows (one list per task, ascending sizes) or {size: column}."""
    geometry = gpu if isinstance(gpu, MigGeometry) else get_mig_geometry(gpu)
    sizes = tuple(sorted(geometry.sizes))
    if isinstance(times, dict):
        missing = [s for s in sizes if s not in times]
        if missing:
            raise InputError(f"missing times for sizes {missing}")
        rows = [tuple(float(times[s][i]) for s in sizes) for i in range(len(names))]
    else:
        rows = [tuple(float(x) for x in row) for row in times]
    label = gpu if isinstance(gpu, str) else geometry.name
    return MigProblem(tuple(names), tuple(rows), geometry, gpus, label, None if commands is None else tuple(commands))


def _parse_time(text: str, file: Path | str, row: int, column: str) -> float:
    value = text.strip()
    if value.lower() in ("inf", "+inf", "infinity"):
        return INF
    try:
        t = float(value)
    except ValueError:
        raise InputError(
            f"time {text!r} is not a number (use 'inf' for a size the task cannot use)",
            file=file,
            row=row,
            field=column,
        ) from None
    if not (0 < t <= DURATION.hi):  # also rejects NaN; inf is spelled "inf" (above)
        raise InputError(
            f"time must be > 0 and <= {DURATION.hi:g} seconds (or inf for a size the task cannot use), "
            f"got {text.strip()}",
            file=file,
            row=row,
            field=column,
        )
    return t


def _read_tasks_text(path: str | Path) -> str:
    return read_input_text(path, what="tasks file")


def _size_columns(header: list[str], gpu_name: str, sizes: tuple[int, ...], path: str | Path) -> dict[int, int]:
    """Instance size -> column index; every size of the GPU must have one, and no other column is allowed."""
    size_cols: dict[int, int] = {}
    for j, h in enumerate(header):
        if h in ("task", "command") or not h:
            continue
        try:
            size = int(h)
        except ValueError:
            raise InputError(
                f"unknown column {h!r}; expected task, command or an instance size {list(sizes)}", file=path, field=h
            ) from None
        if size not in sizes:
            raise InputError(f"{gpu_name} has no instance of size {size}; sizes: {list(sizes)}", file=path, field=h)
        size_cols[size] = j
    missing = [s for s in sizes if s not in size_cols]
    if missing:
        raise InputError(
            f"missing size column(s) {','.join(map(str, missing))} for {gpu_name} (needs {','.join(map(str, sizes))})",
            file=path,
            field=str(missing[0]),
        )
    return size_cols


def read_tasks_csv(path: str | Path, gpu: str = "A100", gpus: int = 1, *, text: str | None = None) -> MigProblem:
    """Read TASKS.csv: columns ``task``, one per instance size of ``gpu`` (seconds), optional ``command``.

    Lines starting with ``#`` are comments. Errors (missing columns, a size the GPU does not offer,
    zero/negative/non-numeric times, duplicate names, no rows) raise one InputError naming file,
    row and column.
    """
    geometry = get_mig_geometry(gpu)
    sizes = tuple(sorted(geometry.sizes))
    if text is None:
        text = _read_tasks_text(path)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise InputError("empty tasks file (expected a header: task," + ",".join(map(str, sizes)) + ")", file=path)
    reader = csv_rows(lines, file=path)
    header = [h.strip() for h in next(reader)]
    check_unique_columns(header, file=path)
    if "task" not in header:
        raise InputError(f"missing column 'task' (header: {','.join(header)})", file=path, field="task")
    size_cols = _size_columns(header, geometry.name, sizes, path)
    task_col = header.index("task")
    cmd_col = header.index("command") if "command" in header else None
    names: list[str] = []
    seen: set[str] = set()
    rows: list[tuple[float, ...]] = []
    commands: list[str | None] = []
    check_problem_size(len(lines) - 1, gpus, file=path)  # every other line is a task: refused before parsing
    for r, record in enumerate(reader, start=1):
        if len(record) < len(header):
            raise InputError(f"expected {len(header)} fields, got {len(record)}", file=path, row=r)
        name = record[task_col].strip()
        if not name:
            raise InputError("empty task name", file=path, row=r, field="task")
        if name in seen:
            raise InputError(f"task name {name!r} appears twice", file=path, row=r, field="task")
        seen.add(name)
        row = tuple(_parse_time(record[size_cols[s]], path, r, str(s)) for s in sizes)
        if all(math.isinf(t) for t in row):
            raise InputError(f"task {name!r} cannot run on any size (all times inf)", file=path, row=r)
        names.append(name)
        rows.append(row)
        commands.append(record[cmd_col].strip() or None if cmd_col is not None else None)
    if not names:
        raise InputError("no tasks in file", file=path)
    cmds = tuple(commands) if cmd_col is not None else None
    return MigProblem(tuple(names), tuple(rows), geometry, gpus, gpu, cmds)


def read_batches_dir(path: str | Path, gpu: str = "A100", gpus: int = 1) -> list[MigProblem]:
    """Every ``*.csv`` of a directory, in file-name order: one batch each (arrival order)."""
    folder = Path(path)
    if not folder.is_dir():
        raise InputError("batches directory not found", file=folder)
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise InputError("no *.csv batch files in directory", file=folder)
    problems = [read_tasks_csv(f, gpu, gpus) for f in files]
    check_problem_size(sum(p.n for p in problems), gpus, file=folder)  # the batches are planned together
    return problems


def bundled_dataset(name: str, gpus: int = 1) -> MigProblem:
    """A bundled profile: ``rodinia-a100`` (16 kernels), ``rodinia-a30`` (16), ``table3-a30`` (8)."""
    files = {
        "rodinia-a100": ("rodinia_a100.csv", "A100"),
        "rodinia-a30": ("rodinia_a30.csv", "A30"),
        "table3-a30": ("rodinia_a30_table3.csv", "A30"),
    }
    if name not in files:
        raise InputError(f"unknown dataset {name!r}; known: {', '.join(files)}")
    fname, gpu = files[name]
    text = resources.files("gpuweave.mig").joinpath("data").joinpath(fname).read_text()
    return read_tasks_csv(fname, gpu, gpus, text=text)
