"""The occupancy picture of FGD's fill experiment: gpus.csv (each GPU's used milli-GPUs and MIG instances at the
end and at the reported loads) against the tasks' own assignments, and the report's picture of it for a run on
fractions and a run on MIG instances."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from gpuweave.cluster.sharing.experiment import FillResult, run_fill
from gpuweave.cluster.sharing.occupancy import REPORTED_LOADS, OccupancyRecorder
from gpuweave.cluster.sharing.results import write_fill_result
from gpuweave.cluster.sharing.state import SharedNodes
from gpuweave.errors import InputError
from gpuweave.hardware.cluster_spec import cluster_from_dict
from gpuweave.hardware.node_resources import node_table_from_spec
from gpuweave.report.grains import GrainRun
from gpuweave.report.sharing import SLICE_BLOCKED, _read_picture, occupancy_figure, sharing_plots
from tests.cluster.test_sharing import nodes_of, tasks_of


def fill_recording(monkeypatch, *args, **kwargs) -> tuple[FillResult, list]:
    """run_fill, keeping every (task, assignment) SharedNodes.assign made, in order."""
    made: list = []
    assign = SharedNodes.assign

    def recording(self, task, node, gpus):
        assignment = assign(self, task, node, gpus)
        made.append((task, assignment))
        return assignment

    monkeypatch.setattr(SharedNodes, "assign", recording)
    return run_fill(*args, **kwargs), made


def gpus_csv(out: Path) -> list[dict[str, str]]:
    with (out / "gpus.csv").open() as handle:
        return list(csv.DictReader(handle))


def write(tmp_path: Path, result: FillResult, tasks, name: str) -> Path:
    out = tmp_path / name
    write_fill_result(out, result, tasks, {"placement": result.placement, "sharing": result.sharing})
    return out


def run_of(out: Path) -> GrainRun:
    return GrainRun(out, json.loads((out / "summary.json").read_text()), out.name)


def mixed_tasks(n: int = 60):
    """Shares of 150..950 milli-GPUs, some whole GPUs and a 2-GPU task, and CPU-only tasks."""
    rows = [(2000, 2048, 1, 150 + 100 * (i % 9)) for i in range(n)]
    rows += [(4000, 4096, 1, 1000)] * 6 + [(4000, 4096, 2, 1000)] * 2 + [(1000, 1024, 0, 0)] * 4
    return tasks_of(*rows)


def test_gpus_csv_is_the_sum_of_the_tasks_assignments(tmp_path: Path, monkeypatch):
    table = nodes_of(*[(64000, 262144, 4, "T4")] * 3, (32000, 131072, 2, "P100"), (16000, 65536, 1, "T4"))
    tasks = mixed_tasks()
    result, made = fill_recording(monkeypatch, table, tasks, "fgd", seed=3)
    expected: dict[tuple[str, int], int] = defaultdict(int)
    for task, assignment in made:
        for slot in assignment.gpus:
            expected[(table.names[assignment.node], slot)] += task.gpu_milli
    rows = gpus_csv(write(tmp_path, result, tasks, "frac"))
    assert len(rows) == int(table.num_gpus.sum())
    for row in rows:
        assert int(row["used_milli"]) == expected[(row["node"], int(row["gpu"]))], row
        assert row["mig_instances"] == row["mig_slices"] == ""
    placed = sum(task.gpu_request_milli for task, _ in made)
    assert (
        sum(int(r["used_milli"]) for r in rows) == placed == result.events.used_milli[-1] == result.nodes.gpu_used_milli
    )
    assert result.failed > 0 and len(made) == result.submitted - result.failed


def test_gpus_csv_holds_the_reported_loads_the_run_reached(tmp_path: Path, monkeypatch):
    """The copy of load k is the state after the last task whose arrived load rounds to k % or less: its total is
    that task's cumulative allocation in events; a load beyond the last task's gets no column."""
    table = nodes_of(*[(64000, 262144, 8, "T4")] * 4)
    tasks = mixed_tasks(200)
    result, _ = fill_recording(monkeypatch, table, tasks, "best-fit", seed=1, tune=1.05)
    rows = gpus_csv(write(tmp_path, result, tasks, "loads"))
    events = result.events
    load = np.array([round(a / result.total_gpus / 10, 0) for a in events.arrived_milli.tolist()])
    assert list(result.occupancy) == [50, 80, 90, 100]  # the fill stops near 105 %: 110-130 never arrive
    assert not any(k.startswith("used_milli_at_11") or k == "used_milli_at_130" for k in rows[0])
    for k in result.occupancy:
        last = int(np.flatnonzero(load <= k)[-1])
        assert sum(int(r[f"used_milli_at_{k}"]) for r in rows) == events.used_milli[last], k


def test_recorder_gives_the_final_state_to_the_loads_the_last_task_reached():
    nodes = SharedNodes(nodes_of((8000, 8192, 1, "T4")))
    recorder = OccupancyRecorder(1, loads=(50, 80))
    recorder.arrive(400, nodes)  # 40 %
    recorder.arrive(600, nodes)  # 60 %: the copy of 50 % is the state before this task
    assert list(recorder.taken) == [50]
    assert list(recorder.finish(nodes)) == [50]  # 80 % never reached
    recorder = OccupancyRecorder(1, loads=REPORTED_LOADS)
    recorder.arrive(1296, nodes)  # rounds to 130 %: every load but 130 is behind it, 130 is the end
    assert list(recorder.taken) == [50, 80, 90, 100, 110, 120]
    assert list(recorder.finish(nodes)) == list(REPORTED_LOADS)


def a100_spec(count: int = 3, gpus: int = 2):
    return cluster_from_dict({"name": "a100", "nodes": [{"count": count, "gpu": "A100", "gpus_per_node": gpus}]})


def test_mig_instances_in_gpus_csv_are_the_tasks_instances(tmp_path: Path, monkeypatch):
    table = node_table_from_spec(a100_spec(), mig=True)
    tasks = tasks_of(*[(1000, 1024, 1, 100 + 130 * (i % 7)) for i in range(30)], (1000, 1024, 1, 1000))
    result, made = fill_recording(monkeypatch, table, tasks, "fgd", seed=2, sharing="mig")
    held: dict[tuple[str, int], list] = defaultdict(list)
    for _, assignment in made:
        for slot, placement in zip(assignment.gpus, assignment.instances):
            held[(table.names[assignment.node], slot)].append(placement)
    rows = gpus_csv(write(tmp_path, result, tasks, "mig"))
    assert {r["mig_slices"] for r in rows} == {"7"}
    for row in rows:
        placements = sorted(held[(row["node"], int(row["gpu"]))], key=lambda p: p.start)
        assert row["mig_instances"] == "+".join(p.label for p in placements)
        slices = sum(p.size for p in placements)
        assert int(row["used_milli"]) == (slices * 1000 + 3) // 7  # the slices held, rounded half up
    assert sum(len(v) for v in held.values()) == result.nodes.instances_created == len(made)
    assert sum(int(r["used_milli"]) for r in rows) == result.nodes.gpu_used_milli
    assert any(k.startswith("mig_instances_at_") for k in rows[0])


def test_report_draws_the_picture_of_a_fraction_and_a_mig_run(tmp_path: Path):
    frac_table = nodes_of(*[(64000, 262144, 4, "T4")] * 3, (16000, 65536, 1, "P100"))
    tasks = mixed_tasks()
    frac = write(tmp_path, run_fill(frac_table, tasks, "fgd", seed=3), tasks, "frac")
    mig_tasks = tasks_of(*[(1000, 1024, 1, 100 + 130 * (i % 7)) for i in range(30)])
    mig_run = run_fill(node_table_from_spec(a100_spec(), mig=True), mig_tasks, "fgd", seed=2, sharing="mig")
    mig = write(tmp_path, mig_run, mig_tasks, "mig")
    figures = sharing_plots([run_of(frac), run_of(mig)], tmp_path / "report")
    pictures = [f for f in figures if f.path.name.startswith("sharing_gpus_")]
    assert [f.path.name for f in pictures] == ["sharing_gpus_00.png", "sharing_gpus_01.png"]
    for figure, run_dir in zip(pictures, (frac, mig)):
        assert figure.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert figure.csv is not None and figure.csv == figure.path.with_suffix(".csv")
        with figure.csv.open() as handle:
            drawn = list(csv.DictReader(handle))
        assert len(drawn) == len(gpus_csv(run_dir))
        assert {"row", "column", "zoomed", "node", "gpu"} <= set(drawn[0])
    frac_caption, mig_caption = pictures[0].caption, pictures[1].caption
    assert "partly used (fractions)" in frac_caption and "MIG" not in frac_caption.split("At the end")[1]
    assert f"hold {mig_run.nodes.instances_created} instances" in mig_caption


def test_picture_reads_blocked_slices_and_old_files(tmp_path: Path):
    """A100's 3-slice instance at S0 also blocks S3: drawn as blocked. A gpus.csv from before the per-load
    columns (node, model, gpu, used_milli, mig_instances) still draws, its instances telling a MIG GPU."""
    out = tmp_path / "old"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"kind": "sharing", "metrics": {}, "config": {}}))
    (out / "gpus.csv").write_text(
        "node,model,gpu,used_milli,mig_instances\nn0,A100,0,714,3@0+2@4\nn0,A100,1,0,\nn1,T4,0,450,\n"
    )
    picture = _read_picture(run_of(out))
    assert picture.loads == [] and picture.titles == ["end"]
    gpu = picture.nodes[0].gpus[0]
    assert gpu.slices == 7 and gpu.states(-1) == [1, 1, 1, SLICE_BLOCKED, 1, 1, 0]
    figure = occupancy_figure(run_of(out), tmp_path / "old.png")
    # the idle A100 of an old file tells nothing of MIG: a plain idle GPU
    assert "1 GPUs are partly used" in figure.caption and "(slices free: 1, blocked: 1)" in figure.caption


@pytest.mark.parametrize(
    ("cell", "needle"),
    [("3@1", "no MIG instance of size 3 at slice 1"), ("3g", "size@start"), ("", "")],
)
def test_picture_refuses_bad_instances_with_file_row_and_field(tmp_path: Path, cell: str, needle: str):
    out = tmp_path / "bad"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"kind": "sharing", "metrics": {}, "config": {}}))
    (out / "gpus.csv").write_text(f"node,model,gpu,used_milli,mig_instances\nn0,T4,0,1200,\nn0,A100,1,0,{cell}\n")
    with pytest.raises(InputError) as raised:
        _read_picture(run_of(out))
    error = raised.value
    assert error.row == 1 and error.field == "used_milli" and "gpus.csv" in str(error.file)  # 1200 > 1000 first
    (out / "gpus.csv").write_text(f"node,model,gpu,used_milli,mig_instances\nn0,A100,1,0,{cell}\n")
    if not cell:
        assert _read_picture(run_of(out)).nodes[0].gpus[0].slices == 0
        return
    with pytest.raises(InputError, match=needle) as raised:
        _read_picture(run_of(out))
    assert raised.value.row == 1 and raised.value.field == "mig_instances"
