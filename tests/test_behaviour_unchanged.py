"""Refactors change no result: every reproduction's quick default and every demo table equal the recorded ones.

The recordings in ``tests/golden/`` were made by ``tools/record_behaviour.py`` on the code before the
"one shape" redesign (issue 11). Only measured timings (``TIMING`` in that tool) are left out of the comparison.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import record_behaviour as rb  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem.removeprefix("repro-") for p in GOLDEN.glob("repro-*.csv")))
def test_reproduction_rows_unchanged(name, tmp_path):
    with open(GOLDEN / f"repro-{name}.csv", newline="") as fh:
        recorded = rb.strip_timings_rows(list(csv.DictReader(fh)))
    now = rb.strip_timings_rows(rb.repro_rows(name, tmp_path / name))
    assert [r["metric"] for r in now] == [r["metric"] for r in recorded], f"repro {name}: the set of rows changed"
    for got, want in zip(now, recorded):
        assert got == want, f"repro {name}: row {want['experiment']!r} {want['metric']!r} changed"


@pytest.mark.slow
def test_demo_tables_unchanged(tmp_path):
    tables = rb.demo_tables(tmp_path)
    assert sorted(tables) == sorted(p.stem.removeprefix("demo-") for p in GOLDEN.glob("demo-*.json"))
    for name, table in tables.items():
        recorded = json.loads((GOLDEN / f"demo-{name}.json").read_text())
        assert rb.strip_timings_table(table) == rb.strip_timings_table(recorded), f"demo section {name} changed"


def test_reproductions_all_recorded():
    registered = [name for name in rb.reproduction_names() if not name.startswith("_")]  # "_x": made by tests
    assert sorted(registered) == sorted(p.stem.removeprefix("repro-") for p in GOLDEN.glob("repro-*.csv"))
