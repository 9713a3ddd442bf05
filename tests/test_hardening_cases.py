"""Every failing case of issue 13 (a probe of 282 malformed inputs), as a regression test of the user-error
contract: one ``error:`` line and exit 2 (or a correct result), no traceback, within 10 s and 500 MB.

The commands run through :mod:`tests.cli_harness` (forked from a process that has imported the CLI), which
measures each command's time and memory. Before the fix each case hung, grew past 3 GB, printed a traceback,
or exited 0 with a wrong result; the comment above each says which.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from tests.cli_harness import CliServer, assert_user_error

ROOT = Path(__file__).resolve().parent.parent
RESNET = "ResNet-18 (batch size 32)"
TRACE_HEAD = "job_id,arrival,num_gpus,job_type,duration\n"


@pytest.fixture(scope="module")
def cli():
    with CliServer() as server:
        yield server


def _deep(n: int = 200_000) -> str:
    return "[" * n + "]" * n


# ------------------------------------------------------------------ 1. no upper bounds: hangs and runaway memory
def test_generated_jobs_over_the_limit(cli, tmp_path):
    # grew to 3 GB in 25 s
    assert_user_error(
        cli.run(["simulate", "--policy", "fifo", "--jobs", "1000000000", "--out", "r"], tmp_path),
        "trace_jobs",
        "--limit trace_jobs=N",
    )
    (tmp_path / "big.yaml").write_text("policy: fifo\njobs: 1000000000\n")
    assert_user_error(cli.run(["cluster", "simulate", "big.yaml", "--out", "r"], tmp_path), "big.yaml", "trace_jobs")
    (tmp_path / "sweep.yaml").write_text(
        "base: {cluster: gavel-60, jobs: 1000000000}\ngrid: {policy: [fifo]}\nout: sw\n"
    )
    assert_user_error(cli.run(["sweep", "sweep.yaml", "--no-progress"], tmp_path), "trace_jobs")
    assert not (tmp_path / "r").exists() and not (tmp_path / "sw").exists()


def test_limit_can_be_raised_for_one_command(cli, tmp_path):
    out = cli.run(["--limit", "trace_jobs=20", "simulate", "--policy", "fifo", "--jobs", "30", "--out", "r"], tmp_path)
    assert_user_error(out, "30 is over the limit trace_jobs = 20")
    out = cli.run(["--limit", "trace_jobs=50", "simulate", "--policy", "fifo", "--jobs", "30", "--out", "r"], tmp_path)
    assert out.code == 0, out.describe()


def test_sweep_grid_of_10_to_the_8_cells(cli, tmp_path):
    # kept expanding (10^8 cells) until killed
    seeds = list(range(10_000))
    rates = list(range(1, 10_001))
    spec = {"base": {"jobs": 10, "policy": "fifo"}, "grid": {"seed": seeds, "rate_per_hour": rates}, "out": "sw"}
    (tmp_path / "grid.yaml").write_text(json.dumps(spec))  # JSON is YAML
    assert_user_error(cli.run(["sweep", "grid.yaml", "--no-progress"], tmp_path), "100,000,000", "sweep_cells")


def test_andreas_exact_on_5000_queued_jobs(cli, tmp_path):
    # plan andreas --exact went over 3 GB
    apps = ["LSTMbig", "LSTMsmall", "efficientNet"]
    jobs = [
        {"id": f"J{i}", "application": apps[i % 3], "epochs": 10, "submission": 0, "due": 3600, "weight": 1}
        for i in range(5000)
    ]
    snapshot = {"now": 0, "nodes": [{"name": "n0", "gpu": "TESLA", "gpus": 2}], "jobs": jobs}
    (tmp_path / "s.json").write_text(json.dumps(snapshot))
    assert_user_error(cli.run(["plan", "andreas", "s.json", "--exact"], tmp_path), "s.json", "andreas")
    snapshot["jobs"] = jobs[:40]
    (tmp_path / "s40.json").write_text(json.dumps(snapshot))
    assert_user_error(cli.run(["cluster", "plan", "andreas", "s40.json", "--exact"], tmp_path), "andreas_exact_jobs")


def test_mig_validate_of_a_billion_gpus(cli, tmp_path):
    # hung
    (tmp_path / "s.json").write_text(json.dumps({"gpu": "A100", "gpus": 1_000_000_000, "makespan": 1, "tasks": []}))
    assert_user_error(cli.run(["mig", "validate", "s.json"], tmp_path), "s.json", "field 'gpus'", "mig_gpus")


def test_plan_mig_with_20000_tasks(cli, tmp_path):
    # hung past 60 s
    lines = ["task,1,2,3,4,7", *(f"t{i},10,6,5,4,3" for i in range(20_000))]
    (tmp_path / "tasks.csv").write_text("\n".join(lines) + "\n")
    assert_user_error(cli.run(["plan", "mig", "tasks.csv"], tmp_path), "tasks.csv", "mig_tasks")
    lines = ["task,1,2,3,4,7", *(f"t{i},10,6,5,4,3" for i in range(200))]
    (tmp_path / "t200.csv").write_text("\n".join(lines) + "\n")
    assert_user_error(cli.run(["mig", "plan", "t200.csv", "--gpus", "1024"], tmp_path), "mig_task_gpus")


def test_plan_hadar_exact_with_20000_jobs(cli, tmp_path):
    # hung past 60 s
    jobs = [{"id": f"j{i}", "job_type": "ResNet-50 (batch size 64)", "gpus": 1, "work": 1000} for i in range(20_000)]
    (tmp_path / "h.json").write_text(json.dumps({"cluster": "gavel-60", "now": 0, "round_length": 360, "jobs": jobs}))
    assert_user_error(cli.run(["plan", "hadar", "h.json", "--solver", "exact"], tmp_path), "h.json", "hadar_jobs")
    (tmp_path / "h900.json").write_text(json.dumps({"cluster": "gavel-60", "now": 0, "jobs": jobs[:900]}))
    assert_user_error(
        cli.run(["cluster", "plan", "hadar", "h900.json", "--solver", "exact"], tmp_path), "hadar_exact_jobs"
    )


def test_kernel_simulate_a_billion_tasks(cli, tmp_path):
    # hung past 60 s
    (tmp_path / "k.yaml").write_text(
        "mode: fikit\nservices:\n"
        "  - {name: A, trace: 'canonical:HI', priority: 0, workload: {kind: back_to_back, n: 1000000000}}\n"
    )
    assert_user_error(cli.run(["kernel", "simulate", "k.yaml"], tmp_path), "k.yaml", "kernel_launches")


# ------------------------------------------------------------------ 2. silently wrong results
def test_trace_arrival_of_1e300(cli, tmp_path):
    # validated, then simulated to JCT 0 and makespan 0 with 300-digit integers in jobs.csv
    (tmp_path / "t.csv").write_text(TRACE_HEAD + f"a,1e300,1,{RESNET},3600\nb,0,1,{RESNET},3600\n")
    assert_user_error(cli.run(["trace", "validate", "t.csv"], tmp_path), "t.csv, row 1, field 'arrival'", "1e+300")
    assert_user_error(
        cli.run(["simulate", "--policy", "fifo", "--trace", "t.csv", "--out", "r"], tmp_path),
        "t.csv, row 1, field 'arrival'",
    )
    assert not (tmp_path / "r").exists()


def test_trace_num_gpus_of_1e21(cli, tmp_path):
    # reported "-9223372036854775808 x V100" (int64 overflow)
    (tmp_path / "g.csv").write_text(TRACE_HEAD + f"a,0,1e21,{RESNET},3600\n")
    line = assert_user_error(
        cli.run(["trace", "validate", "g.csv", "--any-job-type"], tmp_path), "g.csv, row 1, field 'num_gpus'", "1e+21"
    )
    assert "-9223372036854775808" not in line


def test_rate_of_1e_minus_300(cli, tmp_path):
    # gave a utilisation of 3e-300
    (tmp_path / "r.yaml").write_text("policy: fifo\njobs: 10\nrate_per_hour: 1e-300\n")
    assert_user_error(cli.run(["simulate", "r.yaml", "--out", "r"], tmp_path), "r.yaml", "field 'rate_per_hour'")
    assert_user_error(
        cli.run(["simulate", "--policy", "fifo", "--rate", "1e-300", "--out", "r"], tmp_path), "rate_per_hour"
    )


def test_report_of_a_run_with_nan_and_inf(cli, tmp_path):
    # rendered with JCTs NaN and ends inf, exit 0
    assert cli.run(["simulate", "--policy", "fifo", "--jobs", "5", "--out", "run"], tmp_path).code == 0
    path = tmp_path / "run" / "jobs.csv"
    rows = list(csv.reader(path.open()))
    header = rows[0]
    for row in rows[1:]:
        row[header.index("jct")] = "nan"
        row[header.index("end")] = "inf"
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    assert_user_error(cli.run(["report", "run", "--out", "rep"], tmp_path), "jobs.csv, row 1", "field 'end'")
    assert not (tmp_path / "rep" / "report.html").exists()


def test_plan_packs_with_times_of_1e308(cli, tmp_path):
    # printed relative cost 0 and packing ratio nan
    (tmp_path / "p.csv").write_text("task,1,2,3,4\nA,1e308,1e308,1e308,1e308\nB,1e308,1e308,1e308,1e308\nC,1,1,1,1\n")
    assert_user_error(cli.run(["plan", "packs", "p.csv"], tmp_path), "p.csv, row 1, field '1'", "1e308")


def test_plan_mig_with_times_of_1e300(cli, tmp_path):
    # printed a 300-digit makespan
    (tmp_path / "m.csv").write_text("task,1,2,3,4,7\nA,1e300,1e300,1e300,1e300,1e300\nB,8,5,4,3,2\n")
    assert_user_error(cli.run(["plan", "mig", "m.csv"], tmp_path), "m.csv, row 1, field '1'", "1e300")


def _kernel_trace(path, ids, dur):
    kernels = [{"id": kid, "dur": dur, "cpu_before": 0, "sync_after": True} for kid in ids]
    path.write_text(json.dumps({"format": "gpuweave.kernel.trace", "version": 1, "name": "x", "kernels": kernels}))


def test_kernel_durations_of_1e308(cli, tmp_path):
    # trace import-torch and kernel profile accepted them
    _kernel_trace(tmp_path / "k.json", ["k0", "k1"], 1e308)
    assert_user_error(
        cli.run(["kernel", "profile", "k.json", "k.json", "--task-key", "a"], tmp_path), "k.json, row 1, field 'dur'"
    )
    events = [{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1e308, "args": {}}]
    (tmp_path / "chrome.json").write_text(json.dumps({"traceEvents": events}))
    assert_user_error(
        cli.run(["trace", "import-torch", "chrome.json", "--out", "o.json"], tmp_path), "chrome.json", "field 'dur'"
    )
    assert not (tmp_path / "o.json").exists()


def test_kernel_profile_of_runs_that_differ(cli, tmp_path):
    # built a profile of 8 unique IDs from two runs of different tasks, without a word
    _kernel_trace(tmp_path / "a.json", ["k0", "k1", "k2"], 1.0)
    _kernel_trace(tmp_path / "b.json", ["q0", "q1", "q2", "q3", "q4"], 1.0)
    assert_user_error(
        cli.run(["kernel", "profile", "a.json", "b.json", "--task-key", "t", "--out", "p"], tmp_path),
        "b.json",
        "differ",
    )
    assert not (tmp_path / "p" / "t.json").exists()
    out = cli.run(
        ["kernel", "profile", "a.json", "b.json", "--task-key", "t", "--out", "p", "--allow-different"], tmp_path
    )
    assert out.code == 0 and out.stderr.startswith("warning: ") and out.stderr.count("\n") == 1, out.describe()


# ------------------------------------------------------------------ 3. tracebacks
DEEP_READERS = [
    ["plan", "andreas", "deep.json"],
    ["plan", "hadar", "deep.json"],
    ["mig", "validate", "deep.json"],
    ["mig", "run", "deep.json", "--dry-run"],
    ["run", "packs", "deep.json"],
    ["kernel", "profile", "deep.json", "--task-key", "k"],
    ["trace", "import-torch", "deep.json"],
    ["kernel", "simulate", "deep.json"],
    ["report", "deeprun"],
    ["simulate", "deep.yaml"],
    ["sweep", "deep.yaml"],
    ["cluster", "show", "deep.yaml"],
    ["cluster", "run", "deep.yaml", "--out", "o"],
]


@pytest.mark.parametrize("args", DEEP_READERS, ids=lambda a: " ".join(a[:2]))
def test_deeply_nested_documents(cli, tmp_path, args):
    # RecursionError tracebacks in seven readers
    (tmp_path / "deep.json").write_text(_deep())
    (tmp_path / "deep.yaml").write_text(_deep(100_000))
    (tmp_path / "deeprun").mkdir()
    (tmp_path / "deeprun" / "summary.json").write_text(_deep())
    assert_user_error(cli.run(args, tmp_path), "deep")


def test_negative_seeds(cli, tmp_path):
    # ValueError from numpy
    assert_user_error(cli.run(["simulate", "--policy", "fifo", "--jobs", "5", "--seed", "-1"], tmp_path), "--seed")
    (tmp_path / "s.yaml").write_text("policy: fifo\njobs: 5\nseed: -1\n")
    assert_user_error(cli.run(["simulate", "s.yaml"], tmp_path), "s.yaml", "field 'seed'")
    for args in (
        ["trace", "generate", "t.csv", "--seed", "-1"],
        ["mig", "generate", "t.csv", "--seed", "-1"],
        ["plan", "packs", "p.csv", "--seed", "-1"],
        ["plan", "andreas", "s.json", "--seed", "-1"],
    ):
        assert_user_error(cli.run(args, tmp_path), "seed")


def _plan(path, task="a"):
    path.write_text(json.dumps({"procs": 2, "packs": [{"tasks": [{"task": task, "procs": 1, "time": 1}]}]}))


def test_run_packs_template_attribute_access(cli, tmp_path):
    # AttributeError traceback (str.format allows attribute access)
    _plan(tmp_path / "plan.json")
    out = cli.run(["run", "packs", "plan.json", "--command", "echo {procs.__class__.__init__.__globals__}"], tmp_path)
    assert_user_error(out, "placeholder", "{procs.__class__.__init__.__globals__}")


# ------------------------------------------------------------------ 7. commands from files
def test_run_packs_task_name_cannot_inject_arguments(cli, tmp_path):
    # {task} was substituted before splitting: a name with spaces became several arguments
    _plan(tmp_path / "plan.json", task="a --evil x")
    probe = "import sys; print(len(sys.argv) - 1, repr(sys.argv[1]))"
    out = cli.run(
        ["run", "packs", "plan.json", "--command", f"{{python}} -c '{probe}' {{task}}", "--report", "rep.json"],
        tmp_path,
    )
    assert out.code == 0, out.describe()
    report = json.loads((tmp_path / "rep.json").read_text())
    assert report["packs"][0]["tasks"][0]["output"].strip() == "1 'a --evil x'"


def test_commands_are_listed_before_they_run(cli, tmp_path):
    _plan(tmp_path / "plan.json", task="t1")
    out = cli.run(["run", "packs", "plan.json", "--command", "echo {task} {procs}", "--dry-run"], tmp_path)
    assert out.code == 0 and "echo t1 1" in out.stdout, out.describe()
    schedule = {
        "gpu": "A100",
        "gpus": 1,
        "makespan": 2.0,
        "lower_bound": 1.0,
        "tasks": [
            {
                "task": "t1",
                "gpu_index": 0,
                "size": 7,
                "start_slice": 0,
                "start": 0.0,
                "end": 2.0,
                "command": "rm -rf ~/scratch && ./train",
            }
        ],
        "reconfiguration": "free",
        "initial_instances": [{"gpu_index": 0, "size": 7, "start_slice": 0}],
    }
    (tmp_path / "s.json").write_text(json.dumps(schedule))
    out = cli.run(["mig", "validate", "s.json"], tmp_path)
    assert out.code == 0 and "rm -rf ~/scratch && ./train" in out.stdout and "bash" in out.stdout, out.describe()


# ------------------------------------------------------------------ 8. noise
def test_plan_packs_warning_is_one_short_line(cli, tmp_path):
    # an 11 KB warning listing every repaired task
    lines = ["task,1,2,3,4", *(f"t{i},4,5,6,7" for i in range(5000))]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    out = cli.run(["plan", "packs", "p.csv", "--k", "0"], tmp_path)
    assert_user_error(out, "k")
    warnings = out.stderr.strip().splitlines()[:-1]
    assert len(warnings) == 1 and "5,000 tasks" in warnings[0] and len(warnings[0]) <= 300, out.stderr[:500]


@pytest.mark.parametrize(
    "args",
    [
        ["cluster", "policies"],
        ["mig", "algos"],
        ["packs", "algos"],
        ["kernel", "modes"],
        ["limits"],
        ["gpus"],
        ["repro", "list"],
        ["cluster", "list"],
    ],
    ids=" ".join,
)
def test_tables_in_80_columns_never_break_words(cli, tmp_path, args):
    # rich tables broke words in 80-column or non-tty output (best_fit / Fals e)
    out = cli.run(args, tmp_path)
    assert out.code == 0, out.describe()
    wide = cli.run(args, tmp_path, env={"COLUMNS": "400"})
    words = {w.strip("│┃|,;:()[]'\"") for line in wide.stdout.splitlines() for w in line.split()}
    narrow = {w.strip("│┃|,;:()[]'\"") for line in out.stdout.splitlines() for w in line.split()}
    # a table too wide is split into parts titled "1/2", "2/2": those are not words of the cells
    broken = {
        w
        for w in narrow - words
        if w and not any(ch in w for ch in "━─┏┓┗┛┃│╇╈┡┩└┘┌┐") and not re.fullmatch(r"\d+/\d+", w)
    }
    assert not broken, sorted(broken)[:20]
    assert max(len(line) for line in out.stdout.splitlines()) <= 80


# ------------------------------------------------------------------ found later by the long fuzz run (--full)
def test_round_length_of_1e_minus_320(cli, tmp_path):
    # ran 1e320 round ticks (killed after 60 s of CPU); a round is now at least one second
    args = ["simulate", "--policy", "fifo", "--jobs", "1", "--round-length", "1e-320", "--out", "r"]
    assert_user_error(cli.run(args, tmp_path), "field 'round_length'", "greater than or equal to 1")
    assert_user_error(cli.run(["bench", "sim", "--jobs", "10", "--round", "0.5"], tmp_path), "field 'round'")
    assert not (tmp_path / "r").exists()


def test_trace_header_with_unnamed_and_repeated_columns(cli, tmp_path):
    # two empty column names (trailing commas) raised AttributeError from pandas
    (tmp_path / "t.csv").write_text(
        TRACE_HEAD.rstrip("\n") + ",,\n" + f"a,0,1,{RESNET},600,1,\nb,30,2,{RESNET},900,,\n"
    )
    out = cli.run(["trace", "validate", "t.csv"], tmp_path)
    assert out.code == 0 and "2 jobs" in out.stdout, out.describe()
    (tmp_path / "d.csv").write_text(TRACE_HEAD.rstrip("\n") + ",user,user\n" + f"a,0,1,{RESNET},600,x,y\n")
    assert_user_error(cli.run(["trace", "validate", "d.csv"], tmp_path), "d.csv, row 0, field 'user'", "twice")


# ------------------------------------------------------------------ 9. user text in plots
MATHTEXT = r"$x\frac$"  # matplotlib reads $...$ as a formula; this one does not parse


@pytest.fixture(scope="module")
def kernel_run(cli, tmp_path_factory):
    base = tmp_path_factory.mktemp("kernel-run")
    example = ROOT / "examples" / "kernel" / "two-services.yaml"
    assert cli.run(["kernel", "simulate", str(example), "--out", "kernel"], base).code == 0
    return base / "kernel"


def _edited_cell(run, tmp_path, file: str, column: str, value: str, row: int = 1):
    """A copy of the kernel run (as ``tmp_path/run``) with one cell of ``file`` (data row ``row``) replaced."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    lines = (copy / file).read_text().splitlines()
    cells = lines[row].split(",")
    cells[lines[0].split(",").index(column)] = value
    lines[row] = ",".join(cells)
    (copy / file).write_text("\n".join(lines) + "\n")
    return copy


