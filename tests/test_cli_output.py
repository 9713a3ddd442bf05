"""CLI habits: every listing and summary command's --json parses; progress bars appear on a terminal and never in
piped output; tables fit 80 columns without breaking a word (the shared helper gpuweave.cli.output)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from gpuweave.cli.output import fit_tables

ROOT = Path(__file__).resolve().parent.parent
KERNEL_CONFIG = ROOT / "examples" / "kernel" / "two-services.yaml"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


LISTINGS = [
    (("gpus",), lambda d: {"V100", "K80", "H200"} <= {g["name"] for g in d} and any(g["mig_slices"] for g in d)),
    (("gpus", "A100", "--partitions"), lambda d: d["name"].startswith("A100") and len(d["partitions"]) == 19),
    (("cluster", "policies"), lambda d: {"fifo", "hadar", "gavel"} <= {e["name"] for e in d}),
    (("cluster", "list"), lambda d: "gavel-60" in {c["name"] for c in d} and all(c["gpus"] > 0 for c in d)),
    (("cluster", "show", "gavel-60"), lambda d: d["gpus"] == 60 and d["node_groups"]),
    (("mig", "algos"), lambda d: "far" in {e["name"] for e in d}),
    (("packs", "algos"), lambda d: "pack-by-pack-9" in {e["name"] for e in d}),
    (("kernel", "modes"), lambda d: "fikit" in {e["name"] for e in d}),
    (("repro", "list"), lambda d: {"far", "hadar", "packs"} <= {r["name"] for r in d}),
]


@pytest.mark.parametrize("args, check", LISTINGS, ids=[" ".join(a) for a, _ in LISTINGS])
def test_listing_json_parses(args, check):
    res = cli(*args, "--json")
    assert res.returncode == 0, res.stderr
    assert check(json.loads(res.stdout))


def test_summary_commands_json_parse(tmp_path):
    res = cli("cluster", "simulate", "--policy", "sjf", "--jobs", "40", "--out", str(tmp_path / "run"), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["policy"] == "sjf" and data["metrics"]["jobs"] == 40 and data["results"] == str(tmp_path / "run")

    trace = tmp_path / "jobs.csv"
    assert cli("trace", "generate", str(trace), "--jobs", "30", "--seed", "1").returncode == 0
    info = json.loads(cli("trace", "info", str(trace), "--json").stdout)
    assert info["jobs"] == 30 and sum(info["gpus_per_job"].values()) == 30

    kernel = json.loads(cli("kernel", "simulate", str(KERNEL_CONFIG), "--mode", "fikit", "--json").stdout)
    assert kernel["mode"] == "fikit" and kernel["metrics"]["kernels"] > 0

    bench = json.loads(cli("bench", "sim", "--jobs", "50", "--gpus", "24", "--json").stdout)
    assert bench["bench"] == "sim" and bench["jobs"] == 50
    args = ("bench", "sim", "--jobs", "40", "--gpus", "24", "--policy", "gavel", "--option", "lp=warm-simplex")
    warm = json.loads(cli(*args, "--json").stdout)
    assert warm["options"] == {"lp": "warm-simplex"} and warm["completed"] == 40


def test_plan_json_dash_prints_the_plan_on_stdout(inputs, tmp_path):
    """`--json PATH` still writes the file (and prints the table); `--json -` prints the same document on stdout
    and nothing else there (messages of --gantt/--out go to stderr)."""
    tasks = str(inputs / "tasks.csv")
    to_file = cli("mig", "plan", tasks, "--json", str(tmp_path / "schedule.json"))
    assert to_file.returncode == 0 and "makespan" in to_file.stdout and "wrote" in to_file.stdout
    to_stdout = cli("mig", "plan", tasks, "--json", "-", "--gantt", str(tmp_path / "g.png"))
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout == (tmp_path / "schedule.json").read_text()  # the same bytes
    assert json.loads(to_stdout.stdout)["makespan"] > 0 and "wrote" in to_stdout.stderr
    (tmp_path / "piped.json").write_text(to_stdout.stdout)
    assert cli("mig", "validate", str(tmp_path / "piped.json")).returncode == 0  # what `mig run` would read

    profile = str(inputs / "profile.csv")
    assert cli("packs", "plan", profile, "--json", str(tmp_path / "plan.json")).returncode == 0
    printed = cli("packs", "plan", profile, "--json", "-", "--out", str(tmp_path / "run"))
    assert printed.returncode == 0, printed.stderr
    plan, written = json.loads(printed.stdout), json.loads((tmp_path / "plan.json").read_text())
    for doc in (plan, written):
        doc["metrics"].pop("runtime_ms")  # a timing, measured anew by each run
    assert plan == written and "wrote" in printed.stderr
    (tmp_path / "piped-plan.json").write_text(printed.stdout)
    run = json.loads(cli("packs", "run", str(tmp_path / "piped-plan.json"), "--command", "true", "--json").stdout)
    assert run["ok"] and [t["task"] for p in run["packs"] for t in p["tasks"]]


def test_more_summary_commands_json_parse(inputs, tmp_path):
    schedule = tmp_path / "schedule.json"
    assert cli("mig", "plan", str(inputs / "tasks.csv"), "--json", str(schedule)).returncode == 0
    valid = json.loads(cli("mig", "validate", str(schedule), "--json").stdout)
    assert valid["valid"] and valid["tasks"] == 9 and valid["makespan_s"] > 0
    (tmp_path / "cmd.csv").write_text("task,1,2,3,4,7,command\nA,10,6,4,3,2,true\nB,8,5,4,3,3,true\n")
    assert cli("mig", "plan", str(tmp_path / "cmd.csv"), "--json", str(tmp_path / "cmd.json")).returncode == 0
    dry = json.loads(cli("mig", "run", str(tmp_path / "cmd.json"), "--dry-run", "--json").stdout)
    assert dry["calls"][0] == "nvmlInit()" and any("run A" in call for call in dry["calls"])

    trace = json.loads(cli("trace", "validate", str(inputs / "jobs.csv"), "--json").stdout)
    assert trace["valid"] and trace["jobs"] == 60 and trace["largest_job_gpus"] >= 1
    bench = json.loads(cli("kernel", "bench", "--tasks", "5", "--json").stdout)
    assert bench["mode"] == "fikit" and bench["events"] > 0
    res = cli("sweep", str(inputs / "sweep.yaml"), "--workers", "1", "--out", str(tmp_path / "sweep"), "--json")
    assert res.returncode == 0, res.stderr
    sweep = json.loads(res.stdout)
    assert sweep["cells"] == 2 and sweep["failed"] == 0 and len(sweep["aggregate"]) == 2
    assert "\x1b[" not in res.stderr and "━" not in res.stderr  # no progress bar in piped output


def test_progress_bar_only_on_a_terminal(tmp_path):
    args = ("cluster", "simulate", "--policy", "fifo", "--jobs", "300")
    piped = cli(*args, "--out", str(tmp_path / "piped"))
    assert piped.returncode == 0, piped.stderr
    for stream in (piped.stdout, piped.stderr):
        assert "jobs done" not in stream and "\x1b[" not in stream and "\r" not in stream
    assert "results:" in piped.stdout

    on_tty = _run_on_a_pty([sys.executable, "-m", "gpuweave.cli", *args, "--out", str(tmp_path / "tty")])
    assert b"jobs done" in on_tty and b"left" in on_tty  # the bar, with the time left, is drawn on a terminal ...
    quiet = _run_on_a_pty([sys.executable, "-m", "gpuweave.cli", *args, "--out", str(tmp_path / "q"), "--quiet"])
    assert b"jobs done" not in quiet and b"results:" in quiet  # ... and not with --quiet


def test_sweep_bar_only_on_a_terminal_and_not_with_quiet(inputs, tmp_path):
    """A sweep drew its bar into piped stderr before; now it follows the same rule as every command."""
    argv = [sys.executable, "-m", "gpuweave.cli", "sweep", str(inputs / "sweep.yaml"), "--workers", "1"]
    on_tty = _run_on_a_pty([*argv, "--out", str(tmp_path / "tty")])
    assert b"0:00:" in on_tty and b"2/2" in on_tty  # the bar's elapsed time and cell count
    quiet = _run_on_a_pty([*argv, "--out", str(tmp_path / "quiet"), "--quiet"])
    assert b"0:00:" not in quiet and b"2 cells: 2 run" in quiet


def _run_on_a_pty(argv: list[str]) -> bytes:
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        try:
            data = os.read(master, 65536) if ready else b""
        except OSError:  # the child closed the terminal
            data = b""
        if not data:
            break
        out += data
    os.close(master)
    assert proc.wait(timeout=120) == 0, out[-2000:]
    return out


TABLES = [("cluster", "policies"), ("gpus",), ("cluster", "list"), ("repro", "list"), ("mig", "algos")]


@pytest.mark.parametrize("args", TABLES, ids=[" ".join(a) for a in TABLES])
def test_listing_tables_keep_names_whole(args):
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    listing = json.loads(cli(*args, "--json").stdout)
    for name in [e["name"] for e in listing]:  # names never folded over two lines
        assert any(name in line for line in lines), name


# Runs the CLI with gpuweave.cli.output.fit_tables wrapped so that every table's cells are also written to a file:
# the test then knows each word the command meant to show and can check that each one is on the page whole.
RECORDING_CLI = """
import json, os
import gpuweave.cli.output as output
seen, fit = [], output.fit_tables
def recording(title, columns, rows, width, **options):
    seen.append([[str(c) for c in columns], *[["" if v is None else str(v) for v in row] for row in rows]])
    return fit(title, columns, rows, width, **options)
