"""The reproduction registry: comparison.csv format, atomic output, extra options."""

from __future__ import annotations

import csv

import pytest

from gpuweave.errors import InputError
from gpuweave.repro.registry import (
    COMPARISON_COLUMNS,
    ComparisonRow,
    ReproContext,
    get_reproduction,
    parse_extra_options,
    register_reproduction,
    run_reproduction,
)


@register_reproduction("_test-square", title="squares", paper="Test paper", options={"n_max": int, "fast": bool})
def _square(ctx: ReproContext) -> list[ComparisonRow]:
    n = int(ctx.options.get("n_max", 3))
    (ctx.out_dir / "extra.txt").write_text("side file\n")
    return [ComparisonRow("squares", f"n={i}", float(i * i), float(i * i + ctx.seed), "", "") for i in range(1, n + 1)]


@register_reproduction("_test-broken", title="fails", paper="Test paper")
def _broken(ctx: ReproContext) -> list[ComparisonRow]:
    (ctx.out_dir / "partial.csv").write_text("half\n")
    raise RuntimeError("boom")


def test_comparison_csv_has_the_agreed_columns(tmp_path):
    out = tmp_path / "sq"
    rows = run_reproduction("_test-square", ReproContext(out_dir=out, seed=1, options={"n_max": 2}))
    assert [r.difference for r in rows] == [1.0, 1.0]
    with open(out / "comparison.csv") as fh:
        table = list(csv.reader(fh))
    assert table[0] == COMPARISON_COLUMNS
    assert table[1] == ["squares", "n=1", "1", "2", "", ""]
    assert (out / "extra.txt").exists()


def test_failed_reproduction_leaves_nothing(tmp_path):
    out = tmp_path / "broken"
    with pytest.raises(RuntimeError, match="boom"):
        run_reproduction("_test-broken", ReproContext(out_dir=out))
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_extra_options_are_typed_and_checked():
    repro = get_reproduction("_test-square")
    assert parse_extra_options(repro, ["--n-max", "7", "--fast"]) == {"n_max": 7, "fast": True}
    assert parse_extra_options(repro, ["--n-max=4"]) == {"n_max": 4}
    with pytest.raises(InputError, match="unknown option '--bogus'"):
        parse_extra_options(repro, ["--bogus", "1"])
    with pytest.raises(InputError, match="expects int"):
        parse_extra_options(repro, ["--n-max", "x"])


def test_unknown_reproduction_is_input_error():
    with pytest.raises(InputError, match="unknown reproduction 'nope'"):
        get_reproduction("nope")
