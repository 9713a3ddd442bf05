"""Checked numbers: every value read from a file or an option is finite and inside a physical range.

Problem: a reader that only checks "is a number" lets ``1e300`` seconds through, and the result is silently
wrong (a makespan of 0, 300-digit integers in a CSV, an int64 overflow printed as ``-9223372036854775808``).
Each quantity gpuweave reads has a :class:`Range` here: its unit, the physically meaningful bounds and
whether it is a whole number. :func:`number` checks one value (bools, strings, NaN, infinities and
out-of-range values are refused; integers are checked *before* conversion, so ``1e21`` GPUs never reaches
``int64``) and raises :class:`~gpuweave.errors.InputError` naming the file, row and field;
:func:`check_array` does the same for a column of numbers. These bounds are sanity bounds, not
:mod:`gpuweave.limits` (which bound the amount of work and can be raised): nothing real lies outside them.

Complexity: O(1) per value, O(n) per column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuweave.errors import InputError

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, slots=True)
class Range:
    """A physical quantity: ``lo <= value <= hi`` (``lo < value`` when ``lo_open``), in ``unit``."""

    unit: str
    lo: float
    hi: float
    integer: bool = False
    lo_open: bool = False

    def describe(self) -> str:
        """E.g. "a whole number of GPUs from 1 to 1,000,000", "a number of s above 0 and at most 1e+10"."""
        kind = "a whole number" if self.integer else "a number"
        unit = f" of {self.unit}" if self.unit else ""
        if self.lo_open:
            return f"{kind}{unit} above {_g(self.lo)} and at most {_g(self.hi)}"
        return f"{kind}{unit} from {_g(self.lo)} to {_g(self.hi)}"

    def with_low(self, lo: float, *, lo_open: bool = False) -> Range:
        return Range(self.unit, lo, self.hi, self.integer, lo_open)


def _g(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() and abs(x) < 1e7 else f"{x:g}"


MAX_SECONDS = 1e10  # about 317 years: no trace, schedule or deadline is longer (epoch timestamps fit too)

#: seconds since a trace's or a batch's start, deadlines, makespans (zero allowed)
SECONDS = Range("s", 0.0, MAX_SECONDS)
#: a duration that must be positive (a task's run time, a round length)
DURATION = Range("s", 0.0, MAX_SECONDS, lo_open=True)
#: seconds between a cluster policy's scheduling rounds: a round shorter than a second decides nothing real
#: (schedulers decide every few seconds to minutes; Gavel 360 s, Pollux 60 s) and only multiplies the ticks
ROUND_LENGTH = Range("s", 1.0, MAX_SECONDS)
#: kernel-level times (simulated horizons, start offsets, submission times)
MILLISECONDS = Range("ms", 0.0, MAX_SECONDS * 1000.0)
#: one kernel's duration or the host time around it: at most about 11.6 days
KERNEL_MS = Range("ms", 0.0, 1e9)
#: GPUs of a job, a node or a placement
GPUS = Range("GPUs", 1, 1_000_000, integer=True)
#: GPUs of one node (a cluster spec's node group, an openb node list's node, a fill run's gpus.csv): the widest
#: servers hold 8 to 16; FGD's placement compares every GPU of a node with every other (O(GPUs^2) per node)
MAX_GPUS_PER_NODE = 1024
#: a count that may be zero (GPU indices, slices, restarts)
COUNT = Range("", 0, 1_000_000_000, integer=True)
#: a count of at least one (processors, tasks, epochs as integers)
POSITIVE_COUNT = Range("", 1, 1_000_000_000, integer=True)
#: work of a job in iterations
ITERATIONS = Range("iterations", 0.0, 1e15, lo_open=True)
#: throughput in iterations (or samples) per second; 0 = the job does not fit
THROUGHPUT = Range("iterations/s", 0.0, 1e12)
#: a relative weight (priority)
WEIGHT = Range("", 0.0, 1e6, lo_open=True)
#: a Poisson arrival rate (the generator's load)
RATE_PER_HOUR = Range("jobs/hour", 1e-3, 1e7)
#: electricity price and power
PRICE_PER_KWH = Range("per kWh", 0.0, 1e4)
PUE = Range("", 1.0, 10.0)
#: training epochs of an ANDREAS job (may be fractional when remaining)
EPOCHS = Range("epochs", 0.0, 1e9)
#: seeds of every random generator (numpy needs non-negative, 32 bits is what every seed API takes)
SEED = Range("", 0, 2**32 - 1, integer=True)
#: a fraction or probability
FRACTION = Range("", 0.0, 1.0)
#: any other number read from a file (extra columns, metrics): finite and not absurd
MAGNITUDE = 1e18


def number(
    value: Any,
    rng: Range,
    *,
    file: str | Path | None = None,
    row: int | None = None,
    field: str | None = None,
    what: str | None = None,
) -> Any:
    """``value`` checked against ``rng``: an ``int`` for integer ranges, else a ``float``.

    Refused with one :class:`InputError`: booleans, non-numbers (strings are not parsed here), NaN and
    infinities, fractional values for integers, and values outside the range. ``what`` (optional) names the
    value at the start of the message, e.g. ``jobs[3]``; file, row and field go in the usual prefix.
    """
    label = f"{what}: expected" if what else "expected"
    where: dict[str, Any] = {"file": file, "row": row, "field": field}
    as_float = _as_float(value)
    if as_float is None:
        raise InputError(f"{label} {rng.describe()}, got {_show(value)}", **where)
    if not math.isfinite(as_float):
        raise InputError(f"{label} a finite number ({rng.describe()}), got {_show(value)}", **where)
    if rng.integer and not as_float.is_integer():
        raise InputError(f"{label} {rng.describe()}, got {_show(value)}", **where)
    low_bad = as_float <= rng.lo if rng.lo_open else as_float < rng.lo
    if low_bad or as_float > rng.hi:
        raise InputError(f"{label} {rng.describe()}, got {_show(value)}", **where)
    return int(as_float) if rng.integer else as_float


def optional_number(value: Any, rng: Range, **kwargs: Any) -> Any:
    """:func:`number`, with ``None`` passed through."""
    return None if value is None else number(value, rng, **kwargs)


def seed(value: Any, *, file: str | Path | None = None, field: str | None = "seed") -> int:
    """A seed: an integer in [0, 2**32 - 1] (numpy refuses negative seeds with a traceback)."""
    return number(value, SEED, file=file, field=field)


def check_array(
    values: np.ndarray,
    rng: Range,
    *,
    file: str | Path | None = None,
    rows: list[int] | None = None,
    field: str | None = None,
    raw: Any = None,
) -> None:
    """Every present (non-NaN) value of a float column inside ``rng``; the first bad one raises.

    ``rows`` maps positions to the rows named in the message; ``raw`` (same length) gives the text shown.
    """
    import numpy as np

    present = ~np.isnan(values)
    bad = present & ~np.isfinite(values)
    if rng.integer:
        with np.errstate(invalid="ignore"):
            bad |= present & (np.floor(values) != values)
    with np.errstate(invalid="ignore"):
        bad |= present & ((values <= rng.lo) if rng.lo_open else (values < rng.lo))
        bad |= present & (values > rng.hi)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        shown = raw[position] if raw is not None else values[position]
        row = rows[position] if rows is not None else position + 1
        raise InputError(f"expected {rng.describe()}, got {_show(shown)}", file=file, row=row, field=field)


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return repr(text)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        if value.bit_length() < 1024:
            return f"{float(value):.3g}"
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    if isinstance(value, float):
        return f"{value:g}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _as_float(value: Any) -> float | None:
    """The value as a float (infinite for integers too large for one); None for anything that is not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if value.bit_length() < 1024 else (math.inf if value > 0 else -math.inf)
    if isinstance(value, float):
        return value
    if _is_numpy_number(value):
        return float(value)
    return None


