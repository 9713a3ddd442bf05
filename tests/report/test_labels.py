"""Issue 40, item 1: runs and sweep groups are labelled by their policy plus a short word on what differs
(``hadar (sim)``, ``hadar (live, ray)``, ``round_length=30``), never a JSON dump nor ``null``, at most
:data:`~gpuweave.report.rundir.LABEL_MAX` characters; ``gpuweave report --label`` chooses them; and the report's
tables fit a 1,400 px window."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from fake_runs import write_run_dir

from gpuweave.errors import InputError
from gpuweave.report import load_runs, render_report
from gpuweave.report.rundir import LABEL_MAX, run_mode

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import chromium  # noqa: E402

#: what a live run's summary.json adds (gpuweave.live.results.write_live_run): the executor, live, and the
#: config's executor section
EXECUTOR_SECTION = {
    "checkpoint_every": 1.0,
    "kind": "local",
    "max_retries": 2,
    "measured_rates": True,
    "poll_interval": 0.05,
    "program": "synthetic",
    "report_timeout": 30.0,
    "slurm": {"account": None, "gpus": "auto", "partition": None, "poll_interval": 0.2, "sbatch_args": []},
    "stop_timeout": 30.0,
    "time_scale": 100.0,
}


def make_live(run_dir: Path, executor: str = "local", **section) -> Path:
    """Turn a fake run directory into what a live run writes: ``executor`` and ``live`` at the top of
    summary.json and an ``executor`` section in its config."""
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text())
    summary["executor"], summary["live"], summary["emulated_gpus"] = executor, True, True
    summary["config"]["executor"] = {**EXECUTOR_SECTION, "kind": executor, **section}
    path.write_text(json.dumps(summary))
    return run_dir


def sim_and_live(tmp_path: Path, executor: str = "local") -> tuple[Path, Path]:
    common = {"cluster": "/work/somewhere/examples/live/cluster.yaml", "restart_delay": 10.0, "round_length": None}
    sim = write_run_dir(tmp_path / "sim-run", policy="hadar", extra_config=common)
    live = make_live(write_run_dir(tmp_path / "live-run", policy="hadar", extra_config=common), executor)
    return sim, live


@pytest.mark.parametrize("executor", ["local", "ray", "slurm"])
def test_a_simulated_and_a_live_run_read_policy_and_mode(tmp_path, executor):
    sim, live = sim_and_live(tmp_path, executor)
    assert [r.label for r in load_runs([sim, live])] == ["hadar (sim)", f"hadar (live, {executor})"]


def test_the_mode_comes_from_the_summary_or_the_config():
    assert run_mode({"config": {"policy": "fifo"}}) == "sim"
    # a simulated run of a live config: the simulator ignored the executor section
    assert run_mode({"config": {"executor": {"kind": "ray"}}}) == "sim"
    assert run_mode({"executor": "ray", "live": True, "config": {}}) == "live, ray"
    assert run_mode({"live": True, "config": {"executor": {"kind": "slurm"}}}) == "live, slurm"
    assert run_mode({"live": True, "config": {}}) == "live"


def test_live_runs_differing_in_executor_settings_name_the_setting_briefly(tmp_path):
    a = make_live(write_run_dir(tmp_path / "a", policy="hadar"), time_scale=100.0)
    b = make_live(write_run_dir(tmp_path / "b", policy="hadar"), time_scale=400.0)
    assert [r.label for r in load_runs([a, b])] == ["hadar time_scale=100", "hadar time_scale=400"]


def test_labels_are_short_and_never_json_nor_null(tmp_path):
    long_path = "/a/very/long/directory/name/that/goes/on/and/on/trace-with-a-long-name.csv"
    configs = [
        {"round_length": None, "trace": long_path},
        {"round_length": 30.0, "trace": "t.csv", "policy_options": {"x": {"deep": [1, 2, 3]}}},
        {"round_length": 360.0, "trace": "t.csv", "start_delay": 5.0, "profiles": {"a": 1, "b": 2}},
        {"round_length": 360.0, "trace": "t.csv", "start_delay": 5.0, "profiles": {"a": 3, "b": 2}},
        {"round_length": 360.0, "trace": "t.csv", "start_delay": 5.0, "profiles": {"a": 3, "b": 2}, "note": "x" * 80},
    ]
    dirs = [write_run_dir(tmp_path / f"r{i}", policy="gavel", extra_config=c) for i, c in enumerate(configs)]
    labels = [r.label for r in load_runs(dirs)]
    for label in labels:
        assert len(label) <= LABEL_MAX, label
        assert "null" not in label and "None" not in label and "{" not in label and '"' not in label, label
    # the first field that differs splits the runs, then only what still differs among those alike is added
    assert labels[:3] == ["gavel round_length unset", "gavel[x=deep=1,2,3]", "gavel round_length=360 profiles=a=1,b=2"]
    # the last two differ only past the 40 characters: cut, then told apart by their directories
    assert labels[3].startswith("gavel round_length=360") and labels[3].endswith("(r3)")
    assert labels[4].startswith("gavel round_length=360") and labels[4].endswith("(r4)")


def test_runs_alike_but_for_their_directory_stay_distinct_and_short(tmp_path):
    dirs = [write_run_dir(tmp_path / f"{'x' * 60}-{i}", policy="fifo") for i in range(3)]
    labels = [r.label for r in load_runs(dirs)]
    assert len(set(labels)) == 3 and all(len(label) <= LABEL_MAX for label in labels), labels


def test_labels_of_ones_own(tmp_path):
    sim, live = sim_and_live(tmp_path)
    assert [r.label for r in load_runs([sim, live], ["simulated", "on the laptop"])] == ["simulated", "on the laptop"]
    with pytest.raises(InputError, match="1 label"):
        load_runs([sim, live], ["one"])


def test_cli_label_option(tmp_path, capsys):
    from gpuweave.cli import run

    sim, live = sim_and_live(tmp_path)
    out = tmp_path / "rep"
    code = run(["report", str(sim), str(live), "--out", str(out), "--label", "sim", "--label", "live on ray", "-q"])
    assert code == 0
    html = (out / "report.html").read_text()
    assert "<th>sim</th>" in html and "<th>live on ray</th>" in html
    capsys.readouterr()
    code = run(["report", str(sim), str(live), "--out", str(tmp_path / "rep2"), "--label", "only one", "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and "--label" in err[0], err
    assert not (tmp_path / "rep2").exists()


def test_default_cli_report_of_sim_and_live(tmp_path, capsys):
    from gpuweave.cli import run

    sim, live = sim_and_live(tmp_path, "ray")
    assert run(["report", str(sim), str(live), "--out", str(tmp_path / "rep"), "-q"]) == 0
    html = (tmp_path / "rep" / "report.html").read_text().replace("<wbr>", "")  # break chances in headings
    assert "<th>hadar (sim)</th>" in html and "<th>hadar (live, ray)</th>" in html
    assert "executor=" not in html.split('id="appendix"')[0]  # no config dumped into a label


def test_sweep_groups_read_like_run_labels_and_share_a_colour_per_policy(tmp_path):
    import pandas as pd

    from gpuweave.report.plots import family_colours, plot_sweep_aggregate, sweep_group_label

    df = pd.DataFrame(
        {
            "policy": ["fifo", "fifo", "sjf", "sjf"] * 2,
            "round_length": [None, 30.0] * 4,
            "seed": [0] * 4 + [1] * 4,
            "avg_jct_s": [3600.0, 7200.0, 1800.0, 3600.0, 3600.0, 7200.0, 1800.0, 3600.0],
        }
    )
    figure = plot_sweep_aggregate(df, tmp_path / "sweep.png", x=None, groups=["policy", "round_length"])
    groups = [line.split(",")[0] for line in figure.csv.read_text().splitlines()[1:]]
    assert groups == [
        "fifo round_length unset",
        "fifo round_length=30",
        "sjf round_length unset",
        "sjf round_length=30",
    ]
    assert sweep_group_label({"policy": "fifo", "round_length": float("nan")}, "policy") == "fifo round_length unset"
    assert sweep_group_label({"algo": "far", "n": 12.0}, "algo") == "far n=12"
    colours = family_colours(["fifo", "fifo", "sjf", "sjf"])
    assert [f for _, f in colours] == [0, 0, 1, 1]
    assert colours[0][0] != colours[1][0]  # a shade of the family, not the same colour


def test_report_tables_fit_a_1400_px_window(tmp_path):
    """The sim-vs-live report of docs/live.md, and one of twelve runs, in headless Chromium at 1,400 px: neither
    the page nor any table is wider than the window."""
    if not chromium.available():
        if os.environ.get("CI"):
            pytest.fail("Debian's chromium and chromium-driver must be installed (.ci/run installs them)")
        pytest.skip("Debian's chromium/chromium-driver not installed")
    sim, live = sim_and_live(tmp_path)
    pair = render_report([sim, live], tmp_path / "pair")
    many = [
        write_run_dir(
            tmp_path / f"r{i}", policy=policy, seed=seed, extra_config={"round_length": rl, "trace": "/x" * 40}
        )
        for i, (policy, seed, rl) in enumerate(
            (p, s, r) for p in ("fifo", "sjf", "hadar") for s in (0, 1) for r in (None, 30.0)
        )
    ]
    twelve = render_report(many, tmp_path / "twelve")
    with chromium.chromium(1400, 1000) as driver:
        for report in (pair, twelve):
            driver.get(report.as_uri())
            page = driver.execute_script(
                """return {doc: document.documentElement.scrollWidth, inner: window.innerWidth,
                           tables: [...document.querySelectorAll('div.scroll')].map(
                               d => [d.scrollWidth, d.clientWidth])};"""
            )
            assert page["inner"] == 1400
            assert page["doc"] <= 1400, (report, page)
            assert all(scroll <= client for scroll, client in page["tables"]), (report, page["tables"])
