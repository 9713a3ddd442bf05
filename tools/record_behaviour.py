"""Record what gpuweave computes today, so a refactor can prove it changed nothing.

Runs every registered reproduction at its quick default and the full demo, and writes
``tests/golden/repro-<name>.csv`` (each reproduction's ``comparison.csv``) and ``tests/golden/demo-<section>.json``
(each demo section's table). ``tests/test_behaviour_unchanged.py`` reruns the same and compares, ignoring only
measured timings (:data:`TIMING`). Re-record only for an intended change of results, and say so in the commit:

    .venv/bin/python tools/record_behaviour.py
"""

from __future__ import annotations

import csv
import json
import re
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden"

# Metrics and table columns that are wall-clock measurements, not results: they differ from run to run.
TIMING = re.compile(
    r"(optimizer time|wall|decision time|running time|-1 time|runtime|elapsed|log-log slope)", re.IGNORECASE
)


def repro_rows(name: str, out_dir: Path) -> list[dict[str, str]]:
    from gpuweave.repro.registry import ReproContext, run_reproduction

    run_reproduction(name, ReproContext(out_dir=out_dir))
    with open(out_dir / "comparison.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def demo_tables(out_dir: Path) -> dict[str, list[dict[str, object]]]:
    from gpuweave.demo.sections import DemoContext, demo_sections

    tables = {}
    for name, fn in demo_sections():
        section = fn(DemoContext(out_dir=out_dir / name))
        tables[name] = [{str(k): _plain(v) for k, v in row.items()} for row in section.table]
    return tables


def _plain(v: object) -> object:
    if isinstance(v, float):
        return float(f"{v:.9g}")
    if v is None or isinstance(v, (int, str, bool)):
        return v
    return str(v)


def strip_timings_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Rows of comparison.csv with the measured value of timing metrics blanked."""
    return [dict(r, ours="<timing>", note="<timing>") if TIMING.search(r["metric"]) else r for r in rows]


def strip_timings_table(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: ("<timing>" if TIMING.search(k) else v) for k, v in row.items()} for row in rows]


def reproduction_names() -> list[str]:
    from gpuweave.repro.registry import all_reproductions

    return list(all_reproductions())


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in reproduction_names():
            rows = repro_rows(name, Path(tmp) / "repro" / name)
            with open(GOLDEN / f"repro-{name}.csv", "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
            print(f"repro {name}: {len(rows)} rows", file=sys.stderr)
        for name, table in demo_tables(Path(tmp) / "demo").items():
            (GOLDEN / f"demo-{name}.json").write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
            print(f"demo {name}: {len(table)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
