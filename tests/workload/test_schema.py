"""Trace schema: reading, work filling, sorting, round trips and every bad-input case."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuweave.errors import InputError, MissingProfileError
from gpuweave.workload.job import Job
from gpuweave.workload.profiles import ProfileStore
from gpuweave.workload.traces import read_trace, write_trace
from gpuweave.workload.traces.schema import COLUMN_NAMES, TRACE_COLUMNS

from .conftest import assert_names

HEADER = "job_id,arrival,num_gpus,job_type,work,duration,priority,deadline"


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_sorts_fills_work_and_keeps_extras(tmp_path, profiles):
    path = write(
        tmp_path,
        "job_id,arrival,num_gpus,job_type,work,duration,priority,deadline,user,gpu_model,team\n"
        "b,10,2,ResNet-18 (batch size 32),,100,,,alice,v100,7\n"
        "a,10,1,A3C,500,,2,50,,,8\n"
        "c,0,1,CycleGAN,40,,,,bob,,9\n",
    )
    jobs = read_trace(path, profiles=profiles)
    assert [j.job_id for j in jobs] == ["c", "a", "b"]
    a, b = jobs[1], jobs[2]
    assert a.work == 500 and a.priority == 2 and a.deadline == 50 and a.duration is None
    assert b.work == pytest.approx(100 * profiles.rate("ResNet-18 (batch size 32)", "V100", 2, True))
    assert b.duration == 100 and b.priority == 1 and b.deadline is None
    assert b.attrs == {"user": "alice", "gpu_model": "V100", "team": 7}
    assert jobs[0].attrs == {"user": "bob", "team": 9}


def test_reference_gpu_changes_the_work(tmp_path, profiles):
    path = write(tmp_path, "job_id,arrival,num_gpus,job_type,duration\nx,0,1,A3C,10\n")
    (job,) = read_trace(path, profiles=profiles, reference_gpu="K80")
    assert job.work == pytest.approx(10 * profiles.rate("A3C", "K80", 1, True))


def test_csv_and_parquet_round_trip(tmp_path):
    jobs = [
        Job("j1", 0.0, 1, 100.0, "A3C", duration=20.0, attrs={"vc": "vc1", "slo": 1.2}),
        Job("j2", 5.5, 4, 2e6, "LM (batch size 20)", priority=5.0, deadline=100.0),
    ]
    for name in ("out.csv", "out.parquet"):
        path = tmp_path / name
        write_trace(jobs, path)
        back = read_trace(path)
        assert back == jobs


def test_write_rejects_other_suffixes(tmp_path):
    with pytest.raises(InputError, match=r"\.csv or \.parquet"):
        write_trace([Job("j", 0.0, 1, 1.0, "A3C")], tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_bom_and_missing_final_newline(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffjob_id,arrival,num_gpus,job_type,work\r\nx,0,1,A3C,5".encode("utf-8"))
    (job,) = read_trace(path)
    assert job.job_id == "x" and job.work == 5


def test_schema_table_matches_docs():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "trace-schema.md").read_text(encoding="utf-8")
    for column in TRACE_COLUMNS:
        assert f"| `{column.name}` |" in docs
    assert len(COLUMN_NAMES) == len(set(COLUMN_NAMES)) == 17


BAD_CASES = [
    # (csv body, row, field, words in the message)
    ("job_id,num_gpus,job_type,work\nx,1,A3C,5\n", 0, "arrival", "missing required column"),
    ("job_id,arrival,num_gpus,job_type\nx,0,1,A3C\n", 0, "work", "'work' or 'duration'"),
    (f"{HEADER}\nx,0,1,A3C,5,,,\ny,soon,1,A3C,5,,,\n", 2, "arrival", "expected a number"),
    (f"{HEADER}\nx,0,1,A3C,,-5,,\n", 1, "duration", "> 0"),
    (f"{HEADER}\nx,0,1,A3C,0,,,\n", 1, "work", "> 0"),
    (f"{HEADER}\nx,-1,1,A3C,5,,,\n", 1, "arrival", ">= 0"),
    (f"{HEADER}\nx,0,1.5,A3C,5,,,\n", 1, "num_gpus", "integer"),
    (f"{HEADER}\nx,0,0,A3C,5,,,\n", 1, "num_gpus", ">= 1"),
    (f"{HEADER}\nx,0,1,A3C,,,,\n", 1, "work", "work and duration"),
    (f"{HEADER}\nx,0,1,A3C,5,,0,\n", 1, "priority", "> 0"),
    (f"{HEADER}\nx,9,1,A3C,5,,,9\n", 1, "deadline", "not after the arrival"),
    (f"{HEADER}\nx,0,1,A3C,5,,,\nx,1,1,A3C,5,,,\n", 2, "job_id", "duplicate"),
    (f"{HEADER}\n,0,1,A3C,5,,,\n", 1, "job_id", "empty"),
    (f"{HEADER}\nx,0,1,,5,,,\n", 1, "job_type", "empty"),
    (f"{HEADER}\nx,0,1,A3C,inf,,,\n", 1, "work", "finite"),
    (
        "job_id,arrival,num_gpus,job_type,work,gpu_model\nx,0,1,A3C,5,V100\ny,0,1,A3C,5,Voodoo5\n",
        2,
        "gpu_model",
        "unknown GPU model",
    ),
]


@pytest.mark.parametrize(("body", "row", "field", "words"), BAD_CASES)
def test_bad_input_names_file_row_and_field(tmp_path, body, row, field, words):
    path = write(tmp_path, body)
    with pytest.raises(InputError) as exc:
        read_trace(path)
    assert_names(exc, path, row, field)
    assert words in str(exc.value)


def test_unknown_job_type_against_the_profile_store(tmp_path, profiles):
    path = write(tmp_path, f"{HEADER}\nx,0,1,A3C,5,,,\ny,0,1,BERT-large,5,,,\n")
    with pytest.raises(InputError) as exc:
        read_trace(path, profiles=profiles)
    assert_names(exc, path, 2, "job_type")
    assert "unknown job type 'BERT-large'" in str(exc.value)
    assert len(read_trace(path)) == 2  # without a store, work-only rows need no profile


def test_too_many_gpus_for_the_cluster(tmp_path):
    path = write(tmp_path, f"{HEADER}\nx,0,8,A3C,5,,,\ny,0,16,A3C,5,,,\n")
    assert len(read_trace(path, max_gpus=16)) == 2
    with pytest.raises(InputError) as exc:
        read_trace(path, max_gpus=8)
    assert_names(exc, path, 2, "num_gpus")
    assert "16 GPUs" in str(exc.value) and "largest placement is 8" in str(exc.value)


def test_duration_only_rows_need_a_profile(tmp_path, profiles):
    path = write(tmp_path, f"{HEADER}\nx,0,1,A3C,,60,,\ny,0,16,LM (batch size 20),,60,,\n")
    with pytest.raises(MissingProfileError) as exc:
        read_trace(path, profiles=profiles)
    assert_names(exc, path, 2, "num_gpus")
    infeasible = write(tmp_path, f"{HEADER}\nx,0,2,ResNet-50 (batch size 128),,60,,\n", "k80.csv")
    with pytest.raises(InputError) as exc:
        read_trace(infeasible, profiles=profiles, reference_gpu="K80")
    assert_names(exc, infeasible, 1, "num_gpus")
    assert "does not fit" in str(exc.value)


def test_unknown_reference_gpu(tmp_path, profiles):
    path = write(tmp_path, f"{HEADER}\nx,0,1,A3C,,60,,\n")
    with pytest.raises(MissingProfileError, match="unknown GPU model 'H100'"):
        read_trace(path, profiles=profiles, reference_gpu="H100")


def test_small_store_from_rows(tmp_path):
    store = ProfileStore.from_rows([("toy", "V100", 1, True, 2.0)])
    path = write(tmp_path, "job_id,arrival,num_gpus,job_type,duration\nx,0,1,toy,30\n")
    (job,) = read_trace(path, profiles=store)
    assert job.work == 60.0


def test_file_problems(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_trace(tmp_path / "missing.csv")
    empty = write(tmp_path, "", "empty.csv")
    with pytest.raises(InputError, match="empty file"):
        read_trace(empty)
    ragged = write(tmp_path, f"{HEADER}\nx,0,1,A3C,5,,,,,,,,\n", "ragged.csv")
    with pytest.raises(InputError, match="malformed CSV"):
        read_trace(ragged)


def test_equal_text_cells_share_one_string_and_mixed_cells_stay_apart():
    """A million-job trace's users, job types and notes take a few values: one str each, not one per row (the
    jobs' memory); a converter's frame with cells of mixed types is made text first, so 1 and True do not merge."""
    import pandas as pd

    from gpuweave.workload.traces.schema import frame_to_jobs, validate_frame

    frame = pd.DataFrame(
        {
            "job_id": pd.Series([1, True, 2], dtype=object),
            "arrival": [0.0, 1.0, 2.0],
            "num_gpus": [1, 1, 1],
            "job_type": ["A3C"] * 3,
            "work": [10.0, 20.0, 30.0],
            "note": ["made by hand " + "x" * 40] * 3,
            "team": ["red", "blue", "red"],
        }
    )
    jobs = frame_to_jobs(validate_frame(frame, file="frame"))
    assert [j.job_id for j in jobs] == ["1", "True", "2"]
    assert jobs[0].job_type is jobs[2].job_type and jobs[0].attrs["note"] is jobs[2].attrs["note"]
    assert jobs[0].attrs["team"] is jobs[2].attrs["team"] == "red" and jobs[1].attrs["team"] == "blue"
