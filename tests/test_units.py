"""gpuweave.units: the one way numbers and durations read in the console, the reports and the plots (issue 40
item 5: `avg_jct_s 4.344e+05` where the docs print `434,404 s`, JCTs of a minute printed as `0.0180 h`)."""

from __future__ import annotations

import math

import pytest

from gpuweave.units import (
    Unit,
    axis_unit,
    column,
    duration_text,
    duration_unit,
    metric_text,
    number_text,
    plain_number,
)


@pytest.mark.parametrize(
    "value, text",
    [
        (0.0005, "0.0005"),  # below 10^-3: .3g, which needs no exponent here
        (0.0123, "0.0123"),
        (12, "12"),
        (12.0, "12"),
        (12.3456, "12.35"),
        (4344.04e2, "434,404"),
        (434403.5450728072, "434,404"),
        (999.4, "999.4"),
        (1_234_567, "1,234,567"),  # an int keeps every digit
        (1234567.0, "1,234,567"),
        (-3.5, "-3.5"),
        (-7200, "-7,200"),
        (-0.00001, "-1e-05"),
        (0.0, "0"),
        (1e14, "100,000,000,000,000"),  # no scientific notation up to 10^15
        (1e16, "1e+16"),
        (float("nan"), "n/a"),
        (float("inf"), "n/a"),
        (None, "n/a"),
        ("fifo", "fifo"),
    ],
)
def test_number_text(value, text):
    assert number_text(value) == text


def test_numpy_scalars_read_as_the_numbers_they_hold():
    np = pytest.importorskip("numpy")
    assert number_text(np.int64(1234567)) == "1,234,567"
    assert number_text(np.float64(434403.5)) == "434,404"
    assert metric_text("avg_jct_s", np.float32(600.0)) == "600 s (10 min)"


@pytest.mark.parametrize(
    "seconds, unit, text",
    [
        (0.0005, "ms", "0.5 ms"),
        (0.25, "ms", "250 ms"),
        (12, "s", "12 s"),
        (59.9, "s", "59.9 s"),
        (64.8, "min", "1.08 min"),
        (600, "min", "10 min"),
        (3600, "h", "1 h"),
        (84600, "h", "23.5 h"),
        (4344.04e2, "d", "5.028 d"),
        (1e16, "d", "115,740,740,741 d"),
        (-7200, "h", "-2 h"),  # by magnitude, sign kept
        (0, "s", "0 s"),
    ],
)
def test_a_duration_reads_in_the_largest_unit_it_reaches(seconds, unit, text):
    assert duration_unit(seconds).symbol == unit
    assert duration_text(seconds) == text


def test_an_undefined_duration_is_not_a_number():
    assert duration_text(float("nan")) == "n/a" and duration_text(float("inf")) == "n/a"
    assert duration_unit(float("nan")).symbol == "s"


def test_a_time_metric_shows_its_unit_and_the_larger_one_it_reaches():
    assert metric_text("avg_jct_s", 434403.5) == "434,404 s (5.028 d)"
    assert metric_text("avg_jct_s", 12.5) == "12.5 s"
    assert metric_text("avg_jct_s", 0.0005) == "0.0005 s"  # a smaller unit adds nothing beside seconds
    assert metric_text("mean_jct_ms", 1500.0) == "1,500 ms (1.5 s)"
    assert metric_text("mean_jct_ms[A]", 12.0) == "12 ms"
    assert metric_text("avg_jct_s", float("nan")) == "n/a"
    assert metric_text("avg_jct_s", 617.5, "\u00d70.50") == "617.5 s (10.29 min, \u00d70.50)"
    assert metric_text("utilization", 0.25) == "0.25" and metric_text("jobs", 2000) == "2,000"
    assert metric_text("cost", 2.0, "\u00d71.00") == "2 (\u00d71.00)"


def test_an_axis_takes_the_unit_of_its_median_value():
    """One long outlier does not turn a column of minutes into hundredths of an hour (`0.0180 h`)."""
    minutes = [64.8, 90.0, 150.0, 8800.0]
    assert axis_unit(minutes) == Unit(60.0, "min")
    assert axis_unit([0.0, 0.0, 7200.0]).symbol == "h"  # zeros do not pull the unit down
    assert axis_unit([]).symbol == "s" and axis_unit([float("nan")]).symbol == "s"
    assert axis_unit([434404.0]).symbol == "d"


def test_a_column_of_times_is_in_one_unit_named_in_its_header():
    col = column("avg_jct_s", [64.8, 90.0, 8800.0, None, "x"])
    assert col.header == "avg_jct (min)"
    assert [col.text(v) for v in (64.8, 8800.0, float("nan"), None)] == ["1.08", "146.7", "n/a", "n/a"]
    kernel = column("mean_jct_ms[A]", [250.0, 4000.0])
    assert kernel.header == "mean_jct[A] (s)" and kernel.text(250.0) == "0.25"
    plain = column("utilization", [0.5, 1234.5])
    assert plain.header == "utilization" and plain.text(1234.5) == "1,234"


def test_plain_number_has_four_significant_digits_and_no_exponent_in_range():
    for value in (1e-3, 0.123456, 1.5, 99.99, 12345.678, 9.99e14):
        text = plain_number(value)
        assert "e" not in text, text
        assert math.isclose(float(text.replace(",", "")), value, rel_tol=1e-3), text