def test_report_draws_a_service_name_of_400_characters(cli, kernel_run, tmp_path):
    # found by the fuzz campaign: exit 0, but matplotlib's "constrained_layout not applied" UserWarning on stderr (the
    # legend entry was wider than the figure); long names are now cut at 80 characters in every plot
    _edited_cell(kernel_run, tmp_path, "tasks.csv", "service", "x" * 400)
    out = cli.run(["report", "run", "--out", "rep"], tmp_path)
    assert out.code == 0 and "Warning" not in out.stderr, out.describe()
    assert (tmp_path / "rep" / "report.html").exists()


def test_report_draws_a_service_named_like_a_broken_formula(cli, kernel_run, tmp_path):
    # ParseSyntaxException traceback, exit 1, half a report folder: the kernel timeline put service names on its
    # axis as they were
    _edited_cell(kernel_run, tmp_path, "kernels.csv", "service", MATHTEXT)
    out = cli.run(["report", "run", "--out", "rep"], tmp_path)
    assert out.code == 0 and "Traceback" not in out.stderr, out.describe()


@pytest.mark.parametrize(
    ("table", "args"),
    [
        (f"task,1,2,3,4,7\n{MATHTEXT},0.4,0.6,0.6,0.6,0.6\nBFS,0.3,0.2,0.07,0.1,0.05\n", ["mig", "--gpu", "A100"]),
        (f"task,1,2,3,4\n{MATHTEXT},4,5,6,7\nt2,4,5,6,7\n", ["packs"]),
    ],
    ids=["mig", "packs"],
)
def test_gantt_charts_draw_a_task_named_like_a_broken_formula(cli, tmp_path, table, args):
    # ParseSyntaxException traceback, exit 1: the charts wrote task names into their boxes as they were
    (tmp_path / "tasks.csv").write_text(table)
    out = cli.run(["plan", args[0], "tasks.csv", *args[1:], "--gantt", "g.png"], tmp_path)
    assert out.code == 0 and "Traceback" not in out.stderr, out.describe()
    assert (tmp_path / "g.png").stat().st_size > 0


