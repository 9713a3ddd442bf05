"""Reading helpers shared by the trace readers: BOM-safe CSV loading and checked numeric columns.

Every helper raises :class:`~gpuweave.errors.InputError` naming the file, the 1-based data row (the
header is row 0) and the column, so each converter reports bad input the same way.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.checks import MAGNITUDE
from gpuweave.errors import InputError
from gpuweave.files import NUL_IN_CSV, check_column_count, check_unique_columns, read_input_bytes, read_input_text
from gpuweave.limits import check_limit, limit

if TYPE_CHECKING:
    import pandas as pd

#: bytes for which read_csv_strings leaves the file to the csv module: the quote and every control byte but tab and
#: newline
_DECLINED_BYTES = (b'"', *(bytes([code]) for code in range(32) if code not in (9, 10)))
ROW = "_row"  # hidden column: the source row (or line) number of each record, for error messages


def read_text(path: str | Path) -> str:
    """The file's text, UTF-8 with an optional BOM removed, at most limit ``input_mb`` (see :mod:`gpuweave.files`)."""
    return read_input_text(path)


def read_csv_strings(
    path: str | Path,
    *,
    limit_name: str = "trace_jobs",
    what: str = "rows",
    header: tuple[str, ...] | None = None,
    table: str = "a table",
) -> "pd.DataFrame":
    """Read a CSV file with a header, every cell as a string ("" = empty).

    Tolerates a BOM, CRLF line ends, blank lines, no final newline and columns without a name (dropped); a
    column name given twice is an error; a row whose field count differs
    from the header's raises InputError (pandas would silently shift such a row into an index). Adds the
    hidden :data:`ROW` column: the 1-based data row, blank lines not counted. More data rows than limit
    ``limit_name`` (jobs of a trace by default) are refused while reading, before the frame is built.

    ``header``: the column names of a table published without a header line (Alibaba's PAI 2020 tables give
    theirs in separate ``.header`` files); a file whose first line is these names is read as usual, any other
    file as if that line were on top, so its data row N is its line N; a first line of another width is one error
    naming ``table`` (what the file should be), not a malformed row.
    """
    data = read_input_bytes(path)
    offset = 0  # what to add to a byte's position in ``data`` to give its position in the file
    if data.startswith(b"\xef\xbb\xbf"):
        data, offset = data[3:], 3
    check_column_count(len(first_line_fields(data)), file=path)  # before either parser sees a 10^6-field header
    if header is not None:
        if not data.strip():
            raise InputError("empty file", file=path)
        fields = first_line_fields(data)
        if len(fields) != len(header):
            raise InputError(
                f"expected {table}: lines of {len(header)} fields ({','.join(header)}), with or without that "
                f"header line; the first line has {len(fields)}",
                file=path,
                row=1,
            )
        if fields != list(header):
            line = (",".join(header) + "\n").encode("utf-8")
            data, offset = line + data, offset - len(line)
    plain = _read_plain_csv(data, limit_name)
    return plain if plain is not None else _read_csv_module(path, data, offset, limit_name, what)


