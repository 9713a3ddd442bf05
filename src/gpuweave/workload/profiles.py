"""Throughput profiles: how fast a job type runs on a given GPU allocation.

A profile entry is the isolated throughput, in **iterations (steps) per second of the whole job**, of
``job_type`` on ``num_gpus`` GPUs of model ``gpu_model``, either consolidated (all GPUs on one server) or
not (GPUs spread over servers). The bundled table is derived from Gavel's
``scheduler/simulation_throughputs.json`` (stanford-futuredata/gavel@c4fa400, MIT; Narayanan et al.,
OSDI'20); see ``data/SOURCES.md`` and ``tools/derive_gavel_profiles.py``.

Semantics of :meth:`ProfileStore.rate`:

* a present entry with throughput ``0`` is *known infeasible* (the job does not fit): ``rate`` returns
  ``0.0`` and the caller must not place the job there;
* an absent entry raises :class:`~gpuweave.errors.MissingProfileError`, naming the job type, GPU model and
  GPU count, unless extrapolation applies (below);
* single-GPU entries answer both ``consolidated=True`` and ``False`` (one GPU cannot be spread);
* ``extrapolate=True`` (off by default) answers GPU counts *above the largest profiled count* for that
  (job type, GPU model, consolidation) with the per-GPU throughput of the largest profiled count times
  ``num_gpus`` (linear scaling, an optimistic assumption used for the 12-64 GPU jobs of Philly-derived
  traces). Counts below the largest profiled one that are not profiled (3, 5, 7 GPUs) still raise, and
  so do types profiled on one GPU only (A3C, CycleGAN, Recommendation in Gavel's table): the source
  gives no evidence that they run data-parallel at all.

``rate`` is a single dict lookup on a tuple key on the hot path; no pandas anywhere in this module.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from gpuweave.checks import GPUS, THROUGHPUT, parse
from gpuweave.errors import InputError, MissingProfileError
from gpuweave.files import check_path, check_unique_columns, csv_rows, read_input_text
from gpuweave.workload.pollux import PolluxJobModel, load_pollux_job_model
from gpuweave.workload.traces.gpu_names import canonical_gpu_model, is_known_gpu_model

PROFILE_COLUMNS: tuple[str, ...] = ("job_type", "gpu_model", "num_gpus", "consolidated", "throughput")
BUNDLED_PROFILES = "gavel_throughputs.csv"

_Key = tuple[str, str, int, bool]


@dataclass(frozen=True, slots=True)
class ProfileRow:
    """One profile entry: the whole job's isolated throughput in iterations/s (0 = infeasible)."""

    job_type: str
    gpu_model: str
    num_gpus: int
    consolidated: bool
    throughput: float