@pytest.mark.parametrize("name", ["\x01big", "\u4efb\u52a1", "tab\there"], ids=["control", "cjk", "tab"])
def test_gantt_chart_draws_names_the_font_cannot_without_warnings(cli, tmp_path, name):
    # found by the fuzz campaign with charts drawn: "UserWarning: Glyph 0 (\x00) missing from font(s) DejaVu Sans"
    # on stderr, one per character (a CJK name too); control characters are now drawn as U+FFFD, missing glyphs as
    # the font's empty box, without the warning. (A NUL itself is malformed CSV since issue 39: see
    # tests/test_hardening_readers.py::test_nul_in_a_task_table_is_malformed_csv.)
    (tmp_path / "p.csv").write_text(f"task,1,2,3,4\n{name},40,22,16,13\nmid,20,11,8,7\n")
    out = cli.run(["plan", "packs", "p.csv", "--gantt", "g.png"], tmp_path)
    assert out.code == 0 and "Warning" not in out.stderr, out.describe()


@pytest.mark.parametrize(("column", "value"), [("priority", ""), ("priority", "12"), ("start_ms", "nan")])
def test_report_refuses_a_bad_number_in_kernels_csv_in_one_line(cli, kernel_run, tmp_path, column, value):
    # ValueError traceback, exit 1 (found by the fuzz campaign once it damaged kernels.csv): the timeline parsed
    # the numbers as it drew them
    _edited_cell(kernel_run, tmp_path, "kernels.csv", column, value, row=2)
    line = assert_user_error(cli.run(["report", "run", "--out", "rep"], tmp_path), "kernels.csv", "row 2", column)
    assert "Traceback" not in line


