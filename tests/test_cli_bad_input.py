"""Bad input on the command line: one line on stderr naming file/row/field, exit code 2, no traceback,
and no result that looks complete. Each case here was a traceback, a hang or a silent success before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_harness import run_cli

GOOD_TRACE = "job_id,arrival,num_gpus,job_type,duration\na,0,1,ResNet-18 (batch size 32),3600\n"


def gpuweave(*args, cwd=None):
    return run_cli(*args, cwd=cwd, timeout=120)


def check_one_error(r, *needles: str) -> str:
    """Assert the user-error contract and return the error line."""
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "afile").write_text("I am a file\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "good.csv").write_text(GOOD_TRACE)
    (tmp_path / "tasks.csv").write_text("task,1,2,3,4,7\nA,10,6,5,4,3\nB,8,5,4,3,2\n")
    return tmp_path


def test_output_path_under_a_regular_file(files):
    # before: FileExistsError / NotADirectoryError tracebacks (exit 1)
    check_one_error(
        gpuweave("simulate", "--policy", "fifo", "--jobs", 5, "--out", "afile/run", cwd=files), "afile", "field 'out'"
    )
    check_one_error(gpuweave("trace", "generate", "afile/jobs.csv", "--jobs", 5, cwd=files), "'afile' is a file")
    check_one_error(gpuweave("plan", "mig", "tasks.csv", "--json", "afile/s.json", cwd=files), "field 'json'")
    check_one_error(gpuweave("repro", "far", "--reps", 1, "--out", "afile", cwd=files), "afile", "expected a directory")
    check_one_error(gpuweave("demo", "--quick", "--only", "packs", "--out", "afile", cwd=files), "field 'out'")
    # a directory where an output file was asked for: the schedule JSON is not moved over it
    check_one_error(gpuweave("plan", "mig", "tasks.csv", "--json", "adir", cwd=files), "is a directory")
    assert (files / "afile").read_text() == "I am a file\n" and not list((files / "adir").iterdir())
    assert not (files / "adir.tmp").exists()


def test_directory_given_as_an_input_file(files):
    # before: IsADirectoryError tracebacks; cluster show said "unknown cluster"
    check_one_error(gpuweave("simulate", "adir", cwd=files), "adir", "got a directory")
    check_one_error(gpuweave("mig", "validate", "adir", cwd=files), "adir", "got a directory")
    check_one_error(gpuweave("cluster", "show", "adir", cwd=files), "adir", "got a directory")


def test_malformed_yaml_is_one_line_with_the_line_number(files):
    # before: PyYAML's multi-line message (5-8 lines on stderr)
    (files / "run.yaml").write_text("policy: [fifo\n")
    check_one_error(gpuweave("simulate", "run.yaml", cwd=files), "run.yaml, row 2", "not valid YAML")
    (files / "sweep.yaml").write_text("base: [\n")
    check_one_error(gpuweave("sweep", "sweep.yaml", "--no-progress", cwd=files), "sweep.yaml, row 2", "not valid YAML")


def test_trace_reader_rejects_truncated_and_overflowing_rows(files):
    # a file cut inside a quoted field was read as complete (exit 0)
    (files / "cut.csv").write_text(GOOD_TRACE + 'b,1,1,"ResNet-18 (batch')
    check_one_error(gpuweave("trace", "validate", "cut.csv", cwd=files), "cut.csv, row 2", "unterminated quote")
    # duration 1e308 made work = inf: ValueError traceback
    (files / "huge.csv").write_text(GOOD_TRACE.replace("3600", "1e308"))
    check_one_error(
        gpuweave("trace", "validate", "huge.csv", cwd=files), "huge.csv, row 1, field 'duration'", "<= 1e+10"
    )
    # an unknown --reference-gpu was accepted; --max-gpus 0 gave "largest placement is 0"
    check_one_error(
        gpuweave("trace", "validate", "good.csv", "--reference-gpu", "Z900", cwd=files), "field 'reference_gpu'", "Z900"
    )
    check_one_error(gpuweave("trace", "convert", "good.csv", "o.csv", "--max-gpus", 0, cwd=files), "field 'max_gpus'")
    assert not (files / "o.csv").exists()


def test_sweep_checks_every_cell_before_running_any(files):
    # before: the cells ran, the bad one was "failed" (exit 1) and sweep.csv was written
    (files / "s.yaml").write_text("base: {cluster: gavel-60, jobs: 5}\ngrid: {policy: [fifo, bogus]}\nout: sw\n")
    check_one_error(
        gpuweave("sweep", "s.yaml", "--workers", 1, "--no-progress", cwd=files),
        "s.yaml",
        "cell policy=bogus",
        "unknown cluster policy",
    )
    (files / "t.yaml").write_text("base: {cluster: gavel-60, trace: bad.csv}\ngrid: {policy: [fifo]}\nout: sw\n")
    (files / "bad.csv").write_text(GOOD_TRACE.replace("3600", "nan"))
    check_one_error(
        gpuweave("sweep", "t.yaml", "--workers", 1, "--no-progress", cwd=files), "bad.csv, row 1, field 'duration'"
    )
    assert not (files / "sw").exists()


def test_repro_option_ranges_leave_no_comparison(files):
    # before: ZeroDivisionError (far), silently the default (andreas --n-max 0), ValueError (hadar --jobs 0)
    check_one_error(gpuweave("repro", "far", "--reps", 0, "--out", "r1", cwd=files), "field 'reps'")
    check_one_error(gpuweave("repro", "andreas", "--n-max", 0, "--out", "r2", cwd=files), "--n-max must be >= 10")
    check_one_error(gpuweave("repro", "hadar", "--jobs", 0, "--out", "r3", cwd=files), "field 'jobs'")
    assert not any((files / d).exists() for d in ("r1", "r2", "r3"))


def test_out_of_range_option_values(files):
    check_one_error(
        gpuweave("bench", "sim", "--jobs", 10, "--gpus", 24, "--rate", 0), "field 'rate'"
    )  # ran with rate 0
    check_one_error(
        gpuweave("bench", "sim", "--jobs", 10, "--gpus", 24, "--policy", "gavel", "--option", "lp=ecos"),
        "field 'policy_options'",
    )
    check_one_error(gpuweave("bench", "sim", "--jobs", 10, "--gpus", 24, "--profile", files), "field 'profile'")
    check_one_error(
        gpuweave("bench", "sim", "--jobs", 10, "--gpus", 24, "--profile", files / "afile" / "x.prof"), "field 'profile'"
    )
    check_one_error(
        gpuweave("mig", "generate", files / "g.csv", "--p-sup", "nan"), "field 'p_sup'"
    )  # ValueError traceback
    check_one_error(
        gpuweave("run", "packs", files / "none.json", "--timeout", 0), "field 'timeout'"
    )  # ran every task into a kill
    check_one_error(
        gpuweave("plan", "mig", files / "tasks.csv", "--gpus", 100000), "field 'gpus'"
    )  # ran for half an hour
    check_one_error(gpuweave("trace", "info", files / "good.csv", "--top", -1), "field 'top'")
    check_one_error(gpuweave("trace", "cluster", files / "good.csv", "--pue", 0.5), "field 'pue'")
    check_one_error(
        gpuweave("demo", "--only", "bogus", "--out", files / "d"), "unknown demo section 'bogus'"
    )  # ran nothing, exit 0
    (files / "big.yaml").write_text("name: big\nnodes:\n  - {count: 2000000000, gpu: V100, gpus_per_node: 4}\n")
    check_one_error(
        gpuweave("cluster", "show", files / "big.yaml"), "field 'nodes[0].count'"
    )  # hung expanding 2e9 nodes


def test_wrong_file_kinds(files):
    (files / "bin.csv").write_bytes(b"\x89PNG\x00\xff\xfe")
    check_one_error(
        gpuweave("plan", "mig", "bin.csv", cwd=files), "bin.csv", "not UTF-8"
    )  # UnicodeDecodeError traceback
    check_one_error(
        gpuweave("plan", "mig", "tasks.csv", "--gantt", "g.txt", cwd=files), "field 'gantt'", ".png"
    )  # matplotlib ValueError
    check_one_error(gpuweave("mig", "generate", "out.txt", cwd=files), "field 'out'", ".csv")


def test_failed_simulation_leaves_no_result(files):
    (files / "bad.csv").write_text(GOOD_TRACE.replace("3600", "-5"))
    check_one_error(
        gpuweave("simulate", "--policy", "fifo", "--trace", "bad.csv", "--out", "run", cwd=files), "bad.csv, row 1"
    )
    assert not (files / "run").exists()


def test_kernel_and_fikit_commands(files):
    # before: IsADirectoryError / NotADirectoryError / matplotlib ValueError tracebacks; serve started anyway
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "kernel" / "two-services.yaml"
    check_one_error(gpuweave("kernel", "simulate", "adir", cwd=files), "adir", "got a directory")
    check_one_error(gpuweave("kernel", "profile", "adir", "--task-key", "k", cwd=files), "adir", "got a directory")
    check_one_error(gpuweave("trace", "import-torch", "adir", cwd=files), "adir", "got a directory")
    check_one_error(gpuweave("kernel", "simulate", example, "--out", "afile/x.csv", cwd=files), "field 'out'")
    check_one_error(
        gpuweave("kernel", "simulate", example, "--timeline", "g.txt", cwd=files), "field 'timeline'", ".png"
    )
    check_one_error(gpuweave("fikit", "serve", "--profiles", "nope", cwd=files), "field 'profiles'")
    check_one_error(gpuweave("fikit", "serve", "--client-timeout", "-1", cwd=files), "field 'client_timeout'")


def _header_only_cases():
    from tests.fuzz.targets import (
        MIG_TASKS,
        OPENB_NODES,
        PACKS,
        PHILLY,
        PODS,
        SACCT_LINES,
        SPOT_JOBS,
        SPOT_NODES,
        TIRESIAS,
        TRACE_HEADER,
    )

    return [
        ("schema", "t.csv", TRACE_HEADER, ",", ["trace", "validate", "t.csv"]),
        ("philly", "t.csv", PHILLY[0], ",", ["trace", "info", "t.csv", "--format", "philly"]),
        ("tiresias", "t.csv", TIRESIAS[0], ",", ["trace", "convert", "t.csv", "o.csv", "--from", "tiresias"]),
        ("alibaba pods", "t.csv", PODS[0], ",", ["trace", "info", "t.csv", "--format", "alibaba-pods"]),
        ("alibaba jobs", "t.csv", SPOT_JOBS[0], ",", ["trace", "validate", "t.csv", "--format", "alibaba-jobs"]),
        ("sacct", "t.sacct", SACCT_LINES[0], "|", ["trace", "import-slurm", "t.sacct", "--out", "o.csv"]),
        ("openb nodes", "t.csv", OPENB_NODES[0], ",", ["trace", "cluster", "t.csv"]),
        ("spot nodes", "node_info_df.csv", SPOT_NODES[0], ",", ["trace", "cluster", "node_info_df.csv"]),
        (
            "simulate trace",
            "t.csv",
            TRACE_HEADER,
            ",",
            ["cluster", "simulate", "--policy", "sjf", "--trace", "t.csv", "--out", "r"],
        ),
        ("mig tasks", "t.csv", MIG_TASKS[0], ",", ["mig", "plan", "t.csv", "--json", "s.json"]),
        ("packs profile", "t.csv", PACKS[0], ",", ["packs", "plan", "t.csv", "--json", "p.json"]),
    ]


@pytest.mark.parametrize("blank_lines", [0, 3], ids=["header", "header and blank lines"])
def test_a_table_with_its_header_alone_is_one_line_error(tmp_path, blank_lines):
    # before: `trace info --format philly` raised ValueError (NaT has no strftime) and `trace import-slurm` an
    # AttributeError (.str on an empty column), each with a traceback; found by the fuzzer and this sweep
    for name, file, header, sep, argv in _header_only_cases():
        (tmp_path / file).write_text(sep.join(header) + "\n" * (1 + blank_lines))
        line = check_one_error(gpuweave(*argv, cwd=tmp_path), file)
        assert not (tmp_path / "o.csv").exists() and not (tmp_path / "r").exists(), (name, line)


def _csv_readers():
    from gpuweave.andreas.catalog import load_costs, load_profile_table
    from gpuweave.hadar.trace import load_pool
    from gpuweave.kernel.timeline import read_kernels_csv
    from gpuweave.live.results import read_jct
    from gpuweave.mig.problem import read_tasks_csv
    from gpuweave.packs.workloads import load_profile_csv
    from gpuweave.report.grains import GrainRun
    from gpuweave.report.repro import read_comparison
    from gpuweave.report.rundir import read_jobs
    from gpuweave.workload.pollux import _rows as pollux_rows
    from gpuweave.workload.profiles import load_profiles
    from gpuweave.workload.traces._tables import read_csv_strings

    def in_run_dir(path: Path, name: str) -> Path:  # readers that take a run directory and a fixed file name
        folder = path.parent / "run"
        folder.mkdir(exist_ok=True)
        (folder / name).write_bytes(path.read_bytes())
        return folder

    return {
        "trace tables": read_csv_strings,
        "MIG tasks": read_tasks_csv,
        "packs profile": load_profile_csv,
        "ANDREAS costs": load_costs,
        "ANDREAS epoch times": load_profile_table,
        "kernel timeline": read_kernels_csv,
        "throughput profiles": load_profiles,
        "Pollux measurements": lambda path: pollux_rows(path, ("task",)),
        "Hadar pool": load_pool,
        "report jobs.csv": read_jobs,
        "report comparison.csv": read_comparison,
        "report grain table": lambda path: GrainRun(path.parent, {}).table(path.name, ("task",)),
        "cluster compare jobs.csv": lambda path: read_jct(in_run_dir(path, "jobs.csv")),
    }


@pytest.mark.parametrize("reader", list(_csv_readers()))
def test_every_csv_reader_refuses_a_column_named_twice(tmp_path, reader):
    # before: all but the trace tables took one of the two silently (DictReader the last, an index lookup the
    # first, pandas renamed the second 'task.1'), so `mig plan` with two '3' columns planned from the second
    from gpuweave.errors import InputError

    path = tmp_path / "t.csv"
    path.write_text("# a comment\ntask,x,task\n1,2,3\n" if reader == "Hadar pool" else "task,x,task\n1,2,3\n")
    with pytest.raises(InputError) as exc:
        _csv_readers()[reader](path)
    message = str(exc.value)  # the file named is t.csv, or its copy in a run directory
    assert message.startswith(str(tmp_path)) and message.endswith(
        ", row 0, field 'task': column 'task' appears twice in the header"
    )


@pytest.mark.parametrize("reader", list(_csv_readers()))
@pytest.mark.parametrize("where", ["header", "data row"])
def test_every_csv_reader_refuses_a_field_past_the_csv_modules_limit_in_one_line(tmp_path, reader, where):
    # before: csv.Error (field larger than field limit (131072)) escaped as a traceback from mig plan's TASKS.csv,
    # the packs profile, --profiles, Pollux measurements, report's comparison.csv and grain tables, cluster compare
    from gpuweave.errors import InputError

    huge = "a" * 200_000
    path = tmp_path / "t.csv"
    path.write_text(f"task,{huge}\n1,2\n" if where == "header" else f"task,x\n1,{huge}\n")
    try:
        _csv_readers()[reader](path)
    except InputError as exc:  # the one-line error; a reader that never reads the cell may also accept the file
        assert "\n" not in str(exc) and str(exc).startswith(str(tmp_path))


def test_a_kernels_csv_with_a_bom_or_a_huge_field_is_read_or_refused_in_one_line(tmp_path):
    # before: a BOM hid the first column ("missing column 'panel'") and a 200,000-character header was a csv.Error
    from gpuweave.errors import InputError
    from gpuweave.kernel.timeline import KERNEL_COLUMNS, read_kernels_csv

    path = tmp_path / "kernels.csv"
    path.write_text("\ufeff" + ",".join(KERNEL_COLUMNS) + "\r\n" + ",".join("1" for _ in KERNEL_COLUMNS) + "\r\n")
    assert read_kernels_csv(path)[0]["panel"] == "1"
    path.write_text("panel," + "a" * 200_000 + "\n")
    with pytest.raises(InputError, match="malformed CSV: field larger than field limit"):
        read_kernels_csv(path)


def test_compare_and_report_read_bad_result_tables_in_one_line(tmp_path):
    # before: a jct that is not a number was a ValueError traceback in `cluster compare`, and a comparison.csv that
    # is not UTF-8 a UnicodeDecodeError traceback in `report`
    run = tmp_path / "run"
    run.mkdir()
    (run / "jobs.csv").write_text("job_id,jct\na,12.5\nb,soon\n")
    check_one_error(gpuweave("cluster", "compare", str(run), str(run)), "jobs.csv, row 2, field 'jct'", "'soon'")
    repro = tmp_path / "repro"
    repro.mkdir()
    (repro / "comparison.csv").write_bytes(b"experiment,metric,paper,ours\nx,y,\xff,1\n")
    check_one_error(gpuweave("report", str(repro), "--out", str(tmp_path / "o")), "comparison.csv: not UTF-8")
    assert not (tmp_path / "o").exists()