def first_line_fields(data: bytes) -> list[str]:
    """The stripped comma-separated fields of the first line that is not blank ([] for an empty file)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line = data[start:end]
        if line.strip():
            return [field.strip() for field in line.decode("utf-8", "replace").split(",")]
        start = end + 1
    return []


def _read_csv_module(path: str | Path, data: bytes, offset: int, limit_name: str, what: str) -> "pd.DataFrame":
    """:func:`read_csv_strings` by the csv module, record by record: every file the fast path declines (``data``:
    the file's bytes without a BOM and with the header it lacked; byte i of ``data`` is byte i + ``offset`` of the
    file)."""
    import csv

    import pandas as pd

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start + offset})", file=path) from None
    if not text.strip():
        raise InputError("empty file", file=path)
    records: list[list[str]] = []
    # strict: an unterminated quote (a truncated file) or text after a closing quote is an error, not data
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    most = limit(limit_name) + 1  # the header row is not data
    nul = "\0" in text  # data to Python 3.11's csv module, malformed CSV to gpuweave (files.NUL_IN_CSV)
    try:
        for record in reader:
            if nul and any("\0" in cell for cell in record):
                raise InputError(NUL_IN_CSV, file=path, row=len(records))  # the header is row 0
            if record:
                records.append(record)
                if len(records) > most:
                    check_limit(limit_name, len(records) - 1, f"more than {most - 1:,} {what}", file=path)
    except csv.Error as exc:
        hint = " (unterminated quote: is the file truncated?)" if "end of data" in str(exc) else ""
        raise InputError(f"malformed CSV: {exc}{hint}", file=path, row=len(records)) from None
    header = [name.strip() for name in records[0]]
    width = len(header)
    check_unique_columns(header, file=path)
    for row_number, record in enumerate(records[1:], start=1):
        if len(record) != width:
            raise InputError(
                f"malformed CSV: expected {width} comma-separated fields like the header, got {len(record)}",
                file=path,
                row=row_number,
                field=header[min(len(record), width) - 1] if len(record) < width else None,
            )
    frame = (
        pd.DataFrame(records[1:], columns=header, dtype=object) if len(records) > 1 else pd.DataFrame(columns=header)
    )
    if "" in header:  # columns without a name (trailing commas of a spreadsheet export) hold nothing we read
        frame = frame.loc[:, [bool(name) for name in header]]
    frame[ROW] = range(1, len(frame) + 1)
    return frame


def _read_plain_csv(data: bytes, limit_name: str) -> "pd.DataFrame | None":
    """:func:`read_csv_strings`' frame by pandas' C parser, for the files where it reads what the csv module reads;
    None for every other file, which the csv module then reads and checks line by line.

    The csv module held every record as a list before the frame was built: 10^6 rows of a converted trace took
    9 s and 2.5 GB at the peak, against 3 s here. Taken only when nothing can differ: no quote and no control
    byte but tab and newline (no CR, no NUL) in the file, valid UTF-8, at least two columns, every line either
    empty or with exactly the header's number of commas (so a short or long row, or one of spaces that pandas
    would skip as blank, goes to the slow path, which names it), no column named twice, no line past the csv
    module's field-size limit, and no more rows than the limit. Cells are the same strings, rows are numbered
    the same (blank lines not counted). O(bytes), vectorised.
    """
    import csv

    import numpy as np
    import pandas as pd

    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    # memchr per byte value: no array as large as the file (a CR or NUL: parsers differ there)
    if not data or any(byte in data for byte in _DECLINED_BYTES):
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(raw == 10)
    starts = np.concatenate(([0], ends + 1))
    stops = np.concatenate((ends, [len(raw)]))
    full = stops > starts
    if not full.any() or int((stops - starts).max()) > csv.field_size_limit():
        return None
    # each line's commas: the line of a comma is the number of line ends before it
    commas = np.bincount(np.searchsorted(ends, np.flatnonzero(raw == 44)), minlength=len(starts))[full]
    starts, stops = starts[full], stops[full]
    width = int(commas[0]) + 1
    if width < 2 or (commas != width - 1).any() or len(starts) - 1 > limit(limit_name):
        return None
    try:
        header = [name.strip() for name in data[starts[0] : stops[0]].decode("utf-8").split(",")]
        frame = pd.read_csv(
            io.BytesIO(data),
            header=0,
            names=range(width),
            dtype=object,
            na_filter=False,
            skip_blank_lines=True,
            engine="c",
            encoding="utf-8",
        )
    except (UnicodeDecodeError, ValueError):  # pandas' ParserError is a ValueError: the slow path says what
        return None
    named = [name for name in header if name]
    if len(frame) != len(starts) - 1 or len(set(named)) != len(named):  # a name twice: the slow path names it
        return None
    frame.columns = header
    if "" in header:
        frame = frame.loc[:, [bool(name) for name in header]]
    with warnings.catch_warnings():  # a table of more than 100 columns (FGD's 0..130 loads): pandas' "fragmented"
        warnings.simplefilter("ignore", pd.errors.PerformanceWarning)  # warning would be a second line on stderr
        frame[ROW] = range(1, len(frame) + 1)
    return frame


def require_columns(
    frame: "pd.DataFrame", columns: list[str] | tuple[str, ...], *, file: str | Path, what: str
) -> None:
    """Raise InputError for the first of ``columns`` missing from ``frame`` (row 0 = the header)."""
    present = set(frame.columns)
    for name in columns:
        if name not in present:
            raise InputError(
                f"missing column '{name}' in the header; {what} needs the columns {', '.join(columns)}",
                file=file,
                row=0,
                field=name,
            )


def require_values(frame: "pd.DataFrame", columns: tuple[str, ...], *, file: str | Path, message: str) -> None:
    """InputError ``message`` at the first empty cell of ``columns`` (in that order of columns)."""
    import numpy as np

    for name in columns:
        empty = missing_mask(frame[name]).to_numpy()
        if empty.any():
            position = int(np.flatnonzero(empty)[0])
            raise InputError(message, file=file, row=int(frame[ROW].iloc[position]), field=name)


def time_column(
    frame: "pd.DataFrame", column: str, *, file: str | Path, time_format: str, shown: str, blanks: tuple[str, ...] = ()
) -> "pd.Series":
    """The column's stripped cells parsed with ``time_format``; a cell in ``blanks`` is NaT, any other cell that is
    not such a time an InputError ("expected a time <shown>, got ...") naming its row."""
    import numpy as np
    import pandas as pd

    text = frame[column].str.strip()
    parsed = pd.to_datetime(text, format=time_format, errors="coerce")
    bad = (parsed.isna() & ~text.isin(blanks)).to_numpy()
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"expected a time {shown}, got {text.iloc[position]!r}",
            file=file,
            row=int(frame[ROW].iloc[position]),
            field=column,
        )
    return parsed


def row_numbers(frame: "pd.DataFrame") -> list[int]:
    """The source row number of each record (the :data:`ROW` column, else 1..n)."""
    if ROW in frame.columns:
        column = frame[ROW]
        if column.dtype.kind in "iu":  # the usual case: one C loop, not an int() per row
            return column.tolist()
        return [int(value) for value in column]
    return list(range(1, len(frame) + 1))


def missing_mask(series: "pd.Series") -> "pd.Series":
    """True where a cell is empty (NaN/None or a blank string)."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(series.dtype):
        return series.isna()
    return series.isna() | (series.astype(str).str.strip() == "")


