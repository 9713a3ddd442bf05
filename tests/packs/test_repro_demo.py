"""`gpuweave repro packs` (one seed, quick) and the demo section."""

from __future__ import annotations

import csv

from gpuweave.demo.sections import DemoContext, demo_sections
from gpuweave.packs.data import paper_numbers
from gpuweave.repro.registry import COMPARISON_COLUMNS, ReproContext, all_reproductions, run_reproduction


def test_repro_packs_writes_figures_table_and_comparison(tmp_path):
    assert "packs" in all_reproductions()
    out = tmp_path / "repro"
    rows = run_reproduction("packs", ReproContext(out_dir=out, reps=1))
    for name in ("fig2_relative_cost.png", "fig3_packing_ratio.png", "fig4_response_time.png", "fig5_workload3.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    with open(out / "comparison.csv") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == COMPARISON_COLUMNS
        table = list(reader)
    assert len(table) == len(rows)
    # Every Table 1 entry of the paper is beside ours, with the paper value from the data file.
    t1 = paper_numbers()["table1"]
    for wl in ("I", "II", "III"):
        for algo, ms in t1[wl].items():
            match = [r for r in table if r["experiment"] == f"Table1 W-{wl}" and r["metric"] == f"{algo} running time"]
            assert len(match) == 1 and float(match[0]["paper"]) == ms and float(match[0]["ours"]) > 0
    # Every text claim appears with its paper value; each has a note.
    claims = paper_numbers()["claims"]
    for c in claims.values():
        assert any(c["section"] in r["note"] and float(r["paper"]) == c["value"] for r in table if r["paper"])
    assert all(r["note"] for r in table)
    opt = next(r for r in table if r["metric"].startswith("optimal relative cost"))
    assert float(opt["ours"]) < 0.65
    with open(out / "curves.csv") as fh:
        curves = list(csv.DictReader(fh))
    assert {c["workload"] for c in curves} == {"I", "II", "III"}
    assert {c["algo"] for c in curves if c["workload"] == "I"} >= {"optimal", "pack-approx", "random-proc-9"}


def test_demo_section_runs_on_bundled_data(tmp_path):
    sections = dict(demo_sections())
    section = sections["packs"](DemoContext(out_dir=tmp_path))
    assert len(section.table) == 14 and {row["heuristic"] for row in section.table} >= {
        "pack-by-pack-9",
        "random-pack-1",
    }
    assert all(0 < row["relative cost"] <= 1.0 for row in section.table)
    assert section.figures and all(f.path.read_bytes()[:4] == b"\x89PNG" and f.csv.is_file() for f in section.figures)
    assert "Workload-II" in section.title