class ProfileStore:
    """Isolated throughputs keyed by ``(job_type, gpu_model, num_gpus, consolidated)``.

    Build one with :func:`load_profiles` (a CSV file, by default the bundled Gavel table) or
    :meth:`from_rows` (tests, programmatic tables).
    """

    __slots__ = ("_rates", "_rows", "_largest", "_scales", "_job_types", "_gpu_models", "extrapolate", "source")

    def __init__(self, rows: Iterable[ProfileRow], *, extrapolate: bool = False, source: str = "<rows>") -> None:
        self.extrapolate = bool(extrapolate)
        self.source = source
        self._rows: dict[_Key, ProfileRow] = {}
        self._rates: dict[_Key, float] = {}
        # (job_type, gpu_model, consolidated) -> (largest profiled count, its throughput)
        self._largest: dict[tuple[str, str, bool], tuple[int, float]] = {}
        self._scales: dict[str, set[int]] = {}
        for row in rows:
            key = (row.job_type, row.gpu_model, row.num_gpus, row.consolidated)
            if key in self._rows:
                raise InputError(
                    f"duplicate profile entry {row.job_type!r} on {row.num_gpus}x {row.gpu_model} "
                    f"(consolidated={int(row.consolidated)})",
                    file=source,
                )
            self._rows[key] = row
            self._rates[key] = row.throughput
            self._scales.setdefault(row.job_type, set()).add(row.num_gpus)
        # One GPU cannot be spread over servers: a single-GPU entry answers both placements.
        for (job_type, gpu_model, num_gpus, consolidated), row in self._rows.items():
            if num_gpus == 1:
                self._rates.setdefault((job_type, gpu_model, 1, not consolidated), row.throughput)
        for (job_type, gpu_model, num_gpus, consolidated), throughput in self._rates.items():
            group = (job_type, gpu_model, consolidated)
            best = self._largest.get(group)
            if best is None or num_gpus > best[0]:
                self._largest[group] = (num_gpus, throughput)
        self._job_types = tuple(sorted(self._scales))
        self._gpu_models = tuple(sorted({row.gpu_model for row in self._rows.values()}))

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_rows(
        cls,
        rows: Iterable[ProfileRow | tuple[str, str, int, bool | int, float] | Mapping[str, object]],
        *,
        extrapolate: bool = False,
        source: str = "<rows>",
    ) -> "ProfileStore":
        """Build a store from :class:`ProfileRow` objects, 5-tuples or dicts with the profile columns."""
        built: list[ProfileRow] = []
        for item in rows:
            if isinstance(item, ProfileRow):
                built.append(item)
                continue
            values: tuple[Any, ...]
            if isinstance(item, Mapping):
                values = tuple(item[name] for name in PROFILE_COLUMNS)
            else:
                values = tuple(item)
            job_type, gpu_model, num_gpus, consolidated, throughput = values
            built.append(
                ProfileRow(str(job_type), str(gpu_model), int(num_gpus), bool(consolidated), float(throughput))
            )
        return cls(built, extrapolate=extrapolate, source=source)

    # ----------------------------------------------------------------- lookups
    def rate(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        """Iterations/s of the whole job; 0.0 = known infeasible; MissingProfileError if absent."""
        value = self._rates.get((job_type, gpu_model, num_gpus, consolidated))
        if value is not None:
            return value
        return self._missing(job_type, gpu_model, num_gpus, consolidated)

    def _missing(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool) -> float:
        if self.extrapolate:
            best = self._largest.get((job_type, gpu_model, bool(consolidated)))
            if best is not None and num_gpus > best[0] >= 2:
                largest, throughput = best
                value = throughput / largest * num_gpus
                self._rates[(job_type, gpu_model, num_gpus, bool(consolidated))] = value
                return value
        where = "consolidated" if consolidated else "unconsolidated"
        if job_type not in self._scales:
            detail = f"unknown job type {job_type!r}"
        elif gpu_model not in self._gpu_models:
            detail = f"unknown GPU model {gpu_model!r} (known: {', '.join(self._gpu_models)})"
        else:
            counts = sorted(
                n for (jt, gm, n, c) in self._rates if jt == job_type and gm == gpu_model and c == consolidated
            )
            detail = f"profiled counts for it: {counts or 'none'}"
            if not self.extrapolate and counts and num_gpus > counts[-1] >= 2:
                detail += (
                    "; scale the largest one linearly with extrapolate=True (CLI: --extrapolate; run config or sweep: "
                    "extrapolate_profiles: true)"
                )
        raise MissingProfileError(
            f"no throughput profile for job type {job_type!r} on {num_gpus} x {gpu_model} ({where}): {detail}",
            file=self.source,
        )

    def has(self, job_type: str, gpu_model: str, num_gpus: int, consolidated: bool | None = None) -> bool:
        """True when :meth:`rate` answers (possibly 0.0 or extrapolated) instead of raising.

        ``consolidated=None`` asks whether either placement is profiled.
        """
        options = (True, False) if consolidated is None else (consolidated,)
        for option in options:
            if (job_type, gpu_model, num_gpus, option) in self._rates:
                return True
            if self.extrapolate:
                best = self._largest.get((job_type, gpu_model, option))
                if best is not None and num_gpus > best[0] >= 2:
                    return True
        return False

    def job_types(self) -> tuple[str, ...]:
        """All job types, sorted."""
        return self._job_types

    def gpu_models(self) -> tuple[str, ...]:
        """All GPU models, sorted."""
        return self._gpu_models

    def scale_factors(self, job_type: str) -> tuple[int, ...]:
        """The profiled GPU counts of ``job_type`` (any GPU model), ascending."""
        scales = self._scales.get(job_type)
        if scales is None:
            raise MissingProfileError(f"unknown job type {job_type!r}", file=self.source, field="job_type")
        return tuple(sorted(scales))

    def rows(self) -> list[ProfileRow]:
        """The stored entries (single-GPU entries once), sorted."""
        return [self._rows[key] for key in sorted(self._rows, key=lambda k: (k[0], k[1], k[2], not k[3]))]

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, job_type: object) -> bool:
        return job_type in self._scales

    def __repr__(self) -> str:
        return (
            f"ProfileStore({len(self)} entries, {len(self._job_types)} job types, "
            f"GPUs {list(self._gpu_models)}, extrapolate={self.extrapolate}, source={self.source!r})"
        )


