from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fake_runs import write_run_dir

from gpuweave.errors import InputError
from gpuweave.report import load_runs, render_report, render_sections_report
from gpuweave.report.markup import format_value
from gpuweave.report.plots import plot_busy_gpus, plot_runs
from gpuweave.report.section import DemoSection

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    data = Path(path).read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 2000


def test_plots_one_and_several_runs(tmp_path):
    one = load_runs([write_run_dir(tmp_path / "a")])
    assert one[0].label == "fifo"
    files = plot_runs(one, tmp_path / "one")
    assert [f.path.name for f in files] == [
        "jct_cdf.png",
        "completed_jobs.png",
        "busy_gpus.png",
        "gru_cdf.png",
        "power.png",
    ]
    for f in files:
        assert_png(f.path)
        assert f.csv is not None and f.csv.read_text().count("\n") > 1  # the data drawn, beside the PNG
        assert re.search(r"[A-Z][^.]{10,}\.", f.caption)  # at least one whole sentence

    dirs = [
        write_run_dir(tmp_path / f"r{i}", policy=pol, seed=s)
        for i, (pol, s) in enumerate([("fifo", 0), ("fifo", 1), ("sjf", 0)])
    ]
    several = load_runs(dirs)
    assert [r.label for r in several] == ["fifo seed=0", "fifo seed=1", "sjf seed=0"]
    for f in plot_runs(several, tmp_path / "several"):
        assert_png(f.path)


def test_busy_gpus_per_model_panels_for_many_runs(tmp_path):
    dirs = [write_run_dir(tmp_path / f"r{i}", policy="fifo", seed=i, n_jobs=4) for i in range(14)]
    assert_png(plot_busy_gpus(load_runs(dirs), tmp_path / "busy.png").path)


def test_labels_disambiguate_by_differing_config(tmp_path):
    a = write_run_dir(tmp_path / "a", extra_config={"rate_per_hour": 30.0})
    b = write_run_dir(tmp_path / "b", extra_config={"rate_per_hour": 60.0})
    c = write_run_dir(tmp_path / "c", extra_config={"rate_per_hour": 60.0})
    labels = [r.label for r in load_runs([a, b, c])]
    # all seeds equal: the seed is not repeated in every label
    assert labels == ["fifo rate_per_hour=30", "fifo rate_per_hour=60 (b)", "fifo rate_per_hour=60 (c)"]
    # policy options read next to the policy's name; the run without options keeps the bare name
    d = write_run_dir(tmp_path / "d", policy="hadar", extra_config={"policy_options": {}})
    e = write_run_dir(
        tmp_path / "e", policy="hadar", extra_config={"policy_options": {"order": "srpt", "backfill": True}}
    )
    assert [r.label for r in load_runs([d, e])] == ["hadar", "hadar[backfill=True,order=srpt]"]


def test_report_is_self_contained_and_has_numbers(tmp_path):
    a = write_run_dir(tmp_path / "a", policy="fifo", avg_jct_s=1234.5, energy_kwh=42.125)
    b = write_run_dir(tmp_path / "b", policy="sjf", avg_jct_s=617.5, utilization=0.8125)
    report = render_report([a, b], tmp_path / "out", title="Policy comparison")
    assert report == tmp_path / "out" / "report.html"
    text = report.read_text()
    assert 'src="http' not in text and "<script" not in text and "<link" not in text and "url(" not in text
    srcs = re.findall(r'src="([^"]+)"', text)
    assert len(srcs) == 5 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert base64.b64decode(srcs[0].split(",", 1)[1])[:8] == PNG_MAGIC
    # summary numbers of both runs (as the console prints them: a time with its unit and the larger unit its
    # magnitude reaches), and the comparison against the first run
    for number in ("1,234 s (20.57 min)", "617.5 s (10.29 min)", "42.12", "0.8125", "0.625"):
        assert number in text
    assert "Comparison" in text and "\u00d70.50" in text  # 617.5 / 1234.5
    assert '<td class="best">617.5 s (10.29 min, \u00d70.50)</td>' in text  # lower JCT is better
    assert '<td class="best">11' not in text  # both completed 11 jobs: no best
    assert "<title>Policy comparison</title>" in text
    for png in ("jct_cdf.png", "completed_jobs.png", "busy_gpus.png", "gru_cdf.png", "power.png"):
        assert_png(tmp_path / "out" / png)


