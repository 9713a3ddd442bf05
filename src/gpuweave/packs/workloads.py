"""Workloads of the paper's Section 6.1 and the profile CSV reader.

* :func:`syn_ref`: the spec's reference synthetic generator SYN-REF (spec 4.1, R11), implemented exactly so
  that instances match across implementations. Its parameters live in ``data/synref.toml``. The model
  family is the paper's ``t(m,q) = f t(m,1) + (1-f) t(m,1)/q + kappa(m,q)`` with ``q = 8 j`` cores on
  ``j`` processors; the paper does not publish ``c``, ``m`` or the kappa scale, so SYN-REF draws the
  sequential time ``S`` and ``rho = kappa(q_ref)/S`` log-uniformly.
* :func:`workload`: Workload-I (10 tasks, p = 16; SYN-REF surrogate or a CSV of real measurements, R10),
  Workload-II (65 tasks, p = 16) and Workload-III (260 tasks, p = 32), sizes from ``data/paper_numbers.toml``.
  The paper does not list Workload-III's pack sizes; we use every even k from 2 to 32 (spec R12).
* :func:`load_profile_csv`: a user's profile, rows = tasks, a ``task`` column and one column per processor
  count ``1..P``, times in seconds, and optionally a ``command`` column (what ``gpuweave run packs`` starts
  for the task; placeholders ``{procs}``, ``{cpus}``, ``{task}``, ``{python}``). Violations of Eq. (1)/(2)
  are repaired (spec 1) with a :class:`ProfileRepairWarning` naming the tasks changed; everything else that
  is wrong is an :class:`~gpuweave.errors.InputError` naming the file, row and field.
"""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

from gpuweave.checks import DURATION
from gpuweave.errors import InputError
from gpuweave.files import check_unique_columns, csv_rows, read_input_text
from gpuweave.limits import check_limit
from gpuweave.packs.data import paper_numbers, synref_params
from gpuweave.packs.model import Profile, repair

# kappa(m, q) as a function of q for a fixed task; the m factor goes into the amplitude rho (spec R11).
KAPPA_SHAPES: dict[str, Callable[[float], float]] = {
    "log2q": lambda q: math.log2(q),
    "log2q_sq": lambda q: math.log2(q) ** 2,
    "qlog2q": lambda q: q * math.log2(q),
    "m_over_q_log2q": lambda q: math.log2(q) / q,
    "sqrt_m_over_q": lambda q: q**-0.5,
    "m_log2q": lambda q: math.log2(q),
}


class ProfileRepairWarning(UserWarning):
    """A profile violated Eq. (1) or (2) and was repaired."""


def syn_ref(n: int, p: int, seed: int) -> Profile:
    """SYN-REF(n, p, seed): ``n`` synthetic tasks on ``1..p`` processors (8-core nodes)."""
    prm = synref_params()
    shapes = list(prm["kappa_shapes"])
    combos = [(g, f, h) for g in prm["seq"] for f in prm["serial_fractions"] for h in shapes]
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(combos), size=n, replace=(n > len(combos)))
    cores = int(prm["cores_per_processor"])
    q_ref = float(prm["q_ref"])
    log_s = (math.log(prm["seq_time_lo"]), math.log(prm["seq_time_hi"]))
    log_r = (math.log(prm["rho_lo"]), math.log(prm["rho_hi"]))
    raw = np.empty((n, p))
    names = []
    for r, ci in enumerate(idx):
        g, f, h = combos[int(ci)]
        seq_time = math.exp(rng.uniform(*log_s))
        rho = math.exp(rng.uniform(*log_r))
        shape = KAPPA_SHAPES[h]
        ref = shape(q_ref)
        raw[r] = [seq_time * (f + (1 - f) / q + rho * shape(q) / ref) for q in (cores * j for j in range(1, p + 1))]
        names.append(f"t{r:03d}-{g}-f{f:g}-{h}")
    return Profile(repair(raw), tuple(names))


def workload(name: str, seed: int = 0, *, csv_path: str | Path | None = None) -> Profile:
    """Workload ``I``, ``II`` or ``III`` of Section 6.1. ``csv_path`` loads real Workload-I measurements."""
    specs = paper_numbers()["workloads"]
    if name not in specs:
        raise InputError(f"unknown workload '{name}' (known: {', '.join(specs)})")
    spec = specs[name]
    if csv_path is not None:
        return load_profile_csv(csv_path, procs=int(spec["p"]))
    return syn_ref(int(spec["n"]), int(spec["p"]), seed)


def workload_ks(name: str) -> list[int]:
    """The pack sizes ``k`` the paper (or R12 for Workload-III) uses for a workload."""
    return [int(k) for k in paper_numbers()["workloads"][name]["k"]]