output.fit_tables = recording
from gpuweave.cli import main
try:
    main()
finally:
    with open(os.environ["TABLES_RECORD"], "w") as fh:
        json.dump(seen, fh)
"""
BOX_DRAWING = re.compile("[\u2500-\u257f]")
ANDREAS_STATE = {
    "now": 1200,
    "nodes": [{"name": "armida-05", "gpu": "TESLA", "gpus": 1}, {"name": "armida-06", "gpu": "TESLA", "gpus": 2}],
    "jobs": [
        {"id": "J6", "application": "efficientNet", "epochs": 80, "submission": 0, "due": 3600, "weight": 4},
        {"id": "J9", "application": "convolutionNet", "epochs": 160, "submission": 1200, "due": 2600, "weight": 2},
    ],
}
SWEEP = """grain: packs
base: {workload: syn-ref, n: 8, p: 4, k: 2}
grid: {algo: [pack-by-pack-9, random-proc-9], seed: [0]}
out: OUT
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Small inputs of the table-printing commands: a MIG batch, a packs profile and plan, a trace, snapshots."""
    d = tmp_path_factory.mktemp("inputs")
    assert cli("mig", "generate", str(d / "tasks.csv"), "--n", "9", "--seed", "2").returncode == 0
    names = ("sequence-alignment-long-task-name", "T2", "T3", "T4")
    rows = [f"{n},{a},{a * 0.6:.3f}" for n, a in zip(names, (0.2, 0.1, 0.15, 0.1))]
    (d / "profile.csv").write_text("task,1,2\n" + "\n".join(rows) + "\n")
    assert cli("packs", "plan", str(d / "profile.csv"), "--json", str(d / "plan.json")).returncode == 0
    assert cli("trace", "generate", str(d / "jobs.csv"), "--jobs", "60", "--seed", "4").returncode == 0
    (d / "andreas.json").write_text(json.dumps(ANDREAS_STATE))
    (d / "sweep.yaml").write_text(SWEEP.replace("OUT", str(d / "sweep")))
    return d


TABLE_COMMANDS = {
    "gpus MODEL": ["gpus", "A100"],
    "gpus MODEL --partitions": ["gpus", "A100", "--partitions"],
    "gpus H100 --partitions": ["gpus", "H100", "--partitions"],
    "cluster show": ["cluster", "show", "gavel-60"],
    "cluster plan hadar": ["cluster", "plan", "hadar", str(ROOT / "examples" / "hadar" / "snapshot.json")],
    "cluster plan andreas": ["cluster", "plan", "andreas", "{in}/andreas.json"],
    "mig plan": ["mig", "plan", "{in}/tasks.csv"],
    "packs plan": ["packs", "plan", "{in}/profile.csv"],
    "packs run": ["packs", "run", "{in}/plan.json", "--command", "true"],
    "kernel simulate": ["kernel", "simulate", str(KERNEL_CONFIG)],
    "trace info": ["trace", "info", "{in}/jobs.csv"],
    "repro (comparison table)": ["repro", "far", "--reps", "1", "--out", "{tmp}/far"],
    "sweep (aggregate table)": ["sweep", "{in}/sweep.yaml", "--workers", "1"],
    "bench scale": ["bench", "scale", "--max-jobs", "1000"],
    "cluster policies": ["cluster", "policies"],
    "cluster list": ["cluster", "list"],
}


@pytest.mark.parametrize("name", list(TABLE_COMMANDS))
def test_tables_fit_80_columns_without_breaking_words(name, inputs, tmp_path):
    """COLUMNS=80, stdout piped: every line fits, the command's tables went through the shared helper, and every
    word of every cell (and header) is on the page whole, as often as the cells hold it."""
    args = [a.replace("{in}", str(inputs)).replace("{tmp}", str(tmp_path)) for a in TABLE_COMMANDS[name]]
    record = tmp_path / "tables.json"
    env = {**os.environ, "COLUMNS": "80", "TABLES_RECORD": str(record)}
    res = subprocess.run(
        [sys.executable, "-c", RECORDING_CLI, *args], capture_output=True, text=True, timeout=300, env=env
    )
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, max(lines, key=len)
    tables = json.loads(record.read_text())
    assert tables, f"{name}: no table went through gpuweave.cli.output"
    broken = words_cut(tables, res.stdout)
    assert not broken, f"{name}: words cut or folded: {broken}"


def words_cut(tables: list[list[list[str]]], text: str) -> dict[str, int]:
    """Words of the cells that ``text`` shows fewer times than the cells hold them (cut, folded or dropped)."""
    shown = Counter(BOX_DRAWING.sub(" ", text).split())
    meant = Counter(word for table in tables for row in table for cell in row for word in cell.split())
    return {word: n for word, n in meant.items() if shown[word] < n}


def test_words_cut_sees_what_rich_alone_does_to_a_narrow_table():
    """The check above has teeth: rich's own table at 40 columns cuts words, the helper's tables do not."""
    from rich.table import Table

    columns = ["policy", "what it does", "options (default)"]
    rows = [["gavel-min-total-duration", "Gavel's max-min fairness policy", "round_length=360.0"]]
    plain = Table(*columns)
    plain.add_row(*rows[0])
    console = Console(width=40, record=True)
    console.print(plain)
    assert words_cut([[columns, *rows]], console.export_text())
    console = Console(width=40, record=True)
    for table in fit_tables(None, columns, rows, 40):
        console.print(table)
    assert words_cut([[columns, *rows]], console.export_text()) == {}


def test_no_rich_table_outside_the_helper():
    """One table helper: no command builds a rich Table of its own (it would wrap and cut words its own way)."""
    src = ROOT / "src" / "gpuweave"
    users = [
        str(path.relative_to(src))
        for path in src.rglob("*.py")
        if "rich.table" in path.read_text() and path != src / "cli" / "output.py"
    ]
    assert users == []


def test_mig_run_timings_table_fits_80_columns(monkeypatch, capsys):
    """`mig run` needs a MIG GPU; its planned-vs-measured table and JSON are checked on a recorded result."""
    from gpuweave.cli.mig import print_timings, timings_json
    from gpuweave.mig.nvml_exec import ExecutionResult, TaskTiming

    timings = [
        TaskTiming("particlefilter-naive-long-name", 3, 4, 0.2, 41.5, 0.21, 43.0, 0),
        TaskTiming("heartwall", 1, 0, 0.4, 12.25, 0.4, 12.0, 0),
    ]
    result = ExecutionResult(timings, planned_makespan=41.5, measured_makespan=43.0)
    monkeypatch.setenv("COLUMNS", "80")
    print_timings(result)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "particlefilter-naive-long-name" in out and "+3.49" in out and "measured 43.000 s" in out
    data = json.loads(json.dumps(timings_json(result)))
    assert [t["task"] for t in data["tasks"]] == ["heartwall", "particlefilter-naive-long-name"]
    assert data["measured_makespan_s"] == 43.0 and data["tasks"][1]["instance"] == "3g@S4"


def test_fit_tables_splits_columns_and_keeps_words():
    columns = ["policy", *(f"metric number {i} (h)" for i in range(8))]
    rows = [["gavel-min-total-duration", *("123456.789" for _ in range(8))], ["hadar[slack-srpt]", *("1" * 8)]]
    tables = fit_tables("wide", columns, rows, 80)
    assert len(tables) > 1 and all(t.columns[0].header.plain == "policy" for t in tables)
    console = Console(width=80, record=True)
    for table in tables:
        console.print(table)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "gavel-min-total-duration" in text and "hadar[slack-srpt]" in text and "123456.789" in text


def test_fit_tables_shows_records_when_a_column_cannot_fit_beside_the_key():
    columns = ["policy", "options (default)"]
    rows = [["gavel-min-total-duration", "round_length=360.0 max_rounds=1000"], ["fifo", ""]]
    console = Console(width=36, record=True)
    for renderable in fit_tables("policies", columns, rows, 36):
        console.print(renderable)
    text = console.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 36
    assert words_cut([[columns, *rows]], text) == {}
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "policies" and "┃" not in text  # records, not a table split into unreadable strips
    assert lines.index("gavel-min-total-duration") == lines.index("policy") + 1


def test_comparison_notes_are_cut_at_a_space_on_purpose():
    """A 120-column terminal shows each reproduction row's note on one line: cut after a whole word, marked "…"."""
    from gpuweave.repro.registry import NOTE_CHARS, ComparisonRow, comparison_cells

    note = "AC14; min margin over FIFO/EDF/PS: total 0.6405, energy 0.1188; S=1 workload seeds x 1 RG seeds"
    rows = [ComparisonRow("scenario 1", "RG total cost <= FPM's", 1.0, 1.0, "bool", note)]
    columns, cells = comparison_cells(rows, notes=True)
    shown = cells[0][columns.index("note")]
    assert shown.endswith(" …") and len(shown) <= NOTE_CHARS + 1
    assert note.startswith(shown.removesuffix(" …")) and note[len(shown) - 2] in " ,;:"  # cut between words
    assert comparison_cells(rows, notes=False)[0] == ["experiment", "metric", "paper", "ours", "diff", "unit"]


