"""Measurement phase: per-kernel-ID mean duration SK and mean following gap SG (paper §3.2, Fig. 6; spec §1.5).

Problem: from T recorded runs of one task (run t has kernels ID_{t,i}, durations K_{t,i} for
i = 1..N_t and gaps G_{t,i} for i = 1..N_t−1, the gap being the idle time from the end of kernel i
to the start of kernel i+1 of the same task), compute for every unique ID j

    SK_j = Σ_t Σ_{i ≤ N_t}   K_{t,i}·δ(ID_{t,i}, j) / Σ_t Σ_{i ≤ N_t}   δ(ID_{t,i}, j)
    SG_j = Σ_t Σ_{i ≤ N_t−1} G_{t,i}·δ(ID_{t,i}, j) / Σ_t Σ_{i ≤ N_t−1} δ(ID_{t,i}, j)

The last kernel of a run contributes no gap; an ID that only ever occurs last has no SG (stored as
absent, read as 0: R-5). Gaps of overlapping kernels (multi-stream) are clamped at 0 (R-4).
The paper's worked example has inconsistent indices (R-20); its intent, a plain mean over all
instances, is what is computed (AC-1).

Complexity: O(Σ_t N_t) time, O(|S_UID|) memory.
Profiles are saved as JSON (``format: gpuweave.fikit.profile``, ``version: 1``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from gpuweave.checks import COUNT, KERNEL_MS, POSITIVE_COUNT, number
from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.kernel.ids import validate_task_key
from gpuweave.limits import check_limit

PROFILE_FORMAT = "gpuweave.fikit.profile"
PROFILE_VERSION = 1


def _check_time(x: object, what: str, *, row: int | None = None, file: str | None = None) -> float:
    """A kernel duration or gap: finite milliseconds in :data:`~gpuweave.checks.KERNEL_MS`."""
    return number(x, KERNEL_MS, file=file, row=row, field=what)


@dataclass(slots=True)
class Profile:
    """Per-task statistics: ``sk[kid]`` mean duration (ms), ``sg[kid]`` mean following gap (ms, may be absent)."""

    task_key: str
    runs: int
    sk: dict[str, float]
    sg: dict[str, float]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def unique_ids(self) -> int:
        return len(self.sk)

    def duration(self, kid: str) -> float | None:
        return self.sk.get(kid)

    def gap(self, kid: str) -> float:
        """SG of ``kid``; absent (only ever last, or unknown) → 0 (R-5, R-6)."""
        return self.sg.get(kid, 0.0)

    def mean_duration(self) -> float:
        """Instance-weighted mean kernel duration, the busy-prediction fallback for unknown IDs (R-6)."""
        if not self.sk:
            return 0.0
        weights = {k: (self.counts.get(k, 0) or 1) for k in self.sk}  # missing/zero count → weight 1
        return sum(v * weights[k] for k, v in self.sk.items()) / sum(weights.values())

    def to_dict(self) -> dict:
        return {
            "format": PROFILE_FORMAT,
            "version": PROFILE_VERSION,
            "task_key": self.task_key,
            "runs": self.runs,
            "kernels": [
                {"id": k, "sk": self.sk[k], "sg": self.sg.get(k), "count": self.counts.get(k, 0)}
                for k in sorted(self.sk)
            ],
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n")

    @classmethod
    def from_dict(cls, data: object, *, file: str | None = None) -> "Profile":
        if not isinstance(data, dict) or data.get("format") != PROFILE_FORMAT:
            raise InputError(f"not a FIKIT profile (expected format {PROFILE_FORMAT!r})", file=file, field="format")
        if data.get("version") != PROFILE_VERSION:
            raise InputError(f"unsupported profile version {data.get('version')!r}", file=file, field="version")
        try:
            key = validate_task_key(data.get("task_key"))
        except InputError as exc:
            raise InputError(exc.message, file=file, field="task_key") from None
        runs = data.get("runs")
        if isinstance(runs, float):
            raise InputError(f"runs must be a positive integer, got {runs!r}", file=file, field="runs")
        runs = number(runs, POSITIVE_COUNT, file=file, field="runs")
        kernels = data.get("kernels")
        if not isinstance(kernels, list):
            raise InputError("missing list 'kernels'", file=file, field="kernels")
        check_limit("trace_kernels", len(kernels), "kernels in the profile", file=file, field="kernels")
        sk: dict[str, float] = {}
        sg: dict[str, float] = {}
        counts: dict[str, int] = {}
        for row, k in enumerate(kernels, 1):
            if not isinstance(k, dict) or not isinstance(k.get("id"), str) or not k["id"]:
                raise InputError("kernel entry needs a string 'id'", file=file, row=row, field="id")
            if "sk" not in k:
                raise InputError("kernel entry needs 'sk'", file=file, row=row, field="sk")
            sk[k["id"]] = _check_time(k["sk"], "sk", row=row, file=file)
            if k.get("sg") is not None:
                sg[k["id"]] = _check_time(k["sg"], "sg", row=row, file=file)
            c = k.get("count", 0)
            if isinstance(c, float):
                raise InputError(f"count must be an integer >= 0, got {c!r}", file=file, row=row, field="count")
            counts[k["id"]] = number(c, COUNT, file=file, row=row, field="count")
        return cls(key, runs, sk, sg, counts)

    @classmethod
    def load(cls, path: str | Path) -> "Profile":
        p = Path(path)
        return cls.from_dict(load_json(p, what="profile file"), file=str(p))


class ProfileBuilder:
    """Accumulates T runs and builds a :class:`Profile` (spec §1.5)."""

    def __init__(self) -> None:
        self._k_sum: dict[str, float] = {}
        self._k_n: dict[str, int] = {}
        self._g_sum: dict[str, float] = {}
        self._g_n: dict[str, int] = {}
        self.runs = 0

    def add_run(self, ids: Sequence[str], durations: Sequence[float], gaps: Sequence[float]) -> None:
        """One run: N kernel IDs, N durations and N−1 gaps (gap i follows kernel i)."""
        n = len(ids)
        if n == 0:
            raise InputError("a measured run needs at least one kernel")
        if len(durations) != n:
            raise InputError(f"run has {n} kernel ids but {len(durations)} durations", field="durations")
        if len(gaps) != n - 1:
            raise InputError(f"run has {n} kernels so needs {n - 1} gaps, got {len(gaps)}", field="gaps")
        ks = [_check_time(k, "duration", row=i + 1) for i, k in enumerate(durations)]
        gs = [_check_time(g, "gap", row=i + 1) for i, g in enumerate(gaps)]
        k_sum, k_n, g_sum, g_n = self._k_sum, self._k_n, self._g_sum, self._g_n
        for i, kid in enumerate(ids):
            if not isinstance(kid, str) or not kid:
                raise InputError("kernel id must be a non-empty string", row=i + 1, field="id")
            k_sum[kid] = k_sum.get(kid, 0.0) + ks[i]
            k_n[kid] = k_n.get(kid, 0) + 1
            if i < n - 1:
                g_sum[kid] = g_sum.get(kid, 0.0) + gs[i]
                g_n[kid] = g_n.get(kid, 0) + 1
        self.runs += 1

    def add_run_times(self, ids: Sequence[str], starts: Sequence[float], ends: Sequence[float]) -> None:
        """One run given start/end times in launch order: K = end − start, G = max(0, start_{i+1} − end_i) (R-4)."""
        if not (len(ids) == len(starts) == len(ends)):
            raise InputError("ids, starts and ends must have the same length")
        durations = [e - s for s, e in zip(starts, ends)]
        gaps = [max(0.0, starts[i + 1] - ends[i]) for i in range(len(ids) - 1)]
        self.add_run(ids, durations, gaps)

    def build(self, task_key: str, *, gap_scale: float = 1.0) -> Profile:
        if self.runs == 0:
            raise InputError("no measured runs: cannot build a profile")
        validate_task_key(task_key)
        sk = {k: self._k_sum[k] / self._k_n[k] for k in self._k_sum}
        sg = {k: gap_scale * self._g_sum[k] / self._g_n[k] for k in self._g_sum}
        return Profile(task_key, self.runs, sk, sg, dict(self._k_n))


def amortized_jct(jct_f: float, ratio: float, n_measure: int, n_total: int) -> float:
    """Mean JCT over N runs of which N_m measured (spec §1.5): JCT_f·(1 + (r − 1)·N_m/N) (AC-8)."""
    if n_total <= 0 or not 0 <= n_measure <= n_total:
        raise InputError("need 0 <= n_measure <= n_total and n_total > 0")
    return jct_f * (1.0 + (ratio - 1.0) * n_measure / n_total)
