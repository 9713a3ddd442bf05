"""``gpuweave cluster fill --sharing whole,fraction,mig``: one directory per mode and one report comparing them
(:mod:`gpuweave.cluster.sharing.modes`, :func:`gpuweave.report.sharing.modes_sections`); bad modes refused before
any work; a run that fails halfway leaves no report that looks complete; a single mode writes what it always did."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

from gpuweave.cli import run as cli_run
from gpuweave.cluster.sharing.experiment import run_fill as real_run
from gpuweave.cluster.sharing.results import write_fill_result as real_write
from gpuweave.units import number_text
from tests.test_cli_bad_input import check_one_error, gpuweave

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
RUN_FILES = {"summary.json", "curves.csv", "events.csv", "gpus.csv"}
LOADS = (50, 80, 90, 100, 110, 120, 130)


def _inputs(tmp: Path, gpu: str = "A100") -> tuple[Path, Path]:
    spec = tmp / f"{gpu}.yaml"
    spec.write_text(f"name: small\nnodes:\n  - {{count: 2, gpu: {gpu}, gpus_per_node: 2, cpu_milli: 64000}}\n")
    pods = tmp / "pods.csv"
    pods.write_text(POD_HEADER + "".join(f"p{i},4000,8192,1,{200 + 150 * (i % 5)},\n" for i in range(10)))
    return spec, pods


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> tuple[Path, dict, Path, Path]:
    tmp = tmp_path_factory.mktemp("modes")
    spec, pods = _inputs(tmp)
    out = tmp / "cmp"
    r = gpuweave(
        "cluster", "fill", "--cluster", spec, "--pods", pods, "--sharing", "whole,fraction,mig", "--out", out, "--json"
    )
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout), spec, pods


def _curves(run_dir: Path) -> dict[int, dict[str, str]]:
    with (run_dir / "curves.csv").open() as handle:
        return {int(float(row["load"])): row for row in csv.DictReader(handle)}


def test_a_comma_list_writes_a_directory_per_mode_and_one_report(compared):
    out, printed, _, _ = compared
    assert {p.name for p in out.iterdir()} == {"whole", "fraction", "mig", "report"}
    for mode in ("whole", "fraction", "mig"):
        assert {p.name for p in (out / mode).iterdir()} == RUN_FILES
        summary = json.loads((out / mode / "summary.json").read_text())
        assert summary["kind"] == "sharing" and summary["config"]["sharing"] == mode
        assert summary["config"]["compared_modes"] == ["whole", "fraction", "mig"]
        assert printed["modes"][mode]["metrics"] == summary["metrics"]
    # the same tasks under each mode
    assert len({printed["modes"][m]["metrics"]["tasks_submitted"] for m in printed["modes"]}) == 1
    assert "mig_instances_created" in printed["modes"]["mig"]["metrics"]
    report = out / "report"
    assert printed["report"] == str(report / "report.html")
    assert {"report.html", "sharing_modes.csv", "sharing_allocation.png", "sharing_gpus_02.png"} <= _files(report)
    page = (report / "report.html").read_text()
    assert "What sharing buys: at 100" in page
    for word in ("whole GPUs", "fractions", "MIG"):
        assert f"<th>{word}</th>" in page  # the runs are named by their mode


def _section_rows(page: str, section: str) -> tuple[list[str], list[list[str]]]:
    body = re.search(rf'<section id="{section}">(.*?)</section>', page, re.S)
    assert body is not None, section
    headers = [html.unescape(re.sub("<[^>]+>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", body.group(1))]
    rows = [
        [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body.group(1))
    ]
    return headers, [r for r in rows if r]


def test_the_reports_table_is_each_modes_own_curves(compared):
    out, printed, _, _ = compared
    words = {"whole": "whole GPUs", "fraction": "fractions", "mig": "MIG"}
    curves = {mode: _curves(out / mode) for mode in words}
    headers, rows = _section_rows((out / "report" / "report.html").read_text(), "sharing-modes-side-by-side")
    shown = [dict(zip(headers, row)) for row in rows]
    loads = [int(row["arrived load (%)"]) for row in shown]
    assert loads and set(loads) <= set(LOADS)
    for row in shown:
        load = int(row["arrived load (%)"])
        for mode, word in words.items():
            at = curves[mode][load]
            assert row[f"allocated, {word} (%)"] == number_text(float(at["allocation"]))
            assert row[f"fragmentation ratio, {word} (%)"] == number_text(float(at["fragment_ratio"]))
            if f"asked, {word} (%)" in row:
                assert row[f"asked, {word} (%)"] == number_text(float(at["asked"]))
    assert "asked, whole GPUs (%)" in headers  # whole GPUs hold more than the shares asked
    with (out / "report" / "sharing_modes.csv").open() as handle:
        data = list(csv.DictReader(handle))
    assert len(data) == 3 * len(loads)
    for row in data:
        at = curves[row["mode"]][int(row["load"])]
        for column in ("allocation", "asked", "fragment_ratio"):
            assert float(row[column]) == pytest.approx(float(at[column]), abs=1e-6)
    headers, rows = _section_rows(
        (out / "report" / "report.html").read_text(), "tasks-placed-and-failed-per-sharing-mode"
    )
    placed = {row[0]: dict(zip(headers, row)) for row in rows}
    for mode, word in words.items():
        metrics = printed["modes"][mode]["metrics"]
        assert placed[word]["found no room"] == number_text(metrics["tasks_failed"])
        assert placed[word]["placed"] == number_text(metrics["tasks_submitted"] - metrics["tasks_failed"])


@pytest.mark.parametrize(
    ("sharing", "needles"),
    [("whole,mps", ("--sharing", "'mps'")), ("fraction,fraction", ("fraction twice",)), ("whole,", ("''",))],
)
def test_a_bad_mode_is_one_line_and_writes_nothing(tmp_path: Path, sharing: str, needles: tuple[str, ...]):
    spec, pods = _inputs(tmp_path)
    out = tmp_path / "out"
    check_one_error(
        gpuweave("cluster", "fill", "--cluster", spec, "--pods", pods, "--sharing", sharing, "--out", out), *needles
    )
    assert not out.exists()


def test_mig_without_a_mig_cluster_is_one_line_and_writes_nothing(tmp_path: Path):
    spec, pods = _inputs(tmp_path, gpu="T4")
    out = tmp_path / "out"
    args = ("cluster", "fill", "--pods", pods, "--sharing", "whole,fraction,mig", "--out", out)
    check_one_error(gpuweave(*args, "--cluster", spec), "MIG", "T4")
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,A100\n")
    check_one_error(gpuweave(*args, "--nodes", nodes), "--cluster")
    assert not out.exists()


def test_a_single_mode_writes_what_it_always_did(tmp_path: Path, compared):
    out, _, spec, pods = compared
    single = tmp_path / "single"
    r = gpuweave("cluster", "fill", "--cluster", spec, "--pods", pods, "--sharing", "fraction", "--out", single)
    assert r.returncode == 0, r.stderr
    assert _files(single) == RUN_FILES
    summary = json.loads((single / "summary.json").read_text())
    assert "compared_modes" not in summary["config"] and summary["config"]["sharing"] == "fraction"
    # on nodes without a MIG group, the comparison's fractions are this run
    for name in ("curves.csv", "events.csv", "gpus.csv"):
        assert (single / name).read_bytes() == (out / "fraction" / name).read_bytes(), name
    with_report = tmp_path / "with-report"
    r = gpuweave(
        "cluster", "fill", "--cluster", spec, "--pods", pods, "--sharing", "fraction", "--out", with_report, "--report"
    )
    assert r.returncode == 0, r.stderr
    drawn = {
        "report.html",
        *(f"sharing_{name}.{ext}" for name in ("allocation", "fragment_ratio", "gpus_00") for ext in ("png", "csv")),
    }
    assert _files(with_report) == RUN_FILES | {f"report/{name}" for name in drawn}


def test_a_run_failing_halfway_leaves_no_report_that_looks_complete(tmp_path: Path, monkeypatch, compared):
    _, _, spec, pods = compared
    out = tmp_path / "cmp"
    args = ["cluster", "fill", "--cluster", str(spec), "--pods", str(pods), "--sharing", "fraction,mig", "-q"]
    assert cli_run([*args, "--out", str(out)]) == 0
    page = (out / "report" / "report.html").read_bytes()

    def failing_run(*a, **k):
        if k.get("sharing") == "mig":
            raise RuntimeError("killed while running mig")
        return real_run(*a, **k)

    monkeypatch.setattr("gpuweave.cluster.sharing.modes.run_fill", failing_run)
    with pytest.raises(RuntimeError):
        cli_run([*args, "--out", str(out), "--seed", "7"])
    assert (out / "report" / "report.html").read_bytes() == page  # nothing written: the earlier comparison stands
    assert json.loads((out / "fraction" / "summary.json").read_text())["seed"] == 42
    fresh = tmp_path / "fresh"
    with pytest.raises(RuntimeError):
        cli_run([*args, "--out", str(fresh)])
    assert not fresh.exists()
    monkeypatch.setattr("gpuweave.cluster.sharing.modes.run_fill", real_run)

    def failing_write(out_dir, result, *a, **k):
        if result.sharing == "mig":
            raise RuntimeError("killed while writing mig")
        return real_write(out_dir, result, *a, **k)

    monkeypatch.setattr("gpuweave.cluster.sharing.modes.write_fill_result", failing_write)
    with pytest.raises(RuntimeError):
        cli_run([*args, "--out", str(out), "--seed", "7"])
    assert not (out / "report" / "report.html").exists()  # new fractions beside old MIG: no report says done
    assert json.loads((out / "fraction" / "summary.json").read_text())["seed"] == 7
