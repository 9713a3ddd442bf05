"""The report of shared runs (tasks holding shares of GPUs): the "GPU share held and fragmentation over time" figure
from sharing.csv, its absence for whole-GPU runs, and one clear error for a damaged sharing.csv."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from fake_runs import write_run_dir

from gpuweave.errors import InputError
from gpuweave.report import load_runs, plots
from gpuweave.report.plots import plot_runs, plot_sharing
from gpuweave.report.section import Figure

FIVE = ["jct_cdf.png", "completed_jobs.png", "busy_gpus.png", "gru_cdf.png", "power.png"]
HEADER = ("time_s", "used_milli_gpus", "fragment_milli_gpus", "fragment_ratio_pct")


def write_shared_run(path: Path, *, policy: str = "fifo", placement: str = "fgd", held: float = 30.0) -> Path:
    """A fake run directory plus a shared run's sharing.csv and sharing metrics (the cluster has 16 GPUs)."""
    run = write_run_dir(
        path,
        policy=policy,
        extra_config={"placement_rule": placement},
        extra_metrics={
            "mean_gpu_allocation_pct": held,
            "peak_gpu_allocation_pct": 2 * held,
            "mean_fragment_ratio_pct": 100.0 / held,
        },
    )
    with open(run / "sharing.csv", "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADER)
        for k, t in enumerate((0.0, 60.0, 300.0, 900.0, 3000.0)):
            used = (k * 2500 * held / 30.0) % 16000
            writer.writerow((t, used, 125.5 * k, 4.0 * k))
    return run


@pytest.fixture
def other_plots_stubbed(monkeypatch):
    """The five whole-run figures as stubs (tests/report/test_report.py draws them): these tests stay fast."""
    for name in ("plot_jct_cdf", "plot_completed_over_time", "plot_busy_gpus", "plot_gru_cdf", "plot_power"):
        monkeypatch.setattr(plots, name, lambda runs, path: Figure(Path(path), "stub", None))


def test_shared_runs_get_the_sharing_figure_and_whole_gpu_runs_are_named_left_out(tmp_path, other_plots_stubbed):
    dirs = [
        write_shared_run(tmp_path / "fgd", placement="fgd", held=31.25),
        write_shared_run(tmp_path / "bf", placement="best-fit", held=27.5),
        write_run_dir(tmp_path / "whole", policy="sjf"),
    ]
    runs = load_runs(dirs)
    assert [r.sharing is not None for r in runs] == [True, True, False]
    assert list(runs[0].sharing.columns) == list(HEADER)
    figures = plot_runs(runs, tmp_path / "out")
    assert [f.path.name for f in figures] == FIVE + ["sharing_over_time.png"]
    sharing = figures[-1]
    assert sharing.csv is not None and sharing.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(sharing.csv) as fh:
        rows = list(csv.reader(fh))
    assert (
        rows[0][0] == "series"
        and rows[0][1].startswith("time_")
        and rows[0][2:]
        == [
            "gpus_held_pct",
            "fragment_ratio_pct",
        ]
    )
    series = {row[0] for row in rows[1:]}
    assert series == {runs[0].label, runs[1].label}  # the whole-GPU run is not drawn
    fgd = [row for row in rows[1:] if row[0] == runs[0].label]
    assert float(fgd[1][2]) == pytest.approx(2500 * 31.25 / 30.0 / 160.0)  # milli-GPUs / (10 x 16 GPUs)
    assert float(fgd[-1][1]) > float(fgd[-2][1])  # the last row is drawn on to the run's last record
    caption = sharing.caption
    assert f"{runs[0].label} holds the most of the GPUs on average (31.2% against {runs[1].label}'s 27.5%)" in caption
    assert f"{runs[0].label} fragments least" in caption
    assert f"Left out, having no sharing.csv (whole-GPU runs): {runs[2].label}." in caption


def test_one_shared_run_says_its_own_means(tmp_path):
    figure = plot_sharing(load_runs([write_shared_run(tmp_path / "a", held=40.0)]), tmp_path / "sharing.png")
    assert figure.path.exists() and figure.csv is not None and figure.csv.exists()
    caption = figure.caption
    assert "fifo holds 40.0% of the GPUs on average and its fragmentation ratio averages 2.50%" in caption
    assert "Left out" not in caption


def test_whole_gpu_runs_get_no_sharing_figure(tmp_path, other_plots_stubbed, monkeypatch):
    monkeypatch.setattr(plots, "plot_sharing", lambda runs, path: pytest.fail("drawn for whole-GPU runs"))
    runs = load_runs([write_run_dir(tmp_path / "a"), write_run_dir(tmp_path / "b", policy="sjf")])
    assert all(run.sharing is None for run in runs)
    assert [f.path.name for f in plot_runs(runs, tmp_path / "out")] == FIVE


def _rewrite(run: Path, text: str) -> None:
    (run / "sharing.csv").write_text(text)


def _no_total_gpus(run: Path) -> None:
    summary = json.loads((run / "summary.json").read_text())
    del summary["cluster"]["total_gpus"]
    (run / "summary.json").write_text(json.dumps(summary))


@pytest.mark.parametrize(
    "damage, where, needle",
    [
        (
            lambda d: _rewrite(d, ",".join(HEADER) + "\n0,1000,0,0\n60,lots,0,1\n"),
            "sharing.csv",
            "sharing.csv, row 2, field 'used_milli_gpus': expected a finite number (at most 1e+18 in size), got 'lots'",
        ),
        (
            lambda d: _rewrite(d, "time_s,fragment_milli_gpus,fragment_ratio_pct\n0,0,0\n"),
            "sharing.csv",
            "sharing.csv, field 'used_milli_gpus': missing column",
        ),
        (
            lambda d: _rewrite(d, ",".join(HEADER) + "\n0,1000,0,\n"),
            "sharing.csv",
            "sharing.csv, row 1, field 'fragment_ratio_pct': empty value",
        ),
        (lambda d: _rewrite(d, ",".join(HEADER) + "\n"), "sharing.csv", "sharing.csv: the table has no rows"),
        (
            _no_total_gpus,
            "summary.json",
            "summary.json, field 'cluster.total_gpus': a shared run (it has sharing.csv) needs the cluster's GPU count",
        ),
    ],
)
def test_a_damaged_sharing_csv_is_one_error_naming_the_file(tmp_path, damage, where, needle):
    run = write_shared_run(tmp_path / "a")
    damage(run)
    with pytest.raises(InputError) as exc:
        load_runs([run])
    assert needle in str(exc.value)
    assert exc.value.file == str(run / where)
    assert "\n" not in str(exc.value)
