"""The optional ``mig_profile`` column of a task or job table: a MIG instance by NVIDIA's name (``3g.20gb``).

Problem: the openb pod-list reader (``cluster fill``'s tasks) and the trace schema (``trace validate``/``info``)
both read the column the same way. Rules, one line naming the file, row and field at the first breach:

* the cell is a profile name in NVIDIA's spelling (:func:`gpuweave.hardware.mig_profiles.parse_mig_profile`; an
  empty cell: no profile) that some MIG-capable GPU of the catalog has modelled (else the reason: malformed, media
  extensions, or an instance gpuweave does not model);
* a task with a profile asks exactly one GPU (field of the GPU count);
* its ``gpu_milli``, when given, is the profile's share of the GPU within 1 milli-GPU (slices over the GPU's slices,
  rounded down: ``3g.20gb``, 3 of an A100's 7 slices, is 428, so 427..429 agree); when empty it becomes that
  share.

Which GPU of a cluster has the profile is checked where the cluster is known
(:mod:`gpuweave.cluster.sharing.profiles`). The two readers of openb pod lists (``cluster fill``'s tasks and
``trace --format alibaba-pods``) read ``gpu_milli`` and the column through one function,
:func:`read_pod_shares`, over every pod before any is dropped, so one file is accepted or refused alike by both.
Complexity: O(rows), one parse per distinct cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import all_gpus
from gpuweave.hardware.mig_profiles import describe_profiles, parse_mig_profile, share_milli, why_unknown
from gpuweave.workload.traces._tables import ROW, missing_mask, numeric_column, row_numbers

if TYPE_CHECKING:
    import pandas as pd

COLUMN = "mig_profile"


def read_mig_profiles(
    frame: "pd.DataFrame",
    *,
    file: str | Path,
    num_gpus: np.ndarray,
    gpu_milli: np.ndarray,
    gpus_field: str,
    milli_field: str,
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """The column's profiles of ``frame`` (module docstring): the distinct canonical names, each row's index into
    them (-1: none) and ``gpu_milli`` (float, NaN where empty) with each profile row's empty cell set to its share.
    InputError at the first bad row."""
    import pandas as pd

    rows = row_numbers(frame)
    cells = frame[COLUMN]
    empty = missing_mask(cells).to_numpy()
    text = pd.Series([None if e else str(v).strip() for v, e in zip(cells.tolist(), empty.tolist())], dtype=object)
    codes, uniques = pd.factorize(text, use_na_sentinel=True)
    names: list[str] = []
    position_of: dict[str, int] = {}
    canonical = np.full(len(uniques) + 1, -1, dtype=np.int64)  # code -> index into names; code -1 (empty) -> -1
    seen, first = np.unique(codes, return_index=True)  # each code's first row (code -1: the empty cells)
    first_row = dict(zip(seen.tolist(), first.tolist()))
    for code, cell in enumerate(uniques.tolist()):
        row = rows[first_row[code]]
        profile = parse_mig_profile(cell, file=file, row=row, field=COLUMN)
        if share_milli(profile.name) is None:
            known = f"no GPU of the catalog has MIG profile {profile.name} ({describe_profiles(tuple(all_gpus()))})"
            raise InputError(why_unknown(profile.name) or known, file=file, row=row, field=COLUMN)
        canonical[code] = position_of.setdefault(profile.name, len(names))
        if canonical[code] == len(names):
            names.append(profile.name)
    index = canonical[codes]
    asked = index >= 0
    _check_one_gpu(asked, num_gpus, index, names, rows, file, gpus_field)
    share = np.array([share_milli(n) for n in names] + [0], dtype=np.float64)[index]
    milli = np.asarray(gpu_milli, dtype=np.float64).copy()
    given = asked & ~np.isnan(milli)
    # the share is a fraction of slices (3 of 7: 428.57 milli-GPU, 428 kept): 1 milli-GPU either way agrees
    off = given & (np.abs(milli - share) > 1.0)
    if off.any():
        position = int(np.flatnonzero(off)[0])
        name = names[int(index[position])]
        raise InputError(
            f"gpu_milli {milli[position]:g} disagrees with MIG profile {name} ({int(share[position])} milli-GPU); "
            "leave it empty or give the profile's share",
            file=file,
            row=rows[position],
            field=milli_field,
        )
    unstated = asked & np.isnan(milli)
    milli[unstated] = share[unstated]
    return tuple(names), index, milli


def read_pod_shares(
    raw: "pd.DataFrame", *, file: str | Path, num_gpus: np.ndarray
) -> tuple[tuple[str, ...], np.ndarray | None, np.ndarray]:
    """An openb pod list's ``gpu_milli`` (an integer >= 0 in every row; empty allowed only on a row naming a MIG
    profile, which gives it) and its ``mig_profile`` column when it has one (:func:`read_mig_profiles`, fields
    ``num_gpu`` and ``gpu_milli``): the profiles' canonical names, each row's index into them (None without the
    column or without any profile) and ``gpu_milli`` as float64 with no NaN. InputError at the first bad row."""
    profiled = COLUMN in raw.columns
    milli = numeric_column(
        raw, "gpu_milli", file=file, unit="milli-GPU", integer=True, minimum=0.0, required=not profiled
    ).to_numpy(dtype=np.float64)
    if not profiled:
        return (), None, milli
    names, index, milli = read_mig_profiles(
        raw, file=file, num_gpus=num_gpus, gpu_milli=milli, gpus_field="num_gpu", milli_field="gpu_milli"
    )
    empty = np.isnan(milli)
    if empty.any():
        row = int(raw[ROW].iloc[int(np.flatnonzero(empty)[0])])
        raise InputError("empty value; expected an integer (milli-GPU)", file=file, row=row, field="gpu_milli")
    return names, (index if names else None), milli


def profile_cells(names: tuple[str, ...], index: np.ndarray | None, rows: int) -> list[str | None]:
    """Each row's profile in canonical spelling, None where it names none (``index`` of :func:`read_pod_shares`)."""
    if index is None:
        return [None] * rows
    shared = [*names, None]  # index -1: no profile
    return [shared[k] for k in index.tolist()]


def _check_one_gpu(
    asked: np.ndarray,
    num_gpus: np.ndarray,
    index: np.ndarray,
    names: list[str],
    rows: list[int],
    file: str | Path,
    field: str,
) -> None:
    """A profile is an instance of one GPU: its task asks exactly one."""
    wrong = asked & (np.asarray(num_gpus) != 1)
    if wrong.any():
        position = int(np.flatnonzero(wrong)[0])
        raise InputError(
            f"a MIG profile ({names[int(index[position])]}) is an instance of one GPU; the task asks for "
            f"{int(num_gpus[position])} GPUs",
            file=file,
            row=rows[position],
            field=field,
        )
