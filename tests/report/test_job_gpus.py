"""Each job's GPUs over time (report/plots.py: plot_job_gpus): drawn only for runs in which a job changed its GPU
count, from allocations.csv."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from fake_runs import write_run_dir

from gpuweave.report import load_runs, plots
from gpuweave.report.plots import plot_runs
from gpuweave.report.rundir import job_gpu_segments
from gpuweave.report.section import Figure

FIVE = ["jct_cdf.png", "completed_jobs.png", "busy_gpus.png", "gru_cdf.png", "power.png"]


def write_allocations(run: Path, rows: list[tuple[float, str, str, int]]) -> Path:
    with open(run / "allocations.csv", "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(("time", "job_id", "node", "gpu_model", "gpus"))
        writer.writerows((t, job, node, "V100", k) for t, job, node, k in rows)
    return run


# job0 (ends at 600 s) starts on 2 GPUs of node-0 and grows to 4 at 300 s (2 more on node-1); job1 (starts at 90 s,
# ends at 1260 s) holds one GPU throughout, moved from node-2 to node-3 at 500 s.
ELASTIC = [
    (0.0, "job0", "node-0", 2),
    (90.0, "job1", "node-2", 1),
    (300.0, "job0", "node-1", 2),
    (500.0, "job1", "node-2", 0),
    (500.0, "job1", "node-3", 1),
]


@pytest.fixture
def other_plots_stubbed(monkeypatch):
    for name in ("plot_jct_cdf", "plot_completed_over_time", "plot_busy_gpus", "plot_gru_cdf", "plot_power"):
        monkeypatch.setattr(plots, name, lambda runs, path: Figure(Path(path), "stub", None))


def test_stretches_of_constant_gpu_count_per_job(tmp_path):
    run = load_runs([write_allocations(write_run_dir(tmp_path / "a", n_jobs=3), ELASTIC)])[0]
    assert sorted(job_gpu_segments(run)) == [
        ("job0", 0.0, 300.0, 2),
        ("job0", 300.0, 600.0, 4),
        ("job1", 90.0, 500.0, 1),  # a move is a new stretch (the job restarted there)
        ("job1", 500.0, 1260.0, 1),
    ]


def test_the_figure_is_drawn_for_runs_with_resized_jobs_only(tmp_path, other_plots_stubbed):
    elastic = write_allocations(write_run_dir(tmp_path / "optimus", policy="optimus", n_jobs=3), ELASTIC)
    one_job = [r for r in ELASTIC if r[1] == "job1"]
    rigid = write_allocations(write_run_dir(tmp_path / "fifo", n_jobs=3, seed=1), one_job)  # seed 1: other JCTs
    figures = plot_runs(load_runs([rigid]), tmp_path / "out-rigid")
    assert [f.path.name for f in figures] == FIVE
    figures = plot_runs(load_runs([elastic, rigid]), tmp_path / "out")
    assert [f.path.name for f in figures] == FIVE + ["job_gpus.png"]
    figure = figures[-1]
    assert figure.path.is_file() and "1 of 2 jobs resized" in figure.caption
    with open(figure.csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["series"] for r in rows} == {"optimus seed=0"}  # the rigid run is not drawn
    assert sorted(int(r["gpus"]) for r in rows if r["job_id"] == "job0") == [2, 4]
