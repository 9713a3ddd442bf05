"""Reading helpers shared by the trace readers: BOM-safe CSV loading and checked numeric columns.

Every helper raises :class:`~gpuweave.errors.InputError` naming the file, the 1-based data row (the
header is row 0) and the column, so each converter reports bad input the same way.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from gpuweave.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

ROW = "_row"  # hidden column: the source row (or line) number of each record, for error messages


def read_text(path: str | Path) -> str:
    """The file's text, UTF-8 with an optional BOM removed."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", file=file) from None
    except IsADirectoryError:
        raise InputError("expected a file, got a directory", file=file) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=file) from None


def read_csv_strings(path: str | Path, *, header: bool = True, names: list[str] | None = None) -> "pd.DataFrame":
    """Read a CSV file with every cell as a string ("" = empty), tolerating a BOM and no final newline.

    Adds the hidden :data:`ROW` column (1-based data row; with ``header=False``, the line number).
    """
    import pandas as pd

    text = read_text(path)
    if not text.strip():
        raise InputError("empty file", file=path)
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            dtype=str,
            keep_default_na=False,
            header=0 if header else None,
            names=names,
            skip_blank_lines=True,
        )
    except (pd.errors.ParserError, ValueError) as exc:
        raise InputError(f"malformed CSV: {str(exc).strip()}", file=path) from None
    frame.columns = [str(name).strip() for name in frame.columns]
    frame[ROW] = range(1, len(frame) + 1)
    return frame


def require_columns(frame: "pd.DataFrame", columns: list[str] | tuple[str, ...], *, file: str | Path, what: str) -> None:
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


def row_numbers(frame: "pd.DataFrame") -> list[int]:
    """The source row number of each record (the :data:`ROW` column, else 1..n)."""
    if ROW in frame.columns:
        return [int(value) for value in frame[ROW]]
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
) -> "pd.Series":
    """Parse ``frame[column]`` as float64, checking emptiness, numbers, finiteness and bounds.

    Empty cells are NaN when ``required`` is False. The first bad cell raises InputError.
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
    rows = row_numbers(frame)
    expected = "an integer" if integer else "a number"

    def fail(position: int, message: str) -> None:
        raise InputError(message, file=file, row=rows[position], field=column)

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
    return pd.Series(array, index=frame.index, name=column)
