"""Converter for Tiresias simulator job traces (SymbioticLab/Tiresias, Gu et al., NSDI'19).

Source format: ``simulator/60_job.csv`` at commit 959f9b0 (Apache-2.0), columns
``job_id,num_gpu,submit_time,iterations,model_name,duration,interval``: ``submit_time`` and ``duration``
in seconds, ``interval`` the gap to the next submission (redundant), ``iterations`` unused by Tiresias.
The legacy ``tf_job.csv`` schema (``start_time``, ``model_size``...) is rejected with a missing-column error.

Mapping to the schema: ``job_id`` as is, ``arrival = submit_time``, ``num_gpus = num_gpu``,
``duration`` as is (taken as the run time on the reference GPU). Tiresias' models (vgg19, resnet50,
googlenet...) are TensorFlow benchmarks with no throughput profile, so ``job_type`` is drawn by the seeded
uniform rule of :mod:`gpuweave.workload.traces.job_types`; the original model and iteration count are
kept in the extra columns ``tiresias_model`` and ``tiresias_iterations``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.checks import GPUS, ITERATIONS, MAX_SECONDS
from gpuweave.workload.profiles import ProfileStore
from gpuweave.workload.traces._tables import ROW, numeric_column, read_csv_strings, require_columns, require_values
from gpuweave.workload.traces.job_types import assign_job_types

if TYPE_CHECKING:
    import pandas as pd

TIRESIAS_COLUMNS = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration")


def read_tiresias_trace(
    path: str | Path,
    *,
    seed: int = 0,
    profiles: ProfileStore | None = None,
    reference_gpu: str = "V100",
) -> "pd.DataFrame":
    """Convert a Tiresias job CSV to a schema frame."""
    import pandas as pd

    file = Path(path)
    raw = read_csv_strings(file)
    require_columns(raw, TIRESIAS_COLUMNS, file=file, what="a Tiresias job trace")
    require_values(raw, ("job_id",), file=file, message="empty job id")
    arrival = numeric_column(raw, "submit_time", file=file, unit="seconds", maximum=MAX_SECONDS, minimum=0.0)
    num_gpus = numeric_column(
        raw, "num_gpu", file=file, unit="GPUs", maximum=GPUS.hi, integer=True, minimum=1.0
    ).astype("int64")
    duration = numeric_column(raw, "duration", file=file, unit="seconds", maximum=MAX_SECONDS, strictly_above=0.0)
    iterations = numeric_column(
        raw, "iterations", file=file, unit="iterations", maximum=ITERATIONS.hi, required=False, minimum=0.0
    )
    job_types, notes = assign_job_types(num_gpus.to_numpy(), seed, profiles, reference_gpu)
    return pd.DataFrame(
        {
            "job_id": raw["job_id"].str.strip().to_numpy(),
            "arrival": arrival.to_numpy(),
            "num_gpus": num_gpus.to_numpy(),
            "job_type": job_types,
            "duration": duration.to_numpy(),
            "note": [f"Tiresias trace {file.name}; {note}" for note in notes],
            "tiresias_model": raw["model_name"].str.strip().to_numpy(),
            "tiresias_iterations": iterations.to_numpy(),
            ROW: raw[ROW].to_numpy(),
        }
    )
