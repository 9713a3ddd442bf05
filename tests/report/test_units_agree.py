"""A report's tables and its charts say the same unit for the same durations (issue 40 item 5: the report's table
was in seconds and its JCT chart in hours; a sweep's JCTs of a minute printed as `0.0180 h`)."""

from __future__ import annotations

import csv
import json
import re

import pytest
from fake_runs import write_run_dir

pytest.importorskip("matplotlib")

TIME_COLUMNS = ("arrival", "start", "end", "jct", "queueing_delay")


def _scaled_run(path, factor: float):
    """A fake run whose times are ``factor`` x the default's; its avg_jct_s the mean JCT of its jobs."""
    write_run_dir(path)
    with open(path / "jobs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        for c in TIME_COLUMNS:
            row[c] = "" if row[c] == "" else repr(float(row[c]) * factor)
    with open(path / "jobs.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(path / "timeseries.csv", newline="") as fh:
        series = list(csv.DictReader(fh))
    for row in series:
        row["time"] = repr(float(row["time"]) * factor)
    with open(path / "timeseries.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(series[0]))
        writer.writeheader()
        writer.writerows(series)
    jct = [float(r["jct"]) for r in rows if r["jct"]]
    summary = json.loads((path / "summary.json").read_text())
    summary["metrics"]["avg_jct_s"] = sum(jct) / len(jct)
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def _table_unit(cell: str) -> str:
    """The unit a summary-table cell reads in: the larger unit beside the seconds, else seconds."""
    found = re.fullmatch(r"[\d,.]+ s(?: \([\d,.]+ (\w+)\))?", cell)
    assert found, cell
    return found.group(1) or "s"


@pytest.mark.parametrize("factor, unit", [(0.01, "s"), (0.5, "min"), (2.0, "h"), (100.0, "d")])
def test_the_metrics_table_and_the_jct_chart_say_the_same_unit(tmp_path, monkeypatch, factor, unit):
    from gpuweave.report import plots
    from gpuweave.report.html import render_report

    drawn = {}
    save = plots.save

    def keep(fig, path):
        drawn[path.name] = fig
        return save(fig, path)

    monkeypatch.setattr(plots, "save", keep)
    run = _scaled_run(tmp_path / "a", factor)
    text = render_report([run], tmp_path / "out").read_text()
    cell = re.search(r'<td class="text name">avg_jct_s</td><td>([^<]+)</td>', text).group(1)
    label = drawn["jct_cdf.png"].axes[0].get_xlabel()
    assert _table_unit(cell) == unit and label.startswith(f"job completion time ({unit}"), (cell, label)
    with open(tmp_path / "out" / "jct_cdf.csv") as fh:  # the data drawn, in the axis's unit
        assert next(csv.reader(fh))[1] == f"jct_{unit}"


@pytest.mark.parametrize("scale, unit", [(1.0, "s"), (60.0, "min"), (3600.0, "h"), (86400.0, "d")])
def test_a_sweeps_table_and_its_chart_say_the_same_unit(tmp_path, monkeypatch, scale, unit):
    """The sweep section's table (and the console's, the same text) and the sweep chart of the same means."""
    pd = pytest.importorskip("pandas")
    from gpuweave.report import plots
    from gpuweave.report.markup import table_text

    drawn = {}
    save = plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path: drawn.setdefault("fig", fig) and save(fig, path))
    jct = [s * scale for s in (1.08, 2.5, 40.0, 3.0)]  # one outlier: the typical value picks the unit
    df = pd.DataFrame({"policy": ["fifo", "sjf", "gavel", "hadar"], "seed": [0] * 4, "avg_jct_s": jct})
    plots.plot_sweep_aggregate(df, tmp_path / "sweep.png", x=None, y="avg_jct_s", groups=["policy"])
    headers, cells = table_text(df.drop(columns="seed").to_dict(orient="records"))
    assert headers[1] == f"avg_jct ({unit})" and drawn["fig"].axes[0].get_ylabel() == f"mean avg_jct ({unit})"
    assert [row[1] for row in cells] == ["1.08", "2.5", "40", "3"]
