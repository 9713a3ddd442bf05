"""A MIG plan as a result directory (``gpuweave plan mig ... --out DIR`` and MIG sweep cells).

Files: ``schedule.json`` (the schedule JSON of ``docs/schedule-json.md``, readable by ``gpuweave mig validate``
and ``gpuweave run mig``), ``tasks.csv`` (task, gpu_index, size, start_slice, start, end, seconds) and
``summary.json`` with the result core (:mod:`gpuweave.results`, kind ``mig``) whose metrics are the makespan,
the lower bound, their ratio and the number of reconfiguration operations.

A sweep cell is a :class:`MigBatchConfig`: a batch drawn by the Sec. 6.3 generator (:mod:`gpuweave.mig.generator`)
and one planner; :func:`run_generated_batch` draws, plans, checks and writes it. Complexity: the planner's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuweave.checks import SEED
from gpuweave.mig.generator import generate, preset, scaling, time_range
from gpuweave.mig.problem import check_problem_size
from gpuweave.mig.registry import get_planner, plan
from gpuweave.mig.schedule import Schedule
from gpuweave.mig.validate import check_schedule
from gpuweave.results import ResultCore, config_key, write_csv, write_result

TASK_COLUMNS = ("task", "gpu_index", "size", "start_slice", "start", "end")


def mig_metrics(schedule: Schedule) -> dict[str, float | int | None]:
    """The flat metrics of a MIG plan (ratio ``None`` when the lower bound is 0)."""
    return {
        "makespan_s": schedule.makespan,
        "lower_bound_s": schedule.lower_bound,
        "ratio": schedule.ratio if schedule.lower_bound > 0 else None,
        "reconfigurations": len(schedule.operations),
        "tasks": len(schedule.tasks),
        "gpus": schedule.gpus,
    }


def write_mig_result(out_dir: str | Path, schedule: Schedule, config: dict[str, Any], seed: int | None = None) -> Path:
    """Write schedule.json, tasks.csv and summary.json into ``out_dir`` (whole or not at all)."""

    def write_files(staging: Path) -> None:
        # exactly the bytes of `plan mig --json` (full precision), so the file validates and runs the same
        (staging / "schedule.json").write_text(schedule.json_text())
        tasks = sorted(schedule.tasks, key=lambda t: (t.start, t.gpu_index, t.start_slice))
        write_csv(
            staging / "tasks.csv",
            TASK_COLUMNS,
            ((t.task, t.gpu_index, t.size, t.start_slice, t.start, t.end) for t in tasks),
        )

    core = ResultCore("mig", {**config, "algo": schedule.algo or config.get("algo")}, seed, mig_metrics(schedule))
    return write_result(out_dir, core, write_files)


class MigBatchConfig(BaseModel):
    """One MIG sweep cell: a generated batch (FAR paper Sec. 6.3) planned by one planner."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    algo: str = Field("far", description="MIG planner (gpuweave mig algos)")
    gpu: str = Field("A100", description="MIG GPU model")
    gpus: int = Field(1, ge=1, description="identical GPUs (limit mig_gpus)")
    n: int = Field(15, ge=1, description="tasks in the batch (limit mig_tasks)")
    scaling: str = Field("mixed", description="poor | mixed | good")
    times: str = Field("wide", description="wide | narrow")
    p_sup: float = Field(0.0, ge=0.0, le=1.0, description="fraction of memory-bound tasks in groups >= 2")
    preset: str = Field("paper", description="generator preset: paper | authors_code")
    seed: int = Field(0, ge=SEED.lo, le=SEED.hi, description="seed of the generator")

    @model_validator(mode="after")
    def _known_names(self) -> MigBatchConfig:
        """Unknown planner, GPU, scaling, time range or preset, or a batch over the limits: one error before any
        cell runs."""
        check_problem_size(self.n, self.gpus)
        get_planner(self.algo)
        scaling(self.gpu, self.scaling)
        time_range(self.times)
        preset(self.preset)
        return self

    def key(self) -> str:
        return config_key(self.model_dump(mode="json"))


def run_generated_batch(config: MigBatchConfig, out_dir: str | Path) -> dict[str, Any]:
    """Draw the batch, plan it, check the schedule and write the result directory; returns the metrics."""
    problem = generate(
        config.n,
        scaling(config.gpu, config.scaling),
        gpu=config.gpu,
        p_sup=config.p_sup,
        times=time_range(config.times),
        seed=config.seed,
        preset_name=config.preset,
    )
    problem = dataclasses.replace(problem, gpus=config.gpus)
    schedule = plan(problem, config.algo)
    check_schedule(schedule, problem)
    write_mig_result(out_dir, schedule, config.model_dump(mode="json"), config.seed)
    return mig_metrics(schedule)