def test_single_run_report_has_no_comparison(tmp_path):
    report = render_report([write_run_dir(tmp_path / "a")], tmp_path / "out")
    text = report.read_text()
    assert "<h2>Metrics</h2>" in text and "<h2>Comparison</h2>" not in text
    assert "<title>gpuweave report</title>" in text


def test_text_is_escaped(tmp_path):
    nasty = '<script>alert("x")</script> & $x$'
    run = write_run_dir(tmp_path / "a", policy=nasty)
    img = plot_runs(load_runs([run]), tmp_path / "imgs")[0].path
    section = DemoSection(
        title="<b>bold</b> & co", table=[{"<col>": "<v>", "n": 3.5}], images=[img], text='line <1>\nline 2\n\npara "2"'
    )
    text = render_report([run], tmp_path / "out", title="A & B <i>", sections=[section]).read_text()
    assert "<script" not in text and "<b>bold" not in text and "<i>" not in text and "<col>" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; $x$" in text
    assert "<title>A &amp; B &lt;i&gt;</title>" in text
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in text
    assert "<p>line &lt;1&gt;<br>line 2</p><p>para &quot;2&quot;</p>" in text
    assert '<td class="text">&lt;v&gt;</td><td>3.5</td>' in text


def test_sections_only_report(tmp_path):
    img = plot_runs(load_runs([write_run_dir(tmp_path / "a")]), tmp_path / "imgs")[1].path
    sections = [
        DemoSection(
            title="MIG", table=[{"job": "a", "slices": 3}, {"job": "b", "gpu": "A100"}], images=[img], text="packed"
        ),
        DemoSection(title="Kernels", table=[], text="no table"),
    ]
    report = render_sections_report(sections, tmp_path / "demo", title="demo")
    text = report.read_text()
    assert text.count('<section id="') == 2 and "data:image/png;base64," in text
    assert '<th class="text">gpu</th>' in text and "A100" in text and "packed" in text
    assert 'src="http' not in text


@pytest.mark.parametrize(
    "damage, needle",
    [
        (lambda d: (d / "summary.json").unlink(), "summary.json: missing summary.json"),
        (lambda d: (d / "summary.json").write_text("{not json"), "summary.json, row 1: not valid JSON"),
        (lambda d: (d / "summary.json").write_text("[1, 2]"), "summary.json: expected a JSON object"),
        (
            lambda d: (d / "summary.json").write_text(json.dumps({"metrics": {"avg_jct_s": "fast"}})),
            "summary.json, field 'metrics.avg_jct_s': expected a number",
        ),
        (lambda d: (d / "timeseries.csv").unlink(), "timeseries.csv: missing file"),
        (
            lambda d: (d / "jobs.csv").write_text("job_id,arrival,end,jct\nj0,0,10,10\nj1,5,oops,3\n"),
            "jobs.csv, row 2, field 'end': expected a finite number (at most 1e+18 in size), got 'oops'",
        ),
        (
            lambda d: (d / "jobs.csv").write_text("job_id,arrival,end\nj0,0,10\n"),
            "jobs.csv, field 'jct': missing column",
        ),
    ],
)
def test_bad_run_dirs_name_the_file(tmp_path, damage, needle):
    run = write_run_dir(tmp_path / "a")
    damage(run)
    with pytest.raises(InputError) as exc:
        render_report([run], tmp_path / "out")
    assert needle in str(exc.value)
    assert str(run) in exc.value.file


def test_other_bad_inputs(tmp_path):
    with pytest.raises(InputError, match="not a directory"):
        render_report([tmp_path / "nope"], tmp_path / "out")
    with pytest.raises(InputError, match="no run directories"):
        render_report([], tmp_path / "out")
    with pytest.raises(InputError, match="image not found") as exc:
        render_sections_report([DemoSection("s", [], images=[tmp_path / "gone.png"])], tmp_path / "out")
    assert exc.value.file.endswith("gone.png")
    (tmp_path / "x.bmp").write_bytes(b"BM")
    with pytest.raises(InputError, match="unsupported image type"):
        render_sections_report([DemoSection("s", [], images=[tmp_path / "x.bmp"])], tmp_path / "out")


