"""The HTML pieces every report is made of: escaping, number formatting, tables, data URIs, the page's CSS.

Below both :mod:`gpuweave.report.page` (the page) and :mod:`gpuweave.report.html` (the cluster-run report and its
tables), which take them from here. All text goes through :func:`esc`. Complexity: O(size of the text).
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
from pathlib import Path
from typing import Any, Sequence

from gpuweave.errors import InputError

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


def format_value(value: Any) -> str:
    """Human-readable text for a table cell (not yet escaped)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        a = abs(value)
        if value == int(value) and a < 1e15:
            return f"{int(value):,}"
        if a >= 100:
            return f"{value:,.1f}"
        if a >= 1:
            return f"{value:.3f}"
        if a >= 0.001:
            return f"{value:.4f}"
        return f"{value:.3g}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        try:
            return format_value(value.item())
        except (TypeError, ValueError):
            pass
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def html_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Render a list of dicts as an HTML table (columns: union of keys in first-seen order)."""
    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
    if not columns:
        return ""
    out = ['<div class="scroll"><table><thead><tr>']
    for col in columns:
        out.append(f'<th class="text">{esc_breakable(col)}</th>')
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        for col in columns:
            value = row.get(col)
            cls = "" if _is_number(value) else ' class="text"'
            out.append(f"<td{cls}>{esc(format_value(value))}</td>")
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