def _is_numpy_number(value: Any) -> bool:
    return type(value).__module__ == "numpy" and getattr(getattr(value, "dtype", None), "kind", "") in "iuf"


def validation_error(exc: Any, source: str | Path | None = None) -> InputError:
    """One InputError from a pydantic ``ValidationError``: its first problem, naming the field and the value.

    A validator that raised an :class:`InputError` itself (an unknown name, a limit) keeps its own message.
    """
    err = exc.errors()[0]
    cause = (err.get("ctx") or {}).get("error")
    field = ".".join(str(p) for p in err["loc"])
    if isinstance(cause, InputError):
        where = source if cause.file is None else cause.file
        return InputError(cause.message, file=where, field=cause.field or field or None)
    value = err.get("input")
    shown = "" if isinstance(value, (dict, list)) or value is None else f", got {_show(value)}"
    return InputError(f"{err['msg']}{shown}", file=source, field=field or None)


#: any number in a result file gpuweave wrote (metrics, tables): finite and not absurd
RESULT = Range("", -1e18, 1e18)


def parse(text: Any, rng: Range, *, file: str | Path | None = None, row: int | None = None, field: str | None = None):
    """A number written as text (a CSV cell), checked like :func:`number`; ``nan``/``inf`` spellings refused."""
    if isinstance(text, str):
        stripped = text.strip()
        try:
            value: Any = int(stripped) if stripped.lstrip("+-").isdigit() and len(stripped) < 19 else float(stripped)
        except ValueError:
            raise InputError(f"expected {rng.describe()}, got {_show(text)}", file=file, row=row, field=field) from None
        return number(value, rng, file=file, row=row, field=field)
    return number(text, rng, file=file, row=row, field=field)


RUN_SETTINGS = frozenset({"seed", "round_length"})  # passed to every policy by a run config, never as its options
SERVICE_REFUSED = frozenset({"seed"})  # the service takes a policy's round_length from its options


def finite_options(options: dict[str, Any], refused: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``options`` (a policy's keyword options), unchanged; InputError naming the option when a number in it, at
    any depth, is NaN or infinite. Policies take their options as plain Python values, so nothing else refuses
    ``.inf`` (YAML), ``Infinity`` (Python's json) or ``float('nan')``; a JSON column would store them as null.
    ``refused`` names run settings the caller passes to every policy itself (a run config: :data:`RUN_SETTINGS`; the
    service takes ``round_length`` from the options, so only ``seed``): as options they are refused by name (they
    reached the policy twice, a TypeError)."""
    given = sorted(refused.intersection(options))
    if given:
        key = given[0]
        raise InputError(
            f"{key!r} is a run setting, not a policy option: give it as the run's {key} (--{key.replace('_', '-')})",
            field="policy_options",
        )
    for key, value in options.items():
        bad = _non_finite(value)
        if bad is not None:
            raise InputError(f"policy option {key!r} must be a finite number, got {bad}", field="policy_options")
    return options


def _non_finite(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            bad = _non_finite(item)
            if bad is not None:
                return bad
    return None