def test_format_value():
    """Issue 40 item 5: the report's cells read as the console's (gpuweave.units), four significant digits."""
    assert format_value(1234.5) == "1,234"
    assert format_value(434403.5450728072) == "434,404" and format_value(434403.5, "avg_jct_s") == "434,404 s (5.028 d)"
    assert format_value(3.0) == "3"
    assert format_value(float("nan")) == "n/a"
    assert format_value(0.8125) == "0.8125"
    assert format_value(12) == "12"
    assert format_value(None) == ""
    assert format_value({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'
    assert format_value(True) == "yes" and format_value(float("inf")) == "n/a"


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_cli_report_and_error(tmp_path):
    a = write_run_dir(tmp_path / "a")
    b = write_run_dir(tmp_path / "b", policy="sjf")
    from typer.testing import CliRunner

    from gpuweave.cli import app

    res = CliRunner().invoke(app, ["report", str(a), str(b), "--out", str(tmp_path / "rep"), "--title", "T"])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"wrote {tmp_path / 'rep' / 'report.html'}"
    assert "<title>T</title>" in (tmp_path / "rep" / "report.html").read_text()

    (b / "summary.json").unlink()
    res = _cli("report", str(a), str(b), cwd=tmp_path)
    assert res.returncode == 2
    expected = f"error: {b / 'summary.json'}: missing summary.json (not a gpuweave run directory?)"
    assert res.stderr.strip().splitlines() == [expected]
    assert not (tmp_path / "gpuweave-out" / "report" / "report.html").exists()


def test_end_to_end_real_simulation(tmp_path):
    pytest.importorskip("gpuweave.workload.profiles")
    pytest.importorskip("gpuweave.workload.traces.generate")
    from gpuweave.cluster.config import parse_config
    from gpuweave.cluster.run import run_simulation
    from gpuweave.hardware.cluster_spec import bundled_clusters

    if "gavel-60" not in bundled_clusters():
        pytest.skip("bundled cluster gavel-60 not landed yet")
    metrics = run_simulation(parse_config({"policy": "fifo", "jobs": 30}), tmp_path / "run")
    report = render_report([tmp_path / "run"], tmp_path / "out")
    text = report.read_text()
    written = json.loads((tmp_path / "run" / "summary.json").read_text())["metrics"]
    assert format_value(float(written["avg_jct_s"])) in text and format_value(float(written["utilization"])) in text
    assert metrics["jobs"] == 30
    assert_png(tmp_path / "out" / "busy_gpus.png")


def test_gru_per_round_from_a_run_directory_matches_the_records(tmp_path):
    import numpy as np

    from gpuweave.cluster.config import SimulationConfig
    from gpuweave.cluster.run import run_simulation, simulate
    from gpuweave.report.plots import gru_per_round
    from gpuweave.repro.hadar import metrics as hm

    cfg = SimulationConfig(policy="gavel", cluster="gavel-60", jobs=25, rate_per_hour=20, seed=3)
    rec = simulate(cfg)
    run_simulation(cfg, tmp_path / "run")
    gru, w = gru_per_round(load_runs([tmp_path / "run"])[0], 360.0)
    # the records' GRU counts rounds from t = 0; the run directory's from the first arrival (also 0 here)
    assert np.allclose(gru, hm.gru_per_round(rec, 360.0), atol=1e-9)
    assert np.allclose(w, hm.round_weights(rec, 360.0))


# ------------------------------------------------------------------ records far beyond the jobs (found by the fuzzer)
def _append_timeseries_row(run_dir: Path, time: float) -> None:
    with open(run_dir / "timeseries.csv", "a") as fh:
        fh.write(f"{time!r},1,0,1,1250.0\n")


def _set_first_end(run_dir: Path, end: float) -> None:
    import csv

    with open(run_dir / "jobs.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    rows[1][header.index("end")] = repr(end)
    rows[1][header.index("jct")] = repr(end - float(rows[1][header.index("arrival")]))
    with open(run_dir / "jobs.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)


def _mean_rows(figure) -> int:
    return sum(1 for line in figure.csv.read_text().splitlines() if ",mean per " in line)


def test_a_record_far_beyond_the_last_completion_neither_crashes_nor_asks_for_millions_of_rounds(tmp_path):
    # The time axis stops where the jobs are done; the time series goes on to 2^32 s (136 years). Before: the
    # clip sentence looked for a completion after the axis and found none (IndexError), and the power plot made
    # one-hour rounds up to 2^32 s (1 GB).
    from gpuweave.report.plots import POWER_ROUNDS

    run = write_run_dir(tmp_path / "run")
    _append_timeseries_row(run, 2.0**32)
    figures = {f.path.stem: f for f in plot_runs(load_runs([run]), tmp_path / "out")}
    assert "no completion is later, but the runs' records go on until" in figures["completed_jobs"].caption
    assert 0 < _mean_rows(figures["power"]) <= POWER_ROUNDS + 1
    for f in figures.values():
        assert_png(f.path)


def test_a_run_of_more_than_a_million_gru_rounds_is_named_not_drawn(tmp_path):
    # A job ending at 2^32 s spans 11.9 million 360 s rounds: the GRU CDF names the run instead of building a row per
    # round (3.8 GB before), and the power plot's rounds stay few on that span.
    from gpuweave.report.plots import GRU_MAX_ROUNDS, POWER_ROUNDS

    run = write_run_dir(tmp_path / "run")
    _set_first_end(run, 2.0**32)
    figures = {f.path.stem: f for f in plot_runs(load_runs([run]), tmp_path / "out")}
    gru = figures["gru_cdf"]
    assert f"Not drawn, longer than {GRU_MAX_ROUNDS:,} rounds: fifo (11,930,465 rounds)." in gru.caption
    assert gru.csv.read_text().count("\n") == 1  # the header only
    assert 0 < _mean_rows(figures["power"]) <= POWER_ROUNDS + 1


def test_power_rounds_stay_few_on_any_span():
    from gpuweave.report.plots import POWER_ROUND_CHOICES, POWER_ROUNDS, power_round_length

    assert power_round_length(3600.0) == POWER_ROUND_CHOICES[0]
    assert power_round_length(150 * 86400.0) == 86400  # the longest choice, as before
    for span in (151 * 86400.0, 4.3e9, 1e15):
        length = power_round_length(span)
        assert length % 86400 == 0 and span / length <= POWER_ROUNDS


def test_summary_never_calls_a_run_best_on_utilisation_without_its_useful_fraction(tmp_path):
    """Issue #40 item 6: FIFO spreading 8-GPU jobs kept more GPUs busy doing less work than YARN-CS."""
    from gpuweave.report.html import COMPARED, comparison_table, metric_names, runs_summary

    spread = {"useful_fraction": 0.398, "median_placement_slowdown": 1.59, "useful_gpu_hours": 978.0}
    packed = {"useful_fraction": 0.721, "median_placement_slowdown": 1.0, "useful_gpu_hours": 978.0}
    runs = load_runs(
        [
            write_run_dir(tmp_path / "a", policy="fifo", utilization=0.543, extra_metrics=spread),
            write_run_dir(tmp_path / "b", policy="yarn-cs", utilization=0.307, extra_metrics=packed),
        ]
    )
    text = runs_summary(runs, COMPARED, "on one cluster")
    assert "on GPU utilisation, fifo (54.3%, 39.8% of it useful, " in text
    assert "yarn-cs at 30.7%, 72.1% of it useful)" in text
    assert "on useful work per GPU-hour held, yarn-cs (72.1%" in text
    assert "In fifo, the median job of several GPUs ran 1.6x longer than with its GPUs on one node" in text
    assert "In yarn-cs" not in text  # 1.0x: nothing to say
    table = comparison_table(runs, metric_names(runs))
    assert "useful_fraction (higher is better)" in table and "median_placement_slowdown (lower is better)" in table
    alone = runs_summary(runs[:1], COMPARED, "on one cluster")
    assert "The median job of several GPUs ran 1.6x longer" in alone and "40% of the GPU-hours held" in alone
