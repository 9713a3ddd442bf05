"""The HTML pieces every report is made of: escaping, number formatting, tables, data URIs, the page's CSS.

Below both :mod:`gpuweave.report.page` (the page) and :mod:`gpuweave.report.html` (the cluster-run report and its
tables), which take them from here. All text goes through :func:`esc`. Complexity: O(size of the text).
"""

from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path
from typing import Any, Sequence

from gpuweave.errors import InputError
from gpuweave.units import column, metric_text

#: figure CSVs up to this size are embedded in the report; larger ones are linked beside it
CSV_INLINE_MAX = 2_000_000


_MIME = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".svg": "image/svg+xml",
    ".webp": "image/webp",
}

#: tables fit a 1,400 px window: headings wrap at spaces and after ``_ = , /`` (:func:`esc_breakable`), text cells
#: (paths, configs) anywhere, a metric's name (``td.name``) only at spaces, numbers only at a space
#: (``1,210.3 (×1.00)``); a table too wide even so scrolls inside its ``div.scroll``, never the page
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem auto;max-width:1400px;
padding:0 1.5rem;color:#222;line-height:1.5}
h1{font-size:1.7rem;margin-bottom:.2rem}h2{font-size:1.3rem;margin-top:2.2rem;border-bottom:1px solid #ddd;
padding-bottom:.2rem}h3{font-size:1.05rem;margin-top:1.4rem}.meta{color:#666;font-size:.9rem}
.summary{font-size:1.02rem;background:#f6f8fa;border-left:4px solid #0072B2;padding:.6rem 1rem}
nav.toc ol{margin:.2rem 0;padding-left:1.4rem}nav.toc li{margin:.1rem 0}nav.toc ol ol{font-size:.9rem}
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:.6rem 0;font-size:.88rem}
th,td{border:1px solid #ddd;padding:.25rem .45rem;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.text,th.text{text-align:left}td.text{overflow-wrap:anywhere}td.name{overflow-wrap:normal}td.best{font-weight:700;background:#e3f1fa}
figure{margin:1.2rem 0 1.8rem 0}figure img{width:100%;height:auto;border:1px solid #eee}
figcaption{color:#333;font-size:.92rem;max-width:75rem}figcaption a{white-space:nowrap}
pre{background:#f7f7f7;padding:.6rem;overflow-x:auto;font-size:.8rem}
details{margin:.3rem 0}dl dt{font-weight:600}dl dd{margin:0 0 .4rem 1rem}
td.in{background:#e3f1fa}td.out{background:#fbe3d6}
"""


def esc(value: Any) -> str:
    """HTML-escape any value's text (quotes too, so it is safe in attributes)."""
    return html.escape(str(value), quote=True)


def esc_breakable(value: Any) -> str:
    """:func:`esc`, with a line-break opportunity (``<wbr>``) after each ``_``, ``=``, ``,`` and ``/``: a column
    heading such as ``round_length=30`` may wrap inside a narrow column instead of widening the table."""
    return "".join(esc(c) + ("<wbr>" if c in "_=,/" else "") for c in str(value))


def format_value(value: Any, column: str = "") -> str:
    """Human-readable text for a table cell (not yet escaped): a number as the console shows it
    (:func:`gpuweave.units.metric_text`: thousands separators, no scientific notation, ``n/a`` when undefined, and
    a time metric, by its ``column`` name, with its unit and the larger unit its magnitude reaches); an empty cell
    for None, yes/no for a bool, JSON for a dict or list."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        try:
            value = value.item()
        except (TypeError, ValueError):
            pass
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    return metric_text(column, value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def table_text(
    rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """(headers, cells) of a list of dicts as every table shows it, the report's (:func:`html_table`) and the
    console's (``gpuweave demo``): :func:`format_value` per cell, and a column of times (a name ending in ``_s`` or
    ``_ms``) in one unit, the one its median value calls for, named in its header (:func:`gpuweave.units.column`:
    ``avg_jct (min)``), as the plots' axes choose it for the same values."""
    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
    shown = {col: column(str(col), [row.get(col) for row in rows]) for col in columns}
    cells = [
        [shown[c].text(row.get(c)) if _is_number(row.get(c)) else format_value(row.get(c)) for c in columns]
        for row in rows
    ]
    return [shown[c].header for c in columns], cells


def html_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Render a list of dicts as an HTML table (columns: union of keys in first-seen order). A column of times (a
    name ending in ``_s`` or ``_ms``) shows them in one unit, the one its largest value calls for, named in its
    heading (:func:`gpuweave.units.column`: ``avg_jct (min)``), as the console's tables and the plots' axes do."""
    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
    if not columns:
        return ""
    headers, cells = table_text(rows, columns)
    out = ['<div class="scroll"><table><thead><tr>']
    for header in headers:
        out.append(f'<th class="text">{esc_breakable(header)}</th>')
    out.append("</tr></thead><tbody>")
    for row, texts in zip(rows, cells):
        out.append("<tr>")
        for col, text in zip(columns, texts):
            cls = "" if _is_number(row.get(col)) else ' class="text"'
            out.append(f"<td{cls}>{esc(text)}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def image_data_uri(path: str | Path) -> str:
    """``data:`` URI of an image file (png, jpeg, gif, svg, webp)."""
    path = Path(path)
    mime = _MIME.get(path.suffix.lower())
    if mime is None:
        raise InputError(f"unsupported image type (expected one of {', '.join(sorted(_MIME))})", file=path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("image not found", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot read image: {exc.strerror}", file=path) from None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def csv_href(path: Path, out_dir: Path) -> str:
    """A link target for a figure's CSV: the data inline (a data URI) up to :data:`CSV_INLINE_MAX` bytes, so the
    report stays one file; a path relative to the report beyond that."""
    size = path.stat().st_size
    if size <= CSV_INLINE_MAX:
        return "data:text/csv;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    return Path(os.path.relpath(path.resolve(), Path(out_dir).resolve())).as_posix()


def _paragraphs(text: str) -> str:
    parts = [p.strip() for p in str(text).replace("\r\n", "\n").split("\n\n")]
    return "".join(f"<p>{'<br>'.join(esc(line) for line in p.splitlines())}</p>" for p in parts if p)
