"""``read_csv_strings`` reads a plain file with pandas' C parser and every other file with the csv module: the two
paths must give the same frame, or the same one-line error, for any file (property test against the csv module)."""

from __future__ import annotations

import os

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuweave.errors import InputError
from gpuweave.workload.traces._tables import _read_csv_module, _read_plain_csv, read_csv_strings

EXAMPLES = int(os.environ.get("GPUWEAVE_FUZZ_EXAMPLES", "300"))
# cells without the bytes that send a file to the csv module, but with spaces, tabs, text, numbers, non-ASCII
CELL = st.text(alphabet=st.sampled_from(list("ab 1.\t-éé中x_")), max_size=6)


@st.composite
def plain_tables(draw) -> bytes:
    """Mostly files the fast path takes (distinct names, rows of the header's width); now and then a name twice, an
    unnamed column, a blank line, a line of spaces, a short or a long row, a BOM."""
    width = draw(st.sampled_from([1, 2, 2, 3, 3, 4, 5]))
    names = ["a", "b", "c", " d ", "", "job_id", "中"]
    header = draw(st.permutations(names))[:width]
    if draw(st.integers(0, 9)) == 0:
        header[-1] = header[0]
    lines = [",".join(header)]
    kinds = ["row"] * 12 + ["blank", "spaces", "short", "long"]
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(kinds))
        if kind == "blank":
            lines.append("")
        elif kind == "spaces":
            lines.append(draw(st.sampled_from([" ", "\t", "  \t"])))
        else:
            n = width + {"row": 0, "short": -1, "long": 1}[kind]
            lines.append(",".join(draw(st.lists(CELL, min_size=n, max_size=n))))
    text = draw(st.sampled_from(["", "", "\n"])) + "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))
    if draw(st.integers(0, 3)) == 0:
        text = "\ufeff" + text
    return text.encode("utf-8")


def _outcome(read, path):
    try:
        return read(path)
    except InputError as exc:
        return exc.one_line()


def _slow(path):
    data = path.read_bytes()
    bom = data.startswith(b"\xef\xbb\xbf")
    return _read_csv_module(path, data[3:] if bom else data, 3 if bom else 0, "trace_jobs", "rows")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=plain_tables())
def test_the_fast_path_reads_what_the_csv_module_reads(tmp_path, data):
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    fast, slow = _outcome(read_csv_strings, path), _outcome(_slow, path)
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
    else:
        pd.testing.assert_frame_equal(fast, slow)


@pytest.mark.parametrize(
    "text",
    [
        'a,b\n"x,y",1\n',  # a quote: csv semantics
        "a,b\r\n1,2\r\n",  # CR line ends
        "a,b\n1,2\x00\n",  # NUL
        "a,b\n1,2,3\n",  # a long row: the csv module names it
        "a,b\n1\n",  # a short row
        "a,b\n \n1,2\n",  # a line of spaces (pandas would skip it as blank)
        "a,a\n1,2\n",  # a column named twice
        "a\n1\n",  # one column
        "a,b\n" + "x" * 131_073 + ",1\n",  # past the csv module's field limit
    ],
)
def test_files_the_fast_path_leaves_to_the_csv_module(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode("utf-8"))
    assert _read_plain_csv(path.read_bytes(), "trace_jobs") is None


def test_a_plain_file_takes_the_fast_path(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes("\ufeffjob_id, arrival ,,note\n\nj1,0,, a b \nj2,1.5,x,中\n".encode())
    frame = _read_plain_csv(path.read_bytes(), "trace_jobs")
    assert frame is not None
    assert list(frame.columns) == ["job_id", "arrival", "note", "_row"]
    assert frame["note"].tolist() == [" a b ", "中"] and frame["_row"].tolist() == [1, 2]
