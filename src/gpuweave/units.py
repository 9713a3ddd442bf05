"""Numbers and durations as people read them: the one implementation behind the console's tables, the reports'
tables and sentences, and the time axes of every plot.

* :func:`plain_number`: thousands separators, four significant digits, no scientific notation from 10^-3 to
  10^15 (``434,404``, ``12.35``, ``0.2561``);
* :func:`number_text`: a table cell's number: an int with thousands separators, a float as :func:`plain_number`,
  ``n/a`` when undefined (NaN, infinite), so an undefined value never reads as a result;
* :data:`DURATION_UNITS` and :func:`duration_unit`: the unit a duration reads in, by its magnitude: the largest of
  days, hours, minutes, seconds and milliseconds of which it is at least one (59 s, 1.5 min, 23.5 h, 5.028 d);
* :func:`duration_text`: a duration in its unit (``120.7 h`` reads ``5.028 d``); what the reports' sentences and
  the plots' titles and notes say;
* :func:`metric_text`: one metric's value (a summary table of metric rows, as ``cluster simulate`` prints and the
  report's metrics and comparison tables show): a time metric (its name ends in ``_s`` or ``_ms``) in its own
  unit, with the larger unit its magnitude reaches beside it (``434,404 s (5.028 d)``), any other as
  :func:`number_text`;
* :func:`axis_unit`: the unit of a plot's time axis, by the same table, from the median magnitude of the data
  drawn on it; :func:`column` does the same for a table's column of durations (one unit for the column, in its
  header: ``avg_jct (min)``), so a table and a chart of the same durations say the same unit.

JSON output never goes through here: it keeps the raw numbers. No imports from gpuweave: every layer may use it.
Complexity: O(1) per number, O(n log n) per axis or column.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple, TypeGuard


class Unit(NamedTuple):
    """A unit of time: how many seconds one of it is, and its symbol."""

    seconds: float
    symbol: str


#: the units a duration reads in, largest first; a duration takes the largest of which it is at least one
DURATION_UNITS = (Unit(86400.0, "d"), Unit(3600.0, "h"), Unit(60.0, "min"), Unit(1.0, "s"), Unit(1e-3, "ms"))
SECOND = DURATION_UNITS[3]
#: a time metric's own unit, by the end of its name
METRIC_UNITS = {"_s": SECOND, "_ms": DURATION_UNITS[4]}


def plain_number(value: float) -> str:
    """A number as people read it: thousands separators, four significant digits (at least the units: 434,404,
    5,447, 0.2561, 12.35, 1) and no scientific notation from 10^-3 to 10^15; outside that range, ``.3g``."""
    if value == 0:
        return "0"
    a = abs(value)
    if not 1e-3 <= a < 1e15:
        return format(value, ".3g")
    if a >= 999.5:
        return f"{value:,.0f}"
    decimals = max(0, 3 - math.floor(math.log10(a)))
    text = f"{value:,.{decimals}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def _scalar(value: object) -> object:
    """A numpy scalar as the Python number it holds; anything else as it is."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value


def _real(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is a number (an int or a float, not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_text(value: object) -> str:
    """A number for a table cell: an int with thousands separators, a float as :func:`plain_number`, ``n/a`` when
    it is undefined (None, NaN, infinite); anything else as its text."""
    value = _scalar(value)
    if value is None:
        return "n/a"
    if not _real(value):
        return str(value)
    if not math.isfinite(value):
        return "n/a"
    return f"{value:,}" if isinstance(value, int) else plain_number(value)


def duration_unit(seconds: float) -> Unit:
    """The unit a duration of ``seconds`` reads in: the largest of :data:`DURATION_UNITS` of which its magnitude
    is at least one (seconds for zero or an undefined value, milliseconds below one)."""
    a = abs(seconds)
    if not math.isfinite(a) or a == 0:
        return SECOND
    return next((unit for unit in DURATION_UNITS if a >= unit.seconds), DURATION_UNITS[-1])


def duration_text(seconds: float) -> str:
    """A duration in the unit its magnitude calls for (``5.028 d``, ``10 min``, ``12.5 s``, ``250 ms``); ``n/a``
    when undefined."""
    if not _real(seconds) or not math.isfinite(seconds):
        return "n/a"
    unit = duration_unit(seconds)
    return f"{plain_number(seconds / unit.seconds)} {unit.symbol}"


def time_metric_unit(name: str) -> Unit | None:
    """The unit of a time metric (its name, before any ``[SERVICE]``, ends in ``_s`` or ``_ms``), else None."""
    base = name.split("[", 1)[0]
    return next((unit for suffix, unit in METRIC_UNITS.items() if base.endswith(suffix)), None)


def metric_text(name: str, value: object, *notes: str) -> str:
    """A metric for a table: :func:`number_text`, and for a time metric (:func:`time_metric_unit`) its unit, with
    the larger unit its magnitude reaches beside it ("434,404 s (5.028 d)", "600 s (10 min)", "12.5 s");
    ``notes`` go in the same brackets ("434,404 s (5.028 d, ×1.00)")."""
    value = _scalar(value)
    text = number_text(value)
    unit = time_metric_unit(name)
    if unit is None or text == "n/a" or not _real(value):
        return text + (f" ({', '.join(notes)})" if notes and text != "n/a" else "")
    seconds = value * unit.seconds
    larger = duration_unit(seconds)
    beside = [duration_text(seconds)] if larger.seconds > unit.seconds else []
    beside += notes
    return f"{text} {unit.symbol}" + (f" ({', '.join(beside)})" if beside else "")


@dataclass(frozen=True)
class Column:
    """How a table column shows its numbers: a time metric's column (:func:`time_metric_unit` of its name) in one
    unit, the one its median value calls for (:func:`axis_unit`, as a plot's axis shows the same values), named in
    the header
    ("avg_jct (min)"); any other column as :func:`number_text`, its header its name."""

    header: str
    #: the unit of the column's raw values, and the one shown (None for a column that is not a time)
    own: Unit | None = None
    shown: Unit | None = None

    def text(self, value: object) -> str:
        """One cell's number: in the column's unit for a time column (:func:`number_text`)."""
        value = _scalar(value)
        if self.own is None or self.shown is None or not _real(value) or not math.isfinite(value):
            return number_text(value)
        return plain_number(value * self.own.seconds / self.shown.seconds)


def column(name: str, values: Iterable[object]) -> Column:
    """The :class:`Column` of a table column ``name`` holding ``values`` (non-numbers are ignored)."""
    own = time_metric_unit(name)
    if own is None:
        return Column(name)
    shown = axis_unit(float(v) * own.seconds for v in map(_scalar, values) if _real(v))
    base = name.split("[", 1)[0].removesuffix("_" + own.symbol) + (f"[{name.split('[', 1)[1]}" if "[" in name else "")
    return Column(f"{base} ({shown.symbol})", own, shown)


def axis_unit(seconds: Iterable[float]) -> Unit:
    """The unit of a time axis (or a table's column) showing ``seconds``: :func:`duration_unit` of their median
    magnitude (zeros and undefined values left out), so that the typical value reads in it and one outlier does
    not turn a column of minutes into hundredths of an hour. For an axis from 0 to an end, pass the end."""
    magnitudes = sorted(abs(float(s)) for s in seconds if math.isfinite(float(s)) and s != 0)
    if not magnitudes:
        return SECOND
    n = len(magnitudes)
    middle = magnitudes[n // 2] if n % 2 else (magnitudes[n // 2 - 1] + magnitudes[n // 2]) / 2
    return duration_unit(middle)