def test_a_report_that_fails_halfway_leaves_its_folder_as_it_was(cli, kernel_run, tmp_path):
    # the JCT plots were written before the damaged kernels.csv was met: half a report folder was left behind
    _edited_cell(kernel_run, tmp_path, "kernels.csv", "priority", "", row=2)
    assert_user_error(cli.run(["report", "run", "--out", "rep"], tmp_path), "kernels.csv", "priority")
    assert not (tmp_path / "rep").exists()
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "keep.txt").write_text("mine")
    assert_user_error(cli.run(["report", "run", "--out", "old"], tmp_path), "kernels.csv")
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == ["keep.txt"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no scratch left


@pytest.mark.parametrize("name", [".nan", ".inf", "yes", "null", "[a]"])
def test_kernel_service_named_by_a_yaml_non_text_value_is_refused(cli, tmp_path, name):
    # found by the fuzz campaign: `name: .nan` is YAML's NaN, and the service ran under the name "nan" (exit 0, "nan"
    # printed as a name); yes / null became "True" / "None"
    config = (
        "mode: fikit\nservices:\n- {name: A, trace: 'canonical:HI', priority: 0}\n"
        f"- {{name: {name}, trace: 'canonical:LO', priority: 1}}\n"
    )
    (tmp_path / "k.yaml").write_text(config)
    assert_user_error(cli.run(["kernel", "simulate", "k.yaml"], tmp_path), "row 2", "name", "quote it")


def test_kernel_service_named_by_a_number_keeps_working(cli, tmp_path):
    config = "mode: fikit\nservices:\n- {name: 7, trace: 'canonical:HI', priority: 0, workload: {n: 2}}\n"
    (tmp_path / "k.yaml").write_text(config)
    out = cli.run(["kernel", "simulate", "k.yaml"], tmp_path)
    assert out.code == 0 and " 7 " in out.stdout, out.describe()
