"""Issue 39 (hardening): the readers that were hand-rolled outside ``files.py``, and names from data files used as
paths.

Class 1: the crosscheck readers (Gavel's ``summary.csv`` and per-job results, Pollux's results JSON and workloads,
FGD's ``analysis_*_discrete.csv``), sacct's TRES and ElapsedRaw, scontrol's GRES, sacct/scontrol text in another
encoding (a file or stdin), Parquet with nested columns, and NUL bytes in CSV. Before the fix each gave a
traceback (ValueError, KeyError, OverflowError, UnicodeError) or printed NaN, negative or impossible numbers as
results; now each is one InputError naming the file, the row and the field.

Class 2: a trace name in Gavel's ``summary.csv`` (or a workload name in Pollux's results, FGD's workload column)
became a file name as written: ``../../evil`` read and wrote outside the data and output folders. Every such name
goes through :func:`gpuweave.files.safe_child` now.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.files import csv_rows, first_csv_row, read_stdin_text, safe_child, safe_name
from gpuweave.repro.crosscheck import run_crosscheck
from gpuweave.repro.crosscheck.fgd import read_expected
from gpuweave.repro.crosscheck.gavel import _peer_jcts, read_summary
from gpuweave.repro.crosscheck.pollux import crosscheck_pollux
from gpuweave.workload.traces._tables import read_csv_strings
from gpuweave.workload.traces.slurm import sacct_frame
from gpuweave.workload.traces.slurm_nodes import parse_gres
from tests.test_cli_bad_input import check_one_error
from tests.workload.test_pollux import write_app, write_workload

SUMMARY_HEAD = "trace,policy,avg_jct_s,median_jct_s,makespan_s,command\n"
COMMAND = "python x.py -c 2:1:1 --seed 0 --time_per_iteration 360"
GAVEL_TRACE = (
    "ResNet-50 (batch size 64)\tpython3 main.py\timage_classification/imagenet\t--num_minibatches\t1\t2931\t1\t1\t"
    "-1.000000\t0\n"
    "Transformer (batch size 16)\tpython3 train.py\ttranslation\t-step\t1\t11005\t2\t1\t-1.000000\t30\n"
)
SACCT_HEAD = "JobID|State|Submit|Start|End|ElapsedRaw|AllocTRES\n"
SACCT_OK = "1|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|3600|cpu=1,gres/gpu=2\n"


def gpuweave(*args, stdin: bytes | None = None, cwd=None) -> subprocess.CompletedProcess:
    """The CLI with ``stdin`` as bytes; stdout and stderr as text (UTF-8, undecodable bytes replaced)."""
    r = subprocess.run(
        [sys.executable, "-m", "gpuweave.cli", *map(str, args)], input=stdin, capture_output=True, timeout=120, cwd=cwd
    )
    return subprocess.CompletedProcess(
        r.args, r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    )


def one_line(exc: pytest.ExceptionInfo[InputError], *needles: str) -> str:
    text = str(exc.value)
    assert "\n" not in text
    for needle in needles:
        assert needle in text, (needle, text)
    return text


# ------------------------------------------------------------------ helper: safe_child / safe_name
@pytest.mark.parametrize(
    "name, message",
    [
        ("../../evil", "path separator"),
        ("a/b", "path separator"),
        ("a\\b", "path separator"),
        ("..", "starts with '.'"),
        (".hidden", "starts with '.'"),
        ("a\0b", "control character"),
        ("a\nb", "control character"),
        ("", "expected a name"),
        ("   ", "expected a name"),
        (7, "expected a name"),
        ("x" * 300, "too long"),
    ],
)
def test_safe_child_refuses_names_that_leave_the_directory(tmp_path, name, message):
    with pytest.raises(InputError) as exc:
        safe_child(tmp_path, name, suffix=".csv", file="summary.csv", row=3, field="trace")
    one_line(exc, "summary.csv, row 3, field 'trace'", message)


def test_safe_child_keeps_plain_names(tmp_path):
    assert safe_child(tmp_path, "poisson-120__fifo_perf", suffix=".csv") == tmp_path / "poisson-120__fifo_perf.csv"
    assert safe_name("workload 1 (é)") == "workload 1 (é)"


# ------------------------------------------------------------------ Gavel's summary.csv and per-job results
def write_summary(folder: Path, *rows: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "summary.csv"
    path.write_text(SUMMARY_HEAD + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "row, needles",
    [
        (f"t,fifo_perf,nan,2,3,{COMMAND}", ("row 1", "field 'avg_jct_s'", "'nan'")),
        (f"t,fifo_perf,1,-2,3,{COMMAND}", ("row 1", "field 'median_jct_s'", "> 0")),
        (f"t,fifo_perf,1,2,0,{COMMAND}", ("row 1", "field 'makespan_s'", "> 0")),
        (f"t,fifo_perf,abc,2,3,{COMMAND}", ("row 1", "field 'avg_jct_s'", "'abc'")),
        (f"t,fifo_perf,1e400,2,3,{COMMAND}", ("row 1", "field 'avg_jct_s'", "finite")),
        ("t,fifo_perf,1,2,3,python x.py -c 20:x:20", ("row 1", "field 'command'", "'x'")),
        ("t,fifo_perf,1,2,3,python x.py -c 99999999999999999999999:1:1", ("row 1", "field 'command'", "GPUs")),
        ("t,fifo_perf,1,2,3,python x.py -c 0:0:0", ("row 1", "field 'command'", "no GPU")),
        ("t,fifo_perf,1,2,3,python x.py --seed -1", ("row 1", "field 'command'", "got -1")),
        ("t,fifo_perf,1,2,3,python x.py --time_per_iteration nan", ("row 1", "field 'command'", "finite")),
        (f"../../evil,fifo_perf,1,2,3,{COMMAND}", ("row 1", "field 'trace'", "path separator")),
        (f"t,,1,2,3,{COMMAND}", ("row 1", "field 'policy'", "empty")),
        (f"t,fifo_perf,1,2\0,3,{COMMAND}", ("row 1", "malformed CSV", "NUL")),
    ],
)
def test_gavel_summary_refuses_bad_values(tmp_path, row, needles):
    path = write_summary(tmp_path, f"ok,fifo_perf,1,2,3,{COMMAND}", row)
    with pytest.raises(InputError) as exc:
        read_summary(path)
    text = one_line(exc, str(path), *needles[1:])
    assert "row 2" in text  # the bad row is the second data row


def test_gavel_summary_missing_column_and_failed_runs(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_text("trace,avg_jct_s,median_jct_s,makespan_s\nt,1,2,3\n")
    with pytest.raises(InputError) as exc:
        read_summary(path)
    one_line(exc, str(path), "row 0", "field 'policy'", "missing column")
    # a failed run (empty metrics) is skipped, not an error; the others are read
    path = write_summary(tmp_path / "b", f"t,fifo_perf,,,,{COMMAND}", f"u,fifo_perf,10,20,30,{COMMAND}")
    runs = read_summary(path)
    assert [(r.trace, r.avg_jct_s, r.gpus, r.seed, r.round_length) for r in runs] == [("u", 10.0, (2, 1, 1), 0, 360.0)]


@pytest.mark.parametrize(
    "table, needles",
    [
        ("job_id,jct_s\n0,10\n1,-5\n", ("row 2", "field 'jct_s'")),
        ("job_id,jct_s\n0,10\n1,nan\n", ("row 2", "field 'jct_s'", "'nan'")),
        ("job_id,jct_s\n0,10\nx,5\n", ("row 2", "field 'job_id'", "'x'")),
        ("job_id,jct_s\n0,10\n0,5\n", ("row 2", "field 'job_id'", "twice")),
        ("job_id,jct_s\n0,10\n1.5,5\n", ("row 2", "field 'job_id'", "integer")),
        ("job_id,jct\n0,10\n", ("row 0", "field 'jct_s'", "missing column")),
        ("job_id,jct_s\n0,10\n1,5\0\n", ("row 2", "malformed CSV", "NUL")),
    ],
)
def test_gavel_peer_results_refuse_bad_values(tmp_path, table, needles):
    path = tmp_path / "t__fifo_perf.csv"
    path.write_text(table)
    with pytest.raises(InputError) as exc:
        _peer_jcts(path)
    one_line(exc, str(path), *needles)


def test_crafted_trace_name_writes_nothing_outside_out(tmp_path):
    """`crosscheck gavel --data`: a summary row naming ``../../evil`` with that file present (so that, before the
    fix, it was simulated and its per-job file written two levels above the output directory)."""
    root = tmp_path / "a" / "b"
    data, out = root / "data", root / "out"
    write_summary(data, f"../../evil,fifo_perf,1000,1000,2000,{COMMAND}")
    (data / "traces").mkdir()
    (data / "evil.trace").write_text(GAVEL_TRACE)  # data/traces/../../evil.trace
    (root / "evil.trace").write_text(GAVEL_TRACE)
    before = sorted(p for p in tmp_path.rglob("*"))
    r = gpuweave("crosscheck", "gavel", "--data", data, "--out", out, "-q")
    check_one_error(r, "summary.csv", "row 1", "field 'trace'", "path separator")
    assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing written anywhere, --out included
    with pytest.raises(InputError, match="field 'trace'"):
        run_crosscheck("gavel", data, out)
    assert not list(tmp_path.rglob("*evil__*"))


def test_gavel_crosscheck_runs_on_good_data(tmp_path):
    data = tmp_path / "data"
    write_summary(data, f"t,fifo_perf,1000,1000,2000,{COMMAND}")
    (data / "traces").mkdir()
    (data / "traces" / "t.trace").write_text(GAVEL_TRACE)
    rows = run_crosscheck("gavel", data, tmp_path / "out")
    assert [r.metric for r in rows] == ["avg JCT", "median JCT", "makespan"]
    assert (tmp_path / "out" / "t__fifo_perf.csv").is_file()


# ------------------------------------------------------------------ Pollux's results JSON and workloads
def pollux_data(root: Path, jcts: object, name: str = "tiresias-1.0-results.json") -> Path:
    write_app(root / "traces")
    write_workload(root, ["toy-0,5,toy,1,10", "toy-1,70,toy,2,40"])
    text = jcts if isinstance(jcts, str) else json.dumps(jcts)  # a string: the JSON text as written
    (root / name).write_text('{"jcts": ' + text + "}")
    return root


@pytest.mark.parametrize(
    "jcts, needles",
    [
        ({"w": {"toy-0": -1}}, ("field 'jcts.w.toy-0'", "got -1")),
        ({"w": {"toy-0": 0}}, ("field 'jcts.w.toy-0'", "above 0")),
        ({"w": {"toy-0": "100"}}, ("field 'jcts.w.toy-0'", "'100'")),
        ({"w": {"toy-0": True}}, ("field 'jcts.w.toy-0'", "True")),
        ({"w": {"toy-0": [1]}}, ("field 'jcts.w.toy-0'",)),
        ('{"w": {"toy-0": 1e400}}', ("field 'jcts.w.toy-0'", "finite")),  # json reads 1e400 as inf
        ({"w": {}}, ("field 'jcts.w'", "at least one job")),
        ({"w": [100]}, ("field 'jcts.w'", "at least one job")),
        ({"../../evil": {"toy-0": 100}}, ("field 'jcts.../../evil'", "path separator")),
        ({"..": {"toy-0": 100}}, ("field 'jcts...'", "starts with '.'")),
    ],
)
def test_pollux_results_refuse_bad_values(tmp_path, jcts, needles):
    data = pollux_data(tmp_path / "data", jcts)
    with pytest.raises(InputError) as exc:
        crosscheck_pollux(data, tmp_path / "out")
    one_line(exc, "tiresias-1.0-results.json", *needles)
    assert not list(tmp_path.rglob("*evil*"))


def test_pollux_results_load_that_is_not_a_number(tmp_path):
    data = pollux_data(tmp_path / "data", {"w": {"toy-0": 100}}, name="tiresias-1.2.3-results.json")
    with pytest.raises(InputError) as exc:
        crosscheck_pollux(data, tmp_path / "out")
    one_line(exc, "tiresias-1.2.3-results.json", "field 'load (in the file name)'", "'1.2.3'")


@pytest.mark.parametrize(
    "row, needles",
    [
        ("toy-0,5,toy,inf,10", ("row 1", "field 'num_replicas'", "finite")),  # was an OverflowError
        ("toy-0,5,toy,1e30,10", ("row 1", "field 'num_replicas'", "GPUs")),
        ("toy-0,-5,toy,1,10", ("row 1", "field 'time'", "got -5")),
        ("toy-0,5,toy,1,nan", ("row 1", "field 'batch_size'", "finite")),
        ("toy-0,5,toy,1,1\0", ("row 1", "malformed CSV", "NUL")),
    ],
)
def test_pollux_workload_refuses_bad_values(tmp_path, row, needles):
    data = pollux_data(tmp_path / "data", {"w": {"toy-0": 100}})
    write_workload(data, [row])
    with pytest.raises(InputError) as exc:
        crosscheck_pollux(data, tmp_path / "out")
    one_line(exc, "w.csv", *needles)


# ------------------------------------------------------------------ FGD's analysis_*_discrete.csv
FGD_HEAD = "workload,sc_policy,tune,seed,total_gpus," + ",".join(str(k) for k in range(131)) + "\n"


def fgd_row(seed: str = "42", value: str = "50.0", workload: str = "openb_pod_list_default") -> str:
    return f"{workload},06-FGD,1.3,{seed},100," + ",".join([value] * 131) + "\n"


@pytest.mark.parametrize(
    "row, needles",
    [
        (fgd_row(value="nan"), ("row 2", "field '0'", "'nan'")),
        (fgd_row(value="-1"), ("row 2", "field '0'", ">= 0")),
        (fgd_row(value="150"), ("row 2", "field '0'", "<= 100")),
        (fgd_row(value="abc"), ("row 2", "field '0'", "'abc'")),
        (fgd_row(value="inf"), ("row 2", "field '0'", "finite")),
        (fgd_row(seed="x"), ("row 2", "field 'seed'", "'x'")),
        (fgd_row(seed="-3"), ("row 2", "field 'seed'", ">= 0")),
        (fgd_row(seed="42"), ("row 2", "field 'seed'", "twice")),
        (fgd_row(workload="openb_pod_list_../../evil"), ("row 2", "field 'workload'", "path separator")),
        (fgd_row(value="1\0"), ("row 2", "malformed CSV", "NUL")),
    ],
)
def test_fgd_results_refuse_bad_values(tmp_path, row, needles):
    path = tmp_path / "analysis_allo_discrete.csv"
    path.write_text(FGD_HEAD + fgd_row() + row)
    with pytest.raises(InputError) as exc:
        read_expected(path)
    one_line(exc, str(path), *needles)


def test_fgd_results_missing_column_and_empty_cells(tmp_path):
    path = tmp_path / "analysis_allo_discrete.csv"
    path.write_text(FGD_HEAD.replace(",seed,", ",seeds,") + fgd_row())
    with pytest.raises(InputError) as exc:
        read_expected(path)
    one_line(exc, str(path), "row 0", "field 'seed'", "missing column")
    path.write_text(FGD_HEAD + fgd_row().replace(",50.0\n", ",\n"))  # load 130 not reached: NaN, not an error
    curves = read_expected(path)
    values = curves[("default", "FGD")][42]
    assert values[0] == 50.0 and values[130] != values[130]


def test_fgd_seeds_option_that_is_not_a_number(tmp_path):
    (tmp_path / "analysis_allo_discrete.csv").write_text(FGD_HEAD + fgd_row())
    with pytest.raises(InputError) as exc:
        run_crosscheck("fgd", tmp_path, tmp_path / "out", {"seeds": "42,x"})
    one_line(exc, "field 'seeds'", "'x'")


# ------------------------------------------------------------------ sacct: TRES, ElapsedRaw, times, encodings
@pytest.mark.parametrize(
    "line, needles",
    [
        ("cpu=1,gres/gpu=\u00b2", ("field 'AllocTRES'", "expected a GPU count")),  # superscript two: isdigit()
        ("cpu=1,gres/gpu=\u0663", ("field 'AllocTRES'", "expected a GPU count")),  # Arabic-Indic three
        ("cpu=1,gres/gpu=100000000000000000000000", ("field 'AllocTRES'", "1,000,000")),  # 10^23 GPUs
        ("cpu=1,gres/gpu=" + "9" * 5000, ("field 'AllocTRES'", "finite")),
        ("gres/gpu:a=600000,gres/gpu:b=600000", ("field 'AllocTRES'", "1,000,000")),  # typed entries summed
    ],
)
def test_sacct_tres_with_odd_or_huge_counts(line, needles):
    text = SACCT_HEAD + SACCT_OK + SACCT_OK.replace("1|", "2|", 1).replace("cpu=1,gres/gpu=2", line)
    with pytest.raises(InputError) as exc:
        sacct_frame(text, source="jobs.sacct")
    one_line(exc, "jobs.sacct, row 2", *needles)


@pytest.mark.parametrize(
    "times, needles",
    [
        ("2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|-60", ("field 'ElapsedRaw'", "'-60'")),
        ("2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|inf", ("field 'ElapsedRaw'", "'inf'")),
        ("2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|1e300", ("field 'ElapsedRaw'", "'1e300'")),
        (
            "2024-01-01T01:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|60",
            ("field 'Start'", "before it was submitted"),
        ),
        ("2024-01-01T00:00:00|2024-01-01T02:00:05|2024-01-01T01:00:05|60", ("field 'End'", "ends before it started")),
    ],
)
def test_sacct_impossible_times(times, needles):
    line = f"2|COMPLETED|{times}|cpu=1,gres/gpu=1\n"
    with pytest.raises(InputError) as exc:
        sacct_frame(SACCT_HEAD + SACCT_OK + line, source="jobs.sacct")
    one_line(exc, "jobs.sacct, row 2", *needles)


LATIN1_SACCT = (
    (SACCT_HEAD + SACCT_OK.replace("COMPLETED", "COMPLETED") + "").encode()
    + ("3|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|3600|cpu=1,gres/gpu=1\n").encode()
    + "# café\n".encode("latin-1")
)


def test_sacct_in_latin1_on_stdin_and_from_a_file(tmp_path):
    r = gpuweave("trace", "import-slurm", "-", "--out", tmp_path / "t.csv", stdin=LATIN1_SACCT)
    check_one_error(r, "<stdin>", "not UTF-8 text (byte")
    path = tmp_path / "jobs.sacct"
    path.write_bytes(LATIN1_SACCT)
    r = gpuweave("trace", "import-slurm", path, "--out", tmp_path / "t.csv")
    check_one_error(r, str(path), "not UTF-8 text (byte")
    assert not (tmp_path / "t.csv").exists()
    # UTF-8 on stdin still works (and a BOM is dropped)
    good = b"\xef\xbb\xbf" + (SACCT_HEAD + SACCT_OK).encode()
    r = gpuweave("trace", "import-slurm", "-", "--out", tmp_path / "t.csv", stdin=good)
    assert r.returncode == 0, r.stderr
    assert "from <stdin>" in r.stdout


def test_scontrol_in_latin1_on_stdin():
    text = "NodeName=n1 Gres=gpu:v100:4 State=IDLE Reason=caf\xe9\n".encode("latin-1")
    check_one_error(gpuweave("cluster", "import-slurm", "-", stdin=text), "<stdin>", "not UTF-8 text (byte 49)")


def test_read_stdin_text_limits_and_decodes():
    assert read_stdin_text(stream=io.BytesIO("\ufeffcafé".encode())) == "café"
    with pytest.raises(InputError, match="<stdin>: not UTF-8 text"):
        read_stdin_text(stream=io.BytesIO(b"caf\xe9"))


@pytest.mark.parametrize(
    "gres, message",
    [
        ("gpu:v100:100000000000000000000000", "more than 1,000,000 GPUs"),
        ("gpu:v100:2M", "more than 1,000,000 GPUs"),
        ("gpu:v100:" + "9" * 5000, "more than 1,000,000 GPUs"),  # was int()'s 4300-digit ValueError
        ("gpu:v100:\u0663", "cannot read the GPU count"),
    ],
)
def test_scontrol_gres_with_odd_or_huge_counts(gres, message):
    with pytest.raises(InputError, match=message) as exc:
        parse_gres(gres, where=" (nodes.txt, line 3)")
    one_line(exc, "(nodes.txt, line 3)")
    assert len(str(exc.value)) < 300


# ------------------------------------------------------------------ Parquet with nested columns
@pytest.mark.parametrize("column", ["job_id", "tags", "meta", "pairs"])
def test_parquet_with_a_nested_column(tmp_path, column):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gpuweave.workload.traces.schema import read_table

    columns: dict[str, object] = {
        "job_id": ["a", "b"],
        "arrival": [0, 1],
        "num_gpus": [1, 1],
        "job_type": ["A3C", "A3C"],
        "duration": [10, 20],
    }
    nested = {
        "job_id": pa.array([["a"], ["b"]]),
        "tags": pa.array([[1, 2], [3]]),
        "meta": pa.array([{"x": 1}, {"x": 2}]),
        "pairs": pa.array([[("k", 1)], [("k", 2)]], type=pa.map_(pa.string(), pa.int64())),
    }
    columns[column] = nested[column]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(InputError) as exc:
        read_table(path)
    one_line(exc, str(path), "row 0", f"field '{column}'", "nested Parquet column")
    check_one_error(gpuweave("trace", "validate", path), f"field '{column}'", "nested Parquet column")


# ------------------------------------------------------------------ NUL bytes are malformed CSV everywhere
def test_nul_is_malformed_csv_in_every_csv_path(tmp_path):
    with pytest.raises(InputError) as exc:
        list(csv_rows(io.StringIO("a,b\n1,2\n3,4\0\n", newline=""), file="t.csv"))
    one_line(exc, "t.csv, row 2", "malformed CSV", "NUL")
    with pytest.raises(InputError) as exc:
        first_csv_row("a,b\n1,2\n3,\0\n", file="p.csv")
    one_line(exc, "p.csv, row 2", "NUL")
    path = tmp_path / "t.csv"
    path.write_bytes(b"job_id,arrival\na,0\nb\0,1\n")
    with pytest.raises(InputError) as exc:
        read_csv_strings(path)
    one_line(exc, str(path), "row 2", "NUL")
    check_one_error(gpuweave("trace", "validate", path), "row 2", "malformed CSV", "NUL")


@pytest.mark.parametrize(
    "command, table",
    [
        (["plan", "packs"], "task,1,2,3,4\n\x00big,40,22,16,13\nmid,20,11,8,7\n"),
        (["plan", "mig", "--gpu", "A100"], "task,1,2,3,4,7\n\x00big,0.4,0.6,0.6,0.6,0.6\nBFS,0.3,0.2,0.07,0.1,0.05\n"),
    ],
    ids=["packs", "mig"],
)
def test_nul_in_a_task_table_is_malformed_csv(tmp_path, command, table):
    # a NUL in a task name was read as data by Python 3.11's csv module (and drawn in the Gantt chart as U+FFFD)
    path = tmp_path / "p.csv"
    path.write_text(table)
    r = gpuweave(command[0], command[1], path, *command[2:])
    check_one_error(r, str(path), "row 1", "malformed CSV", "NUL")