def _processor_columns(header: list[str], path: Path) -> dict[int, int]:
    """Processor count j -> column index, from the header (every column but task and command)."""
    proc_cols: dict[int, int] = {}
    for c, h in enumerate(header):
        if h in ("task", "command"):
            continue
        try:
            j = int(h)
        except ValueError:
            raise InputError(
                "column name is not a processor count (expected an integer 1..P)", file=path, row=0, field=h
            ) from None
        if j < 1:
            raise InputError("processor counts start at 1", file=path, row=0, field=h)
        if j in proc_cols:
            raise InputError("duplicate processor column", file=path, row=0, field=h)
        proc_cols[j] = c
    if not proc_cols:
        raise InputError("no processor columns (expected '1,2,...,P' after 'task')", file=path, row=0)
    return proc_cols


def _checked_procs(procs: int | None, proc_cols: dict[int, int], path: Path) -> int:
    """The processor count to read (default: the largest column); every count 1..procs needs a column."""
    have = max(proc_cols)
    if procs is None:
        procs = have
    if procs < 1:
        raise InputError(f"--procs must be at least 1, got {procs}")
    check_limit("packs_procs", procs, "processors of the profile", file=path, row=0, field=str(procs))
    if procs > have:
        raise InputError(
            f"--procs {procs} is larger than the profile supports (its largest processor column is {have})", file=path
        )
    missing = [j for j in range(1, procs + 1) if j not in proc_cols]
    if missing:
        raise InputError(
            f"missing processor column(s) {', '.join(map(str, missing))} (need every count 1..{procs})",
            file=path,
            row=0,
        )
    return procs


def _task_times(rec: list[str], proc_cols: dict[int, int], procs: int, path: Path, r: int) -> list[float]:
    """One row's times on 1..procs processors: positive finite seconds."""
    vals = []
    for j in range(1, procs + 1):
        cell = rec[proc_cols[j]].strip()
        try:
            v = float(cell)
        except ValueError:
            raise InputError(f"time '{cell}' is not a number (seconds)", file=path, row=r, field=str(j)) from None
        if not (0 < v <= DURATION.hi):  # also NaN and inf
            raise InputError(
                f"time {cell} must be a positive finite number of seconds, at most {DURATION.hi:g}",
                file=path,
                row=r,
                field=str(j),
            )
        vals.append(v)
    return vals


def load_profile_csv(path: str | Path, procs: int | None = None) -> Profile:
    """Read a profile CSV. ``procs`` selects columns ``1..procs`` (default: all processor columns)."""
    path = Path(path)
    text = read_input_text(path, what="profile file")
    lines = text.splitlines()
    check_limit("packs_tasks", sum(1 for line in lines[1:] if line.strip()), "tasks in the profile", file=path)
    reader = csv_rows(lines, file=path)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError("the profile is empty (expected a header 'task,1,2,...,P')", file=path) from None
    check_unique_columns(header, file=path)
    if "task" not in header:
        raise InputError("no 'task' column in the header (expected 'task,1,2,...,P')", file=path, row=0)
    proc_cols = _processor_columns(header, path)
    procs = _checked_procs(procs, proc_cols, path)
    task_col = header.index("task")
    cmd_col = header.index("command") if "command" in header else None
    commands: list[str] = []
    names: list[str] = []
    seen: set[str] = set()
    rows: list[list[float]] = []
    for r, rec in enumerate(reader, start=1):
        if not rec or all(not x.strip() for x in rec):
            continue
        if len(rec) != len(header):
            raise InputError(f"{len(rec)} fields, the header has {len(header)}", file=path, row=r)
        name = rec[task_col].strip()
        if not name:
            raise InputError("empty task name", file=path, row=r, field="task")
        if name in seen:
            raise InputError(f"duplicate task '{name}'", file=path, row=r, field="task")
        seen.add(name)
        vals = _task_times(rec, proc_cols, procs, path, r)
        if cmd_col is not None:
            cmd = rec[cmd_col].strip()
            if not cmd:
                raise InputError("empty command", file=path, row=r, field="command")
            commands.append(cmd)
        names.append(name)
        rows.append(vals)
    if not rows:
        raise InputError("the profile has no task rows", file=path)
    prof = Profile.from_raw(np.asarray(rows), names, commands)
    if prof.repaired:
        shown = ", ".join(prof.repaired[:5]) + (", ..." if len(prof.repaired) > 5 else "")
        count = f"{len(prof.repaired):,} task" + ("s" if len(prof.repaired) > 1 else "")
        warnings.warn(
            ProfileRepairWarning(f"{path}: repaired non-monotone times (Eq. 1/2) of {count} ({shown})"),
            stacklevel=2,
        )
    return prof


def write_profile_csv(profile: Profile, path: str | Path) -> None:
    """Write a profile in the format :func:`load_profile_csv` reads."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        cmds = list(profile.commands)
        w.writerow(["task", *(["command"] if cmds else []), *range(1, profile.p + 1)])
        for r, (name, row) in enumerate(zip(profile.names, profile.times.tolist())):
            w.writerow([name, *([cmds[r]] if cmds else []), *(repr(float(v)) for v in row)])
