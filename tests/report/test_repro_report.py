"""`gpuweave report` on reproduction directories: ours beside the paper's, coloured by tolerance, from
comparison.csv alone (the recorded FAR comparison is the input)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.report.grains import report_runs
from gpuweave.report.repro import Row, read_comparison

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def test_within_tolerance_rule():
    assert Row("e", "m", 1.22, 1.21656, "", "").within(0.10)
    assert not Row("e", "m", 1.22, 1.5, "", "").within(0.10)
    assert Row("e", "m", 0.0, 0.05, "", "").within(0.10)  # a paper zero: absolute difference
    assert Row("e", "m", None, 3.0, "", "").within(0.10) is None


def test_repro_report_from_comparison_csv(tmp_path):
    repro = tmp_path / "far"
    repro.mkdir()
    shutil.copy(GOLDEN / "repro-far.csv", repro / "comparison.csv")
    rows = read_comparison(repro / "comparison.csv")
    verdicts = [r.within(0.10) for r in rows]
    report = report_runs([repro], tmp_path / "out", title="FAR beside the paper")
    html = report.read_text()
    summary = re.search(r'<p class="summary">(.*?)</p>', html).group(1)
    assert f"{verdicts.count(True)} within ±10%" in summary and f"{verdicts.count(False)} outside" in summary
    assert html.count('class="text in"') == verdicts.count(True)
    assert html.count('class="text out"') == verdicts.count(False)
    assert 'id="fig-1"' in html and "Data: comparison_00_far.csv" in html
    data = (tmp_path / "out" / "comparison_00_far.csv").read_text().splitlines()
    assert data[0] == "experiment,metric,paper,ours,ours_over_paper,within_tolerance"
    strict = report_runs([repro], tmp_path / "strict", tolerance=0.01).read_text()
    assert strict.count('class="text in"') < verdicts.count(True)


def test_bad_comparison_names_row_and_field(tmp_path):
    repro = tmp_path / "x"
    repro.mkdir()
    (repro / "comparison.csv").write_text("experiment,metric,paper,ours,unit,note\na,b,1.0,oops,,\n")
    with pytest.raises(InputError, match="row 1, field 'ours': expected a number"):
        report_runs([repro], tmp_path / "out")