# --------------------------------------------------------------------- loading
def _parse_rows(text: str, source: str) -> list[ProfileRow]:
    """The rows of a profile CSV (``#`` lines are comments); InputError on a missing column, bad cell or duplicate."""
    lines = [line for line in text.lstrip("\ufeff").splitlines() if line.strip() and not line.lstrip().startswith("#")]
    reader = csv_rows(io.StringIO("\n".join(lines)), file=source)
    header = next(reader, None)
    if header is None:
        raise InputError("empty profile file; expected a header " + ",".join(PROFILE_COLUMNS), file=source)
    header = [name.strip() for name in header]
    check_unique_columns(header, file=source)
    for name in PROFILE_COLUMNS:
        if name not in header:
            raise InputError(
                f"missing column '{name}' (expected columns: {', '.join(PROFILE_COLUMNS)})",
                file=source,
                row=0,
                field=name,
            )
    index = {name: header.index(name) for name in PROFILE_COLUMNS}
    rows: list[ProfileRow] = []
    seen: dict[tuple[str, str, int, bool], int] = {}
    for row_number, record in enumerate(reader, start=1):
        row = _parse_row(record, index, source, row_number)
        key = (row.job_type, row.gpu_model, row.num_gpus, row.consolidated)
        if key in seen:
            raise InputError(
                f"duplicate entry for {row.job_type!r} on {key[2]} x {row.gpu_model} "
                f"(consolidated={int(row.consolidated)}); first given in row {seen[key]}",
                file=source,
                row=row_number,
                field="job_type",
            )
        seen[key] = row_number
        rows.append(row)
    return rows


def _parse_row(record: list[str], index: dict[str, int], source: str, row_number: int) -> ProfileRow:
    """One data row: job type, GPU model (canonical when known), integer GPUs >= 1, 0/1, throughput >= 0."""

    def cell(name: str) -> str:
        position = index[name]
        if position >= len(record) or record[position].strip() == "":
            raise InputError(f"empty value; expected {name}", file=source, row=row_number, field=name)
        return record[position].strip()

    job_type = cell("job_type")
    raw_model = cell("gpu_model")
    gpu_model = canonical_gpu_model(raw_model) if is_known_gpu_model(raw_model) else raw_model
    count = parse(cell("num_gpus"), GPUS, file=source, row=row_number, field="num_gpus")
    consolidated_text = cell("consolidated").lower()
    if consolidated_text in {"1", "true", "yes"}:
        consolidated = True
    elif consolidated_text in {"0", "false", "no"}:
        consolidated = False
    else:
        raise InputError(
            f"expected 0 or 1, got {consolidated_text!r}", file=source, row=row_number, field="consolidated"
        )
    # iterations/s, 0 = does not fit
    throughput = parse(cell("throughput"), THROUGHPUT, file=source, row=row_number, field="throughput")
    return ProfileRow(job_type, gpu_model, count, consolidated, float(throughput))


_BUNDLED_ROWS: list[ProfileRow] | None = None


def load_profiles(path: str | Path | None = None, *, extrapolate: bool = False) -> ProfileStore | PolluxJobModel:
    """Load a profile table: ``None`` = the bundled Gavel table, else a CSV with :data:`PROFILE_COLUMNS`, or
    a directory of Pollux application traces (:mod:`gpuweave.workload.pollux`, rates per placement shape).

    Lines starting with ``#`` are comments. Bad cells raise :class:`~gpuweave.errors.InputError` naming
    the file, the 1-based data row and the column.
    """
    global _BUNDLED_ROWS
    if path is None:
        if _BUNDLED_ROWS is None:
            text = resources.files("gpuweave.workload").joinpath("data", BUNDLED_PROFILES).read_text(encoding="utf-8")
            _BUNDLED_ROWS = _parse_rows(text, f"<bundled {BUNDLED_PROFILES}>")
        return ProfileStore(_BUNDLED_ROWS, extrapolate=extrapolate, source=f"<bundled {BUNDLED_PROFILES}>")
    file = Path(check_path(str(path), field="profiles"))
    if file.is_dir():
        if extrapolate:
            raise InputError("extrapolation applies to profile CSVs, not to Pollux's job model", file=file)
        return load_pollux_job_model(file)
    text = read_input_text(file, what="profile file")
    return ProfileStore(_parse_rows(text, str(file)), extrapolate=extrapolate, source=str(file))