@pytest.mark.parametrize(
    "value, text",
    [
        (434403.5450728072, "434,404"),
        (1_234_567, "1,234,567"),
        (999.4, "999.4"),
        (12.3456, "12.35"),
        (0.2561, "0.2561"),
        (0.0123, "0.0123"),
        (1.0, "1"),
        (-3.5, "-3.5"),
        (0.0, "0"),
        (1e-5, "1e-05"),
        (float("nan"), "n/a"),
        (None, "n/a"),
    ],
)
def test_table_numbers_are_plain_with_thousands_separators(value, text):
    """Issue #40 item 5: `avg_jct_s 4.344e+05` read as 434,404 (no scientific notation from 10^-3 to 10^15)."""
    from gpuweave.cli.output import cell

    assert cell(value) == text


def test_seconds_metrics_get_a_unit_by_magnitude():
    from gpuweave.cli.output import metric_cell

    assert metric_cell("avg_jct_s", 434403.5) == "434,404 s (5.028 d)"
    assert metric_cell("avg_jct_s", 72000.0) == "72,000 s (20 h)"
    assert metric_cell("mean_queueing_delay_s", 600.0) == "600 s (10 min)"
    assert metric_cell("p50_jct_s", 12.5) == "12.5 s"
    assert metric_cell("p50_jct_s", float("nan")) == "n/a"
    assert metric_cell("utilization", 0.25) == "0.25" and metric_cell("jobs", 200) == "200"


def test_simulate_table_is_plain_and_its_json_raw(tmp_path):
    res = cli("cluster", "simulate", "--policy", "fifo", "--jobs", "30", "--out", str(tmp_path / "run"))
    assert res.returncode == 0, res.stderr
    assert not re.search(r"\de[+-]\d", res.stdout), res.stdout
    assert re.search(r"avg_jct_s +│ +[\d,]+ s", res.stdout) and "useful_fraction" in res.stdout
    data = json.loads(cli("cluster", "simulate", "--policy", "fifo", "--jobs", "30", "--json", cwd=tmp_path).stdout)
    assert isinstance(data["metrics"]["avg_jct_s"], float) and 0 < data["metrics"]["useful_fraction"] <= 1
