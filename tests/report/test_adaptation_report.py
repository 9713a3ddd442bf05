"""Adaptive jobs in the report (report/adaptation.py): each job's batch over time, statistical efficiency over
time and goodput beside throughput per job type, from adaptation.csv; drawn only for runs that have one."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from fake_runs import write_run_dir

from gpuweave.cluster.results import ADAPTATION_COLUMNS, ADAPTATION_FILE
from gpuweave.errors import InputError
from gpuweave.report import load_runs
from gpuweave.report.adaptation import adaptation_section, batch_stretches, efficiency_series, goodput_rows
from gpuweave.report.html import render_report

# job0: two intervals at batch 128 on 1 GPU (the first 30 s of them a re-scale delay), then 512 on 4 GPUs; job1
# one interval at 256, a wait, one more at 256 (a new stretch: it was not running in between).
ROWS = [
    (0, 60, "job0", "", 1, 1, 128, 128, 0, 0, 30, 100.0, 1.0),
    (60, 120, "job0", "", 1, 1, 128, 128, 0, 0, 0, 100.0, 1.0),
    (120, 180, "job0", "", 1, 4, 512, 128, 0, 1, 0, 360.0, 0.5),
    (60, 120, "job1", "", 1, 2, 256, 128, 0, 0, 0, 50.0, 0.8),
    (240, 300, "job1", "", 1, 2, 256, 128, 0, 0, 0, 50.0, 0.8),
]


def write_adaptation(run: Path, rows=ROWS) -> Path:
    with open(run / ADAPTATION_FILE, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(ADAPTATION_COLUMNS)
        writer.writerows((*row, row[-2] * row[-1]) for row in rows)
    return run


def test_batch_stretches_merge_consecutive_intervals_only(tmp_path):
    run = load_runs([write_adaptation(write_run_dir(tmp_path / "a", n_jobs=3))])[0]
    assert sorted(batch_stretches(run)) == [
        ("job0", 0.0, 120.0, 128),
        ("job0", 120.0, 180.0, 512),
        ("job1", 60.0, 120.0, 256),
        ("job1", 240.0, 300.0, 256),
    ]


def test_efficiency_is_weighted_by_running_seconds(tmp_path):
    run = load_runs([write_adaptation(write_run_dir(tmp_path / "a", n_jobs=3))])[0]
    xs, ys = efficiency_series(run, 0.0, 60.0)
    assert xs.tolist() == [0, 60, 120, 180, 240]
    assert ys[0] == 1.0 and ys[1] == pytest.approx(0.9) and ys[2] == pytest.approx(0.5) and ys[3] != ys[3]
    assert ys[4] == pytest.approx(0.8)
    # a row over several buckets counts in each by its overlap (a live attempt spans minutes)
    xs, ys = efficiency_series(run, 0.0, 45.0)
    assert xs.tolist() == [0, 45, 90, 135, 180, 225, 270]
    assert ys[0] == 1.0  # job0 from 30 s (its idle part left out)
    assert ys[1] == pytest.approx((45 * 1.0 + 30 * 0.8) / 75)  # job0 45-90, job1 60-90
    assert ys[2] == pytest.approx((30 * 1.0 + 15 * 0.5 + 30 * 0.8) / 75)  # job0 90-120 then 120-135, job1 90-120
    assert ys[4] != ys[4] and ys[5] == pytest.approx(0.8) and ys[6] == pytest.approx(0.8)


def test_goodput_rows_per_job_type(tmp_path):
    run = load_runs([write_adaptation(write_run_dir(tmp_path / "a", n_jobs=3))])[0]
    (row,) = goodput_rows([run])  # every fake job is a ResNet-50
    assert row["jobs"] == 2 and row["running_s"] == 270.0
    # weights 30, 60, 60 (job0) and 60, 60 (job1)
    assert row["mean GPUs"] == round((30 + 60 + 4 * 60 + 2 * 120) / 270, 2)
    assert row["throughput (samples/s)"] == round((90 * 100 + 60 * 360 + 120 * 50) / 270, 2)
    assert row["goodput (samples/s)"] == round((90 * 100 + 60 * 180 + 120 * 40) / 270, 2)


def test_the_section_is_drawn_for_adaptive_runs_only(tmp_path):
    rigid = write_run_dir(tmp_path / "fifo", n_jobs=3)
    assert adaptation_section(load_runs([rigid]), tmp_path / "o1") == ([], [])
    adaptive = write_adaptation(write_run_dir(tmp_path / "pollux", policy="pollux", n_jobs=3, seed=1))
    (tmp_path / "o2").mkdir()
    parts, figures = adaptation_section(load_runs([rigid, adaptive]), tmp_path / "o2")
    assert [f.path.name for f in figures] == ["job_batches.png", "efficiency.png"]
    assert all(f.path.is_file() and f.csv.is_file() for f in figures)
    assert "1 of 2 jobs changed batch" in figures[0].caption
    with open(figures[0].csv, newline="") as fh:
        assert {r["series"] for r in csv.DictReader(fh)} == {"pollux seed=1"}  # the rigid run is not drawn
    assert "statistical efficiency" in parts[1] and "goodput" in parts[1]
    page = render_report([rigid, adaptive], tmp_path / "report").read_text()
    assert "Adaptive jobs: batch, efficiency and goodput" in page


def test_a_bad_cell_names_file_row_and_field(tmp_path):
    bad = list(ROWS)
    bad[2] = (*bad[2][:6], "many", *bad[2][7:])
    run = write_adaptation(write_run_dir(tmp_path / "a", n_jobs=3), bad)
    with pytest.raises(InputError) as err:
        load_runs([run])
    text = str(err.value)
    assert ADAPTATION_FILE in text and "row 3" in text and "batch_size" in text