def numeric_column(
    frame: "pd.DataFrame",
    column: str,
    *,
    file: str | Path,
    unit: str,
    required: bool = True,
    integer: bool = False,
    minimum: float | None = None,
    strictly_above: float | None = None,
    maximum: float = MAGNITUDE,
) -> "pd.Series":
    """Parse ``frame[column]`` as float64, checking emptiness, numbers, finiteness and bounds.

    Empty cells are NaN when ``required`` is False. The first bad cell raises InputError. ``maximum`` is the
    largest physical value (:mod:`gpuweave.checks`; by default any number above 1e15 is refused), checked
    before an integer column is converted, so ``1e21`` GPUs never overflows int64.
    """
    import numpy as np
    import pandas as pd

    raw = frame[column]
    empty = missing_mask(raw)
    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        values = raw.astype("float64")
    else:
        text = raw.astype(str).str.strip().where(~empty, None)
        values = pd.to_numeric(text, errors="coerce").astype("float64")
    expected = "an integer" if integer else "a number"

    def fail(position: int, message: str) -> None:
        raise InputError(message, file=file, row=row_numbers(frame)[position], field=column)

    bad = (~empty) & values.isna()
    if bad.any():
        position = int(np.flatnonzero(bad.to_numpy())[0])
        fail(position, f"expected {expected} ({unit}), got {str(raw.iloc[position])!r}")
    if required and empty.any():
        position = int(np.flatnonzero(empty.to_numpy())[0])
        fail(position, f"empty value; expected {expected} ({unit})")
    array = values.to_numpy()
    present = ~np.isnan(array)
    infinite = present & ~np.isfinite(array)
    if infinite.any():
        position = int(np.flatnonzero(infinite)[0])
        fail(position, f"expected a finite number ({unit}), got {raw.iloc[position]!r}")
    if integer:
        fractional = present & (np.floor(array) != array)
        if fractional.any():
            position = int(np.flatnonzero(fractional)[0])
            fail(position, f"expected an integer ({unit}), got {raw.iloc[position]!r}")
    if minimum is not None:
        low = present & (array < minimum)
        if low.any():
            position = int(np.flatnonzero(low)[0])
            fail(position, f"expected a value >= {minimum:g} ({unit}), got {array[position]:g}")
    if strictly_above is not None:
        low = present & (array <= strictly_above)
        if low.any():
            position = int(np.flatnonzero(low)[0])
            fail(position, f"expected a value > {strictly_above:g} ({unit}), got {array[position]:g}")
    high = present & (array > maximum)
    if high.any():
        position = int(np.flatnonzero(high)[0])
        fail(position, f"expected a value <= {maximum:g} ({unit}), got {array[position]:g}")
    return pd.Series(array, index=frame.index, name=column)


def counted(n: int, what: str) -> str:
    """``"1 job"``, ``"2,500 jobs"``: a count for a converter's notes."""
    return f"{n:,} {what}" if n == 1 else f"{n:,} {what}s"
