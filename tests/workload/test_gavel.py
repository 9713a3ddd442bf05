"""Gavel trace reader: the three layouts on the real files, and malformed input."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.workload.traces import load_trace_frame, read_gavel_trace
from gpuweave.workload.traces.formats import detect_format
from gpuweave.workload.traces.gavel import detect_layout
from gpuweave.workload.traces.schema import frame_to_jobs

from .conftest import assert_names

# From the shared Gavel README: jobs and GPU-count histogram per file.
PHYSICAL = {
    "artifact_evaluation": (15, {1: 12, 2: 3}),
    "debug": (14, {1: 11, 2: 3}),
    "highmem_test": (8, {1: 7, 2: 1}),
    "max_min_fairness": (96, {1: 59, 2: 19, 4: 18}),
    "medium_test": (20, {1: 20}),
    "minimize_makespan": (100, {1: 71, 2: 6, 4: 23}),
    "small_test": (20, {1: 17, 2: 3}),
}
MSR = {
    "2869ce": (533, 8_141_054, {8: 379, 32: 70, 1: 65, 4: 11, 2: 6, 16: 2}),
    "11cb48": (2000, 8_799_232, {1: 1559, 4: 257, 2: 81, 16: 69, 8: 23, 32: 8, 24: 2, 64: 1}),
    "ee9e8c": (2000, 4_508_448, {1: 975, 8: 543, 4: 321, 16: 106, 2: 47, 32: 5, 7: 2, 20: 1}),
    "795a4c": (3, 3_362, {1: 3}),
}


@pytest.mark.parametrize("name", sorted(PHYSICAL))
def test_current_10_field_traces(shared_data, profiles, name):
    path = shared_data / "gavel" / "traces" / "physical_cluster" / f"{name}.trace"
    assert detect_layout(path) == "gavel-10"
    frame = load_trace_frame(path, "gavel", profiles=profiles)
    count, histogram = PHYSICAL[name]
    assert len(frame) == count
    assert dict(Counter(frame["num_gpus"])) == histogram
    assert (frame["priority"] == 1).all() and "slo" not in frame.columns
    jobs = frame_to_jobs(frame)
    assert all(job.work > 0 and job.job_type in profiles for job in jobs)


def test_max_min_fairness_arrivals(shared_data):
    frame = load_trace_frame(shared_data / "gavel" / "traces" / "physical_cluster" / "max_min_fairness.trace")
    assert frame["arrival"].min() == 0 and frame["arrival"].max() == 46_317


@pytest.mark.parametrize("vc", sorted(MSR))
def test_old_7_field_msr_traces(shared_data, profiles, vc):
    path = shared_data / "gavel" / "traces" / "msr" / "seed=0" / f"{vc}.trace"
    assert detect_format(path) == "gavel" and detect_layout(path) == "gavel-msr-7"
    frame = load_trace_frame(path, profiles=profiles)
    count, last, histogram = MSR[vc]
    assert len(frame) == count
    assert frame["arrival"].max() == last
    assert dict(Counter(frame["num_gpus"])) == histogram
    assert frame["job_id"].is_unique


def test_all_msr_traces_parse(shared_data):
    total = 0
    for path in sorted((shared_data / "gavel" / "traces" / "msr" / "seed=0").glob("*.trace")):
        total += len(read_gavel_trace(path))
    assert total == 3 + 4 + 9 + 18 + 533 + 607 + 951 + 972 + 986 + 1181 + 5 * 2000


def test_too_many_gpus_on_a_real_msr_trace(shared_data):
    path = shared_data / "gavel" / "traces" / "msr" / "seed=0" / "11cb48.trace"
    with pytest.raises(InputError) as exc:
        load_trace_frame(path, max_gpus=32)
    assert_names(exc, path, 149, "num_gpus")  # line 149 is the trace's one 64-GPU job


def test_packing_branch_9_field_traces(shared_data, profiles):
    path = shared_data / "gavel" / "packing_experiment_branch" / "packed.trace"
    assert detect_layout(path) == "gavel-packing-9"
    frame = read_gavel_trace(path)
    assert frame["job_type"].tolist() == [
        "ResNet-50 (batch size 59)",
        "Transformer (batch size 98)",
        "LM (batch size 276)",
    ]
    assert frame["work"].tolist() == [133199, 166922, 386608]
    with pytest.raises(InputError) as exc:  # batch sizes 59/98/276 are not in the bundled table
        load_trace_frame(path, profiles=profiles)
    assert_names(exc, path, 1, "job_type")


LINE10 = "A3C\tpython3 main.py\tdir\t--steps\t1\t{steps}\t{scale}\t1\t{slo}\t{arrival}"


def test_bom_crlf_blank_lines_and_no_final_newline(tmp_path):
    path = tmp_path / "x.trace"
    lines = [
        LINE10.format(steps=100, scale=1, slo="-1", arrival=5),
        "",
        LINE10.format(steps=7, scale=1, slo="2.0", arrival=0),
    ]
    path.write_bytes(("\ufeff" + "\r\n".join(lines)).encode("utf-8"))
    frame = read_gavel_trace(path)
    assert frame["job_id"].tolist() == ["x-0", "x-1"]
    assert frame["work"].tolist() == [100, 7]
    assert frame["slo"].tolist()[1] == 2.0
    assert frame["_row"].tolist() == [1, 3]
    jobs = frame_to_jobs(load_trace_frame(path))
    assert [j.job_id for j in jobs] == ["x-1", "x-0"]
    assert jobs[0].attrs["slo"] == 2.0 and "slo" not in jobs[1].attrs


def test_msr_zero_scale_lines_are_skipped(tmp_path):
    path = tmp_path / "vc.trace"
    path.write_text("A3C\tcmd\t-n\t1\t50\t10\t0\nA3C\tcmd\t-n\t1\t60\t20\t1\n", encoding="utf-8")
    frame = read_gavel_trace(path)
    assert len(frame) == 1 and frame["arrival"].tolist() == [20]


@pytest.mark.parametrize(
    ("text", "row", "field", "words"),
    [
        ("A3C\tcmd\tonly-three\n", 1, "fields", "expected 7, 9 or 10"),
        (
            LINE10.format(steps=1, scale=1, slo=-1, arrival=0) + "\nA3C\tcmd\t-n\t1\t50\t10\t1\n",
            2,
            "fields",
            "like the first line",
        ),
        (LINE10.format(steps="many", scale=1, slo=-1, arrival=0) + "\n", 1, "total_steps", "expected a number"),
        (LINE10.format(steps=10, scale=1, slo=-1, arrival=-3) + "\n", 1, "arrival_time", ">= 0"),
        (LINE10.format(steps=10, scale=1.5, slo=-1, arrival=0) + "\n", 1, "scale_factor", "integer"),
        (LINE10.format(steps=-10, scale=1, slo=-1, arrival=0) + "\n", 1, "total_steps", "positive"),
    ],
)
def test_malformed_gavel_lines(tmp_path, text, row, field, words):
    path = tmp_path / "bad.trace"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_gavel_trace(path)
    assert_names(exc, path, row, field)
    assert words in str(exc.value)


def test_empty_gavel_trace(tmp_path: Path):
    path = tmp_path / "empty.trace"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no jobs"):
        read_gavel_trace(path)
