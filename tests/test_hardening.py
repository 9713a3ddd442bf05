"""The shared hardening pieces (issue 13): the limits table, checked numbers, the one JSON/YAML reader, safe
command templates; and that the documentation shows the real limits."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from gpuweave import checks
from gpuweave.errors import InputError
from gpuweave.files import load_json, load_yaml, parse_json, parse_yaml, read_input_bytes
from gpuweave.limits import ENV, LIMITS, LimitError, check_limit, limit, limits_markdown, set_overrides
from gpuweave.packs.runner import expand_command

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("doc", ["README.md", "docs/hardening.md"])
def test_documented_limits_are_the_real_ones(doc):
    text = (ROOT / doc).read_text()
    block = re.search(r"<!-- limits-table:[^\n]*-->\n(.*?)\n<!-- /limits-table -->", text, re.S)
    assert block and block.group(1).strip() == limits_markdown()


def test_every_json_and_yaml_reader_goes_through_files_py():
    """Parsing user input anywhere else would skip the size, depth and strict-number checks."""
    internal = {  # files gpuweave itself writes and reads back, database columns it wrote, datagrams of 4 KB
        "src/gpuweave/files.py",
        "src/gpuweave/kernel/protocol.py",
        "src/gpuweave/live/results.py",
        "src/gpuweave/live/channel.py",
        "src/gpuweave/live/gang.py",  # the rendezvous file node 0's agent wrote
        "src/gpuweave/live/testbed.py",  # the testbed records under /run/gpuweave
        "src/gpuweave/live/slurm_advisor.py",  # the list of jobs it held (held.json), its own
        "src/gpuweave/live/journal.py",
        "src/gpuweave/service/jobs.py",
        "src/gpuweave/service/ledger.py",
        "src/gpuweave/service/store.py",
    }
    offenders = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in internal:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bjson\.loads?\(|yaml\.(safe_)?load\(|yaml\.load_all\(", line):
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert not offenders, offenders


# ------------------------------------------------------------------ limits
def test_limits_default_override_and_message(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert limit("trace_jobs") == LIMITS["trace_jobs"].default
    monkeypatch.setenv(ENV, "trace_jobs=10, sweep-cells=3")
    assert limit("trace_jobs") == 10 and limit("sweep_cells") == 3
    with pytest.raises(LimitError, match=r"11 is over the limit trace_jobs = 10 jobs; .*--limit trace_jobs=N"):
        check_limit("trace_jobs", 11, "jobs", file="t.csv")
    check_limit("trace_jobs", 10, "jobs")
    set_overrides(["mig_tasks=7"])  # merged into the environment, for the processes started from here
    assert limit("mig_tasks") == 7 and limit("trace_jobs") == 10
    for bad in ("nonesuch=3", "trace_jobs", "trace_jobs=0", "trace_jobs=1e3", "trace_jobs=-5"):
        with pytest.raises(InputError):
            set_overrides([bad])


# ------------------------------------------------------------------ numbers
@pytest.mark.parametrize(
    "value",
    [True, "3", None, [], math.nan, math.inf, -math.inf, 1e21, 10**5000, -1, 0, 2.5, np.float64(np.nan)],
    ids=lambda v: type(v).__name__ + (f"-{v!r}"[:20] if not isinstance(v, int) or abs(v) < 10**100 else "-huge"),
)
def test_gpu_counts_refuse_everything_but_whole_physical_numbers(value):
    with pytest.raises(InputError) as exc:
        checks.number(value, checks.GPUS, file="f.csv", row=3, field="num_gpus")
    line = exc.value.one_line()
    assert line.startswith("f.csv, row 3, field 'num_gpus': expected a ")
    assert "a whole number of GPUs from 1 to 1,000,000" in line
    assert "\n" not in line and len(line) < 200


def test_numbers_inside_the_range_pass_as_the_right_type():
    assert checks.number(4.0, checks.GPUS) == 4 and isinstance(checks.number(4.0, checks.GPUS), int)
    assert checks.number(np.int64(3), checks.GPUS) == 3
    assert checks.number(0, checks.SECONDS) == 0.0 and checks.number(1e10, checks.SECONDS) == 1e10
    with pytest.raises(InputError):
        checks.number(0, checks.DURATION)  # above 0
    assert checks.seed(2**32 - 1) == 2**32 - 1
    with pytest.raises(InputError, match="seed"):
        checks.seed(-1)
    assert checks.parse("12", checks.RESULT) == 12 and checks.parse(" 1.5 ", checks.RESULT) == 1.5
    for text in ("nan", "inf", "-Infinity", "", "1e400", "x"):
        with pytest.raises(InputError):
            checks.parse(text, checks.RESULT, file="jobs.csv", row=1, field="jct")


def test_check_array_names_the_first_bad_row():
    values = np.array([1.0, np.nan, 5.0, 1e300, -1.0])
    with pytest.raises(InputError, match=r"a.csv, row 13, field 'arrival': .*got 1e\+300"):
        checks.check_array(values, checks.SECONDS, file="a.csv", rows=[10, 11, 12, 13, 14], field="arrival")


# ------------------------------------------------------------------ the one JSON/YAML reader
@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[" * 200_000 + "]" * 200_000, "json_depth"),
        ("[" * 70 + "]" * 70, "nesting depth of the JSON: 65 is over the limit json_depth"),
        ('{"a": NaN}', "NaN is not a number in JSON"),
        ('{"a": -Infinity}', "-Infinity is not a number in JSON"),
        ("[" + "9" * 5000 + "]", "an integer of more than 4300 digits"),
        ('{"a": 1', "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
    ],
)
def test_hostile_json_is_one_line(text, needle):
    with pytest.raises(InputError) as exc:
        parse_json(text, source="x.json")
    assert needle in exc.value.one_line() and "\n" not in exc.value.one_line()


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (LAUGHS, "over the limit yaml_nodes"),
        ("a: &a [*a]", "refers to itself"),
        ("[" * 5000 + "]" * 5000, "not valid YAML"),
        ("a: 2001-13-01", "month must be in 1..12"),
        ("a: " + "9" * 5000, "more than 4300 digits"),
        ("policy: [fifo\n", "not valid YAML"),
    ],
)
def test_hostile_yaml_is_one_line(text, needle):
    with pytest.raises(InputError) as exc:
        parse_yaml(text, source="x.yaml")
    assert needle in exc.value.one_line() and "\n" not in exc.value.one_line()


def test_file_size_is_checked_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"1," * 700_000 + b"1]")  # 1.4 MB
    monkeypatch.setenv(ENV, "input_mb=1,yaml_mb=1")
    with pytest.raises(LimitError, match="over the limit input_mb = 1 MB"):
        load_json(big)
    (tmp_path / "big.yaml").write_bytes(b"a: [" + b"1," * 700_000 + b"1]")
    with pytest.raises(LimitError, match="yaml_mb"):
        load_yaml(tmp_path / "big.yaml")
    with pytest.raises(InputError, match="got a device"):
        read_input_bytes("/dev/zero")
    assert parse_yaml("a: [1, 2]") == {"a": [1, 2]}


# ------------------------------------------------------------------ commands
def test_command_templates_fill_one_argument_per_placeholder():
    values = {"procs": "2", "cpus": "0,1", "task": "a b'; rm -rf ~", "python": "/usr/bin/python3"}
    argv = expand_command("{python} -m x --procs {procs} --cpus={cpus} --name {task} {{literal}}", values)
    assert argv == [
        "/usr/bin/python3",
        "-m",
        "x",
        "--procs",
        "2",
        "--cpus=0,1",
        "--name",
        "a b'; rm -rf ~",
        "{literal}",
    ]
    for bad in ("echo {procs.__class__}", "echo {0}", "echo {procs!r}", "echo {procs:>9}", "echo }", "echo {task"):
        with pytest.raises(InputError, match="placeholder|brace"):
            expand_command(bad, values, task="t")
    with pytest.raises(InputError, match="cannot split"):
        expand_command("echo 'unterminated", values)
