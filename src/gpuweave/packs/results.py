"""A packs co-schedule as a result directory (``gpuweave plan packs ... --out DIR`` and packs sweep cells).

Files: ``plan.json`` (the plan of :mod:`gpuweave.packs.plan_io`, input of ``gpuweave run packs``; the measured
algorithm running time is left out so reruns are byte-identical), ``packs.csv`` (one row per task: pack, pack
start, pack cost, task, processors, time) and ``summary.json`` with the result core (:mod:`gpuweave.results`,
kind ``packs``): cost, relative cost, packing ratio, mean response time and its relative value (Sec. 6.2).

A sweep cell is a :class:`PacksWorkloadConfig`: a SYN-REF profile (or one of the paper's Workloads I-III) drawn
with a seed and co-scheduled by one algorithm; :func:`run_workload` solves, checks and writes it.
Complexity: the algorithm's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuweave.checks import SEED
from gpuweave.errors import InputError
from gpuweave.limits import check_limit
from gpuweave.packs.data import paper_numbers
from gpuweave.packs.metrics import Metrics, evaluate, response_time
from gpuweave.packs.model import PackSchedule, Profile
from gpuweave.packs.plan_io import plan_to_dict
from gpuweave.packs.registry import get_algorithm, solve
from gpuweave.packs.workloads import syn_ref, workload
from gpuweave.results import ResultCore, config_key, write_csv, write_json, write_result

PACK_COLUMNS = ("pack", "pack_start", "pack_cost", "task", "procs", "time")
SYNTHETIC = "syn-ref"


def packs_metrics(profile: Profile, schedule: PackSchedule, k: int, metrics: Metrics) -> dict[str, float | int]:
    """The flat metrics of a co-schedule (no measured timings: they would break byte-identical reruns)."""
    return {
        "cost_s": metrics.cost,
        "baseline_cost_s": profile.baseline_cost(),
        "relative_cost": metrics.relative_cost,
        "packing_ratio": metrics.packing_ratio,
        "response_time_s": response_time(schedule),
        "relative_response_time": metrics.relative_response_time,
        "packs": len(schedule.packs),
        "tasks": profile.n,
        "procs": profile.p,
        "k": k,
    }


def write_packs_result(
    out_dir: str | Path, profile: Profile, schedule: PackSchedule, k: int, config: dict[str, Any], seed: int | None
) -> Path:
    """Write plan.json, packs.csv and summary.json into ``out_dir`` (whole or not at all)."""
    metrics = evaluate(profile, schedule)

    def write_files(staging: Path) -> None:
        plan = plan_to_dict(profile, schedule, k, dataclasses.replace(metrics, runtime_ms=None), seed=seed)
        write_json(staging / "plan.json", plan)
        rows = (
            (b, pk.start, pk.cost, profile.names[i], j, t)
            for b, pk in enumerate(schedule.packs)
            for i, j, t in zip(pk.tasks, pk.procs, pk.times)
        )
        write_csv(staging / "packs.csv", PACK_COLUMNS, rows)

    core = ResultCore("packs", config, seed, packs_metrics(profile, schedule, k, metrics))
    return write_result(out_dir, core, write_files)


class PacksWorkloadConfig(BaseModel):
    """One packs sweep cell: a seeded synthetic profile co-scheduled by one algorithm."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    algo: str = Field("pack-by-pack-9", description="packs algorithm (gpuweave packs algos)")
    workload: str = Field(SYNTHETIC, description="syn-ref (n tasks on p processors) or the paper's I, II, III")
    n: int = Field(20, ge=1, description="tasks of a syn-ref profile")
    p: int = Field(16, ge=1, description="processors of a syn-ref profile")
    k: int | None = Field(None, ge=1, description="at most k tasks per pack (default: p)")
    seed: int = Field(0, ge=SEED.lo, le=SEED.hi, description="seed of the profile and of randomised algorithms")

    @model_validator(mode="after")
    def _known_names(self) -> PacksWorkloadConfig:
        """Unknown algorithm or workload, or a profile over the limits: one error before any cell runs."""
        check_limit("packs_tasks", self.n, "tasks of the syn-ref profile", field="n")
        check_limit("packs_procs", self.p, "processors of the syn-ref profile", field="p")
        get_algorithm(self.algo)
        known = [SYNTHETIC, *paper_numbers()["workloads"]]
        if self.workload not in known:
            raise InputError(f"unknown workload {self.workload!r} (known: {', '.join(known)})", field="workload")
        return self

    def key(self) -> str:
        return config_key(self.model_dump(mode="json"))

    def profile(self) -> Profile:
        if self.workload == SYNTHETIC:
            return syn_ref(self.n, self.p, self.seed)
        return workload(self.workload, self.seed)


def run_workload(config: PacksWorkloadConfig, out_dir: str | Path) -> dict[str, Any]:
    """Draw the profile, solve, validate and write the result directory; returns the metrics."""
    profile = config.profile()
    k = profile.p if config.k is None else config.k
    schedule = solve(config.algo, profile, k, seed=config.seed)
    schedule.validate(profile, k)
    write_packs_result(out_dir, profile, schedule, k, config.model_dump(mode="json"), config.seed)
    return packs_metrics(profile, schedule, k, evaluate(profile, schedule))
