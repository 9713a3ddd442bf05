#!/usr/bin/env python3
"""Derive gpuweave's bundled throughput table from Gavel's ``simulation_throughputs.json``.

Source: stanford-futuredata/gavel, commit c4fa40097339e9608ab71fd64c8bdea96a5e4a4c,
file ``scheduler/simulation_throughputs.json`` (MIT licence). The JSON is
``{worker_type: {"('<job type>', scale_factor)": {"null": isolated_tput, <pair keys>: [a, b]}}}``;
only the isolated (``"null"``) values are kept, in iterations (steps) per second for the whole job.

Output: ``src/gpuweave/workload/data/gavel_throughputs.csv`` with the columns
``job_type,gpu_model,num_gpus,consolidated,throughput``.

* ``k80``/``p100``/``v100`` give ``consolidated=1`` rows (the job's GPUs on one server),
  ``*_unconsolidated`` give ``consolidated=0`` rows (GPUs spread over servers).
* Single-GPU rows are written once, as ``consolidated=1``: a one-GPU job cannot be spread, and Gavel's
  unconsolidated single-GPU values are identical to the consolidated ones (this script checks that and
  stops if it ever stops being true). :class:`gpuweave.workload.profiles.ProfileStore` answers both
  ``consolidated=True`` and ``False`` for one GPU from that row.
* Zeros are kept: they mark a known-infeasible entry (k80 ResNet-50 bs128 at 2/4/8 GPUs).
* Entries absent from the JSON (k80_unconsolidated ResNet-50 bs64/bs128 at 2/4/8 GPUs) stay absent.

Usage (run from the repository root, when the shared data is at ../shared)::

    python tools/derive_gavel_profiles.py ../shared/data/gavel/simulation_throughputs.json \
        src/gpuweave/workload/data/gavel_throughputs.csv

The run is deterministic: the same JSON always gives the same bytes.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
from pathlib import Path

# Gavel worker type -> (canonical GPU model, consolidated flag).
WORKER_TYPES: dict[str, tuple[str, int]] = {
    "k80": ("K80", 1),
    "p100": ("P100", 1),
    "v100": ("V100", 1),
    "k80_unconsolidated": ("K80", 0),
    "p100_unconsolidated": ("P100", 0),
    "v100_unconsolidated": ("V100", 0),
}

HEADER = (
    "# Derived from stanford-futuredata/gavel@c4fa40097339e9608ab71fd64c8bdea96a5e4a4c "
    "scheduler/simulation_throughputs.json (MIT); isolated ('null') throughputs in iterations/s for "
    "the whole job; see SOURCES.md. Regenerate with tools/derive_gavel_profiles.py.\n"
)


def derive_rows(throughputs: dict) -> list[tuple[str, str, int, int, float]]:
    """Return the sorted table rows ``(job_type, gpu_model, num_gpus, consolidated, throughput)``."""
    unknown = sorted(set(throughputs) - set(WORKER_TYPES))
    if unknown:
        raise SystemExit(f"unexpected worker types in the JSON: {unknown}")
    rows: dict[tuple[str, str, int, int], float] = {}
    single_unconsolidated: dict[tuple[str, str], float] = {}
    for worker_type, (gpu_model, consolidated) in WORKER_TYPES.items():
        for key, entry in throughputs[worker_type].items():
            job_type, scale_factor = ast.literal_eval(key)
            value = float(entry["null"])
            if value < 0:
                raise SystemExit(f"{worker_type} {key}: negative throughput {value}")
            if scale_factor == 1 and not consolidated:
                single_unconsolidated[(job_type, gpu_model)] = value
                continue
            rows[(job_type, gpu_model, int(scale_factor), consolidated)] = value
    for (job_type, gpu_model), value in single_unconsolidated.items():
        if rows.get((job_type, gpu_model, 1, 1)) != value:
            raise SystemExit(
                f"{job_type} on {gpu_model}: single-GPU unconsolidated value {value} differs from the "
                "consolidated one; the one-row-per-single-GPU convention no longer holds"
            )
    return sorted(
        ((jt, gpu, n, c, v) for (jt, gpu, n, c), v in rows.items()),
        key=lambda r: (r[0], r[1], r[2], -r[3]),
    )


def render_csv(rows: list[tuple[str, str, int, int, float]]) -> str:
    """The CSV text, with a one-line provenance comment before the header."""
    buffer = io.StringIO()
    buffer.write(HEADER)
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["job_type", "gpu_model", "num_gpus", "consolidated", "throughput"])
    for job_type, gpu_model, num_gpus, consolidated, value in rows:
        writer.writerow([job_type, gpu_model, num_gpus, consolidated, repr(value)])
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("json_path", type=Path, help="Gavel simulation_throughputs.json")
    parser.add_argument("out_csv", type=Path, help="output CSV path")
    args = parser.parse_args()
    throughputs = json.loads(args.json_path.read_text(encoding="utf-8"))
    rows = derive_rows(throughputs)
    args.out_csv.write_text(render_csv(rows), encoding="utf-8")
    print(f"wrote {len(rows)} rows to {args.out_csv}")


if __name__ == "__main__":
    main()
