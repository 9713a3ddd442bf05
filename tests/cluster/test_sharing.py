"""GPU sharing at the cluster grain: the openb readers, the free-resource arrays, FGD's fragmentation measure and
the six placements of FGD's simulator on hand-built clusters whose right answer is worked out in each test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuweave.cluster.placements import PLACEMENTS, make_placement, make_task_placement, names_placing
from gpuweave.cluster.sharing.experiment import discrete_curves, run_fill, tuned_order
from gpuweave.cluster.sharing.fragmentation import NodeFragments, node_fragment, typical_tasks
from gpuweave.cluster.sharing.state import SharedNodes, TaskRequest
from gpuweave.errors import InputError
from gpuweave.hardware.node_resources import NodeTable
from gpuweave.workload.tasks import TaskTable
from gpuweave.workload.traces.openb import read_openb_node_table, read_openb_tasks

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"


def nodes_of(*rows: tuple[int, int, int, str]) -> NodeTable:
    """Nodes from (cpu_milli, memory_mib, gpus, model) rows."""
    return NodeTable(
        names=tuple(f"n{i}" for i in range(len(rows))),
        models=tuple(r[3] for r in rows),
        cpu_milli=np.array([r[0] for r in rows], dtype=np.int64),
        memory_mib=np.array([r[1] for r in rows], dtype=np.int64),
        num_gpus=np.array([r[2] for r in rows], dtype=np.int64),
    )


def tasks_of(*rows: tuple[int, int, int, int], allowed=None) -> TaskTable:
    """Tasks from (cpu_milli, memory_mib, num_gpus, gpu_milli) rows."""
    return TaskTable(
        names=tuple(f"t{i:03d}" for i in range(len(rows))),
        cpu_milli=np.array([r[0] for r in rows], dtype=np.int64),
        memory_mib=np.array([r[1] for r in rows], dtype=np.int64),
        num_gpus=np.array([r[2] for r in rows], dtype=np.int64),
        gpu_milli=np.array([r[3] for r in rows], dtype=np.int64),
        allowed_models=tuple(allowed or [None] * len(rows)),
    )


def request(cpu=1000, memory=1024, gpus=1, milli=1000, allowed=None) -> TaskRequest:
    return TaskRequest(0, cpu, memory, gpus, milli, allowed)


# --------------------------------------------------------------------------- readers
def test_openb_tasks_keep_cpu_tasks_and_constraints(tmp_path: Path):
    path = tmp_path / "pods.csv"
    path.write_text(POD_HEADER + "a,4000,8192,1,500,T4|V100M16\nb,2000,1024,0,0,\nc,8000,4096,2,1000,\n")
    tasks = read_openb_tasks(path)
    assert len(tasks) == 3
    assert tasks.num_gpus.tolist() == [1, 0, 2]
    assert tasks.allowed_models == (("T4", "V100M16"), None, None)
    assert tasks.gpu_request_milli.tolist() == [500, 0, 2000]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a,4000,8192,2,500,", "1-GPU tasks only"),
        ("a,4000,8192,1,0,", "1..1000"),
        ("a,4000,8192,1,1500,", "1..1000"),
        ("a,4000,8192,0,300,", "num_gpu 0"),
        ("a,-1,8192,1,300,", ">= 0"),
    ],
)
def test_openb_tasks_bad_rows_name_row_and_field(tmp_path: Path, row: str, message: str):
    path = tmp_path / "pods.csv"
    path.write_text(POD_HEADER + "ok,1000,1024,1,1000,\n" + row + "\n")
    with pytest.raises(InputError, match=message) as info:
        read_openb_tasks(path)
    assert info.value.row == 2  # row 0 is the header


def test_openb_nodes_need_a_model_for_gpus(tmp_path: Path):
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nx,64000,262144,2,\n")
    with pytest.raises(InputError, match="needs a model"):
        read_openb_node_table(path)


# --------------------------------------------------------------------------- free resources
def test_fits_checks_cpu_memory_model_and_gpu_shares():
    nodes = SharedNodes(nodes_of((8000, 8192, 2, "T4"), (8000, 8192, 1, "P100"), (1000, 8192, 4, "T4")))
    assert nodes.fits(request(cpu=2000, milli=600)).tolist() == [True, True, False]
    assert nodes.fits(request(cpu=2000, milli=600, allowed=("P100",))).tolist() == [False, True, False]
    assert nodes.fits(request(cpu=2000, gpus=2)).tolist() == [True, False, False]
    assert nodes.fits(request(cpu=2000, memory=9000, gpus=0, milli=0)).tolist() == [False, False, False]
    task = request(cpu=1000, milli=600)
    nodes.assign(task, 0, (0,))
    assert nodes.gpu_free[0].tolist() == [400, 1000, -1, -1]  # slots past the node's 2 GPUs: none
    assert nodes.fits(request(cpu=1000, milli=500)).tolist() == [True, True, True]
    assert nodes.fits(request(cpu=1000, gpus=2)).tolist() == [False, False, True]
    assert nodes.gpu_used_milli == 600
    assert nodes.best_fit_gpus(request(milli=300), 0) == (0,)  # least free that still fits
    assert nodes.best_fit_gpus(request(milli=500), 0) == (1,)
    nodes.release(task, nodes.assign(request(cpu=0, milli=0, gpus=0), 0, ()))  # a CPU task's release
    assert nodes.cpu_free[0] == 8000


# --------------------------------------------------------------------------- fragmentation
def test_fragment_by_hand():
    """One node, 2 GPUs with 300 and 1000 free, 4 cores free. Typical tasks: 50 % ask 500 milli and 1 core (fits:
    only the 300 on the small GPU is lost), 25 % ask 1 GPU and 8 cores (too little CPU: all 1300 lost), 25 %
    CPU-only (all 1300 lost). Fragment = 0.5 x 300 + 0.25 x 1300 + 0.25 x 1300 = 800."""
    tasks = tasks_of((1000, 1, 1, 500), (1000, 1, 1, 500), (8000, 1, 1, 1000), (500, 1, 0, 0))
    typical = typical_tasks(tasks, ("T4",))
    assert sorted(typical.weight.tolist()) == [0.25, 0.25, 0.5]
    fragment = node_fragment(typical, np.array([4000]), np.array([[300, 1000]]), np.array([0]))
    assert fragment.tolist() == [800.0]
    # a model the tasks may not use: everything idle is lost
    assert typical_tasks(tasks_of((1000, 1, 1, 500), allowed=[("V100",)]), ("T4",)).access.tolist() == [
        [False],
        [False],
    ]


def test_typical_tasks_stop_at_95_percent():
    rows = [(1000, 1, 1, 500)] * 90 + [(2000, 1, 1, 1000)] * 6 + [(3000, 1, 2, 1000)] * 4
    typical = typical_tasks(tasks_of(*rows), ("T4",))
    assert len(typical) == 2  # 90 % then 96 % >= 95 %: the 4 % shape is left out
    assert typical.weight.tolist() == pytest.approx([90 / 96, 6 / 96])


def test_node_fragments_recompute_only_changed_nodes():
    table = nodes_of((8000, 8192, 2, "T4"), (8000, 8192, 2, "T4"))
    nodes = SharedNodes(table)
    typical = typical_tasks(tasks_of((1000, 1, 1, 500)), nodes.models)
    tracker = NodeFragments(typical, nodes)
    assert tracker.current().tolist() == [0.0, 0.0]
    nodes.assign(request(milli=700), 0, (0,))
    assert tracker.current().tolist() == [300.0, 0.0]  # 300 left on GPU 0 is below the typical 500


# --------------------------------------------------------------------------- placements
def bound(name: str, table: NodeTable, workload: TaskTable | None = None):
    nodes = SharedNodes(table)
    rule = make_task_placement(name)
    typical = typical_tasks(workload or tasks_of((1000, 1, 1, 500)), nodes.models)
    rule.bind(nodes, NodeFragments(typical, nodes), np.random.default_rng(0))
    return nodes, rule


def test_registry_keeps_both_kinds_apart():
    assert set(names_placing("tasks")) == {"random", "dotprod", "gpu-clustering", "gpu-packing", "best-fit", "fgd"}
    assert "packed" in names_placing("gangs")
    assert PLACEMENTS.get("fgd").meta["places"] == "tasks"
    with pytest.raises(InputError, match="shared GPUs"):
        make_placement("fgd")
    with pytest.raises(InputError, match="whole-GPU"):
        make_task_placement("packed")


def test_best_fit_prefers_the_fullest_node():
    nodes, rule = bound("best-fit", nodes_of((64000, 1, 2, "T4"), (64000, 1, 2, "T4")))
    nodes.assign(request(cpu=32000, milli=1000), 1, (0,))
    # node 1: 32 cores and 1 GPU left -> x = 0.5*(32000-1000)/128000 + 0.5*(1000-500)/8000 = 0.15234 -> 84
    # node 0: x = 0.5*63000/128000 + 0.5*1500/8000 = 0.33984 -> 66
    assert rule.scores(request(milli=500), np.array([0, 1])).tolist() == [66, 84]


def test_dot_product_prefers_least_aligned_free_resources():
    nodes, rule = bound("dotprod", nodes_of((64000, 1, 2, "T4"), (128000, 1, 8, "T4")))
    # node 0: (0.5, 0.25).(1000/128000, 500/8000) / 2 = 0.00976 -> 99; node 1: (1, 1).(...) / 2 = 0.0351 -> 96
    assert rule.scores(request(milli=500), np.array([0, 1])).tolist() == [99, 96]


def test_gpu_clustering_groups_kinds():
    nodes, rule = bound("gpu-clustering", nodes_of(*[(64000, 1, 8, "T4")] * 4))
    nodes.assign(request(milli=500), 0, (0,))  # node 0: shares only
    nodes.assign(request(milli=500), 1, (0,))
    nodes.assign(request(gpus=2), 1, (1, 2))  # node 1: shares and 2-GPU
    nodes.assign(request(gpus=1), 2, (0,))  # node 2: 1-GPU only; node 3 empty
    scores = rule.scores(request(milli=300), np.arange(4)).tolist()
    # base = floor(25 * (8000 - idle) / 8000): node 0 idle 7500 -> 1; node 1 5500 -> 7; node 2 7000 -> 3; node 3 0
    assert scores == [1 + 75, 7 + 50, 3 + 0, 0 + 25]
    assert rule.scores(request(gpus=0, milli=0), np.arange(4)).tolist() == [0, 0, 0, 0]


def test_gpu_packing_orders_partial_gpus_then_partial_nodes_then_idle_nodes():
    nodes, rule = bound("gpu-packing", nodes_of(*[(64000, 1, 4, "T4")] * 3))
    nodes.assign(request(milli=700), 0, (0,))  # node 0: one GPU with 300 free
    nodes.assign(request(gpus=1), 1, (0,))  # node 1: one GPU busy, three idle
    scores = rule.scores(request(milli=200), np.arange(3)).tolist()
    # node 0 takes the 300-free GPU: 100 - floor(floor(300*100/1000)/10) = 97; node 1 takes an idle GPU: 49;
    # node 2 all idle: max(33 - 4, 4) = 29
    assert scores == [97, 49, 29]


def test_random_draws_a_fitting_gpu():
    nodes, rule = bound("random", nodes_of((64000, 1, 4, "T4")))
    nodes.assign(request(milli=900), 0, (1,))
    chosen = {rule.gpus(request(milli=500), 0) for _ in range(50)}
    assert chosen == {(0,), (2,), (3,)}


def test_fgd_picks_the_gpu_that_keeps_room_for_typical_tasks():
    """Typical tasks ask 500 milli. A 500 task on node 0 (GPUs with 1000 and 600 free): on the 600 one it leaves
    100 that no typical task can use (fragment +100); on the idle one it leaves 500, still usable (+0), so FGD
    takes GPU 0, where best fit would take GPU 1."""
    workload = tasks_of(*[(1000, 1, 1, 500)] * 10)
    nodes, rule = bound("fgd", nodes_of((64000, 1, 2, "T4")), workload)
    nodes.assign(request(milli=400), 0, (1,))
    assert rule.gpus(request(milli=500), 0) == (0,)
    assert nodes.best_fit_gpus(request(milli=500), 0) == (1,)


def test_fgd_scores_refresh_after_a_node_changes():
    workload = tasks_of(*[(1000, 1, 1, 500)] * 10)
    nodes, rule = bound("fgd", nodes_of((64000, 1, 1, "T4"), (64000, 1, 1, "T4")), workload)
    task = request(milli=700)
    first = rule.scores(task, np.array([0, 1])).tolist()
    assert first[0] == first[1]
    nodes.assign(request(milli=400), 0, (0,))  # node 0 now has 600 free: 700 no longer fits there, but 300 does
    small = request(milli=300)
    before = rule.scores(small, np.array([0, 1])).tolist()
    # on node 0, 300 leaves 300 free (unusable by a 500 task: +300); on node 1 it leaves 700 (usable: +0)
    assert before[1] > before[0]


# --------------------------------------------------------------------------- the experiment
def test_tuning_fills_to_the_target_and_keeps_every_task_once_first():
    tasks = tasks_of(*[(1000, 1, 1, 500)] * 4 + [(1000, 1, 0, 0)] * 2)
    order = tuned_order(tasks, 10_000, 1.3, np.random.default_rng(1))
    assert sorted(order[:6].tolist()) == list(range(6))
    total = int(tasks.gpu_request_milli[order].sum())
    assert 13_000 - 500 < total <= 13_000


def test_tuning_down_drops_tasks_until_under_target():
    tasks = tasks_of(*[(1000, 1, 1, 1000)] * 20)
    order = tuned_order(tasks, 10_000, 1.3, np.random.default_rng(1))
    assert len(order) == 13 and len(set(order.tolist())) == 13


def test_fill_counts_failed_requests_as_arrived():
    table = nodes_of((4000, 8192, 1, "T4"))
    tasks = tasks_of((1000, 1, 1, 1000), (1000, 1, 1, 1000))
    result = run_fill(table, tasks, "best-fit", seed=0, tune=2.0)
    assert result.submitted == 2 and result.failed == 1
    assert result.events.arrived_milli.tolist() == [1000, 2000]
    assert result.events.used_milli.tolist() == [1000, 1000]


def test_discrete_curves_average_the_events_in_each_one_percent_bin():
    from gpuweave.cluster.sharing.experiment import FillEvents

    arrived = np.array([40, 60, 100, 990, 1000])  # of 1 GPU (1000 milli): loads 4, 6, 10, 99, 100 %
    used = np.array([40, 60, 100, 500, 600])
    events = FillEvents(arrived, used, np.zeros(5), np.zeros(5), np.zeros(5), np.zeros(5), used)
    curves = discrete_curves(events, 1, points=(5, 6, 10, 50, 100))
    assert curves["allocation"] == [5.0, 6.0, 10.0, None, 60.0]  # 5: no event at 5, mean of 4 and 6


def test_fragment_is_bit_equal_in_any_batch():
    """FGD's score needs F(before) - F(after) == 0.0 exactly when a task changes nothing a typical task sees: the
    same node must give the same float alone, in a batch of nodes and under an extra axis of options."""
    rng = np.random.default_rng(3)
    rows = [
        (int(c), 1, int(n), int(g))
        for c, n, g in zip(rng.integers(1, 40, 200) * 1000, rng.integers(0, 3, 200), rng.integers(1, 11, 200) * 100)
    ]
    rows = [(c, m, n, g if n == 1 else (1000 if n else 0)) for c, m, n, g in rows]
    typical = typical_tasks(tasks_of(*rows), ("T4", "V100"))
    gpu_free = rng.integers(0, 11, (64, 8)) * 100
    gpu_free[:, 6:] = -1
    cpu_free = rng.integers(0, 64, 64) * 1000
    model = rng.integers(-1, 2, 64)
    batch = node_fragment(typical, cpu_free, gpu_free, model)
    alone = [node_fragment(typical, cpu_free[i : i + 1], gpu_free[i : i + 1], model[i : i + 1])[0] for i in range(64)]
    options = node_fragment(
        typical,
        np.repeat(cpu_free[:, None], 3, 1),
        np.repeat(gpu_free[:, None, :], 3, 1),
        np.repeat(model[:, None], 3, 1),
    )
    assert batch.tolist() == alone
    assert (options == batch[:, None]).all()


def test_whole_gpus_place_fewer_of_the_same_tasks():
    """Four tasks asking half a GPU on two 1-GPU nodes: shared, all four fit (2 GPUs held, 2 asked); whole, two fit
    and hold both GPUs while asking one."""
    table = nodes_of((8000, 8192, 1, "T4"), (8000, 8192, 1, "T4"))
    tasks = tasks_of(*[(1000, 1024, 1, 500)] * 4)
    shared = run_fill(table, tasks, "best-fit", seed=0, tune=1.0)
    whole = run_fill(table, tasks, "best-fit", seed=0, tune=1.0, sharing="whole")
    assert (shared.failed, whole.failed) == (0, 2)
    assert shared.events.arrived_milli.tolist() == whole.events.arrived_milli.tolist() == [500, 1000, 1500, 2000]
    assert shared.events.used_milli[-1] == shared.events.asked_milli[-1] == 2000
    assert (whole.events.used_milli[-1], whole.events.asked_milli[-1]) == (2000, 1000)
    with pytest.raises(InputError, match="sharing must be one of"):
        run_fill(table, tasks, "best-fit", seed=0, sharing="mps")


# --------------------------------------------------------------------------- MIG
def mig_nodes(count: int = 1, gpus: int = 1) -> SharedNodes:
    table = nodes_of(*[(64000, 262144, gpus, "A100")] * count)
    return SharedNodes(
        NodeTable(table.names, table.models, table.cpu_milli, table.memory_mib, table.num_gpus, mig=(True,) * count)
    )


def test_mig_instances_cover_the_share_and_pack_a_gpu():
    """A100, 7 slices: 460 milli needs 4 slices (4g, at S0); 250 needs 2 (2g): with 4g at S0 taken, 2g goes to S4
    (leaving the 1g at S6) rather than nowhere; a third 250 then finds no 2g place, a 120 (1 slice) still fits."""
    nodes = mig_nodes()
    first = nodes.assign(request(milli=460), 0, nodes.best_fit_gpus(request(milli=460), 0))
    assert [p.label for p in first.instances] == ["4@0"]
    second = nodes.assign(request(milli=250), 0, nodes.best_fit_gpus(request(milli=250), 0))
    assert [p.label for p in second.instances] == ["2@4"]
    assert nodes.fits(request(milli=250)).tolist() == [False]
    assert nodes.fits(request(milli=120)).tolist() == [True]
    # held: 6 of 7 slices = 857 milli-GPUs (the tasks asked 710)
    assert nodes.gpu_used_milli == 857 and nodes.instances_created == 2
    nodes.release(request(milli=250), second)
    assert nodes.fits(request(milli=250)).tolist() == [True] and nodes.gpu_used_milli == 571


def test_mig_whole_gpu_tasks_need_an_empty_gpu():
    nodes = mig_nodes(gpus=2)
    nodes.assign(request(milli=100), 0, nodes.best_fit_gpus(request(milli=100), 0))
    assert nodes.fits(request(gpus=1)).tolist() == [True]
    assert nodes.fits(request(gpus=2)).tolist() == [False]
    assert nodes.best_fit_gpus(request(gpus=1), 0) == (1,)


def test_fill_on_mig_compares_with_fractions_and_whole_gpus():
    from gpuweave.hardware.cluster_spec import cluster_from_dict
    from gpuweave.hardware.node_resources import node_table_from_spec

    spec = cluster_from_dict({"name": "a100", "nodes": [{"count": 2, "gpu": "A100", "gpus_per_node": 4}]})
    tasks = tasks_of(*[(1000, 1024, 1, 250)] * 6 + [(1000, 1024, 1, 600)] * 2)
    fraction = run_fill(node_table_from_spec(spec), tasks, "best-fit", seed=1, tune=1.3)
    mig = run_fill(node_table_from_spec(spec, mig=True), tasks, "best-fit", seed=1, tune=1.3, sharing="mig")
    whole = run_fill(node_table_from_spec(spec), tasks, "best-fit", seed=1, tune=1.3, sharing="whole")
    assert fraction.events.arrived_milli.tolist() == mig.events.arrived_milli.tolist()
    # instances round shares up (250 -> 2 of 7 slices), whole GPUs round them to 1000: fewer tasks fit each time
    assert fraction.failed <= mig.failed <= whole.failed
    assert mig.nodes.instances_created == mig.submitted - mig.failed
    with pytest.raises(InputError, match="all run MIG"):
        run_fill(node_table_from_spec(spec), tasks, "best-fit", seed=1, sharing="mig")
    with pytest.raises(InputError, match="MIG-capable"):
        node_table_from_spec(cluster_from_dict({"name": "t4", "nodes": [{"gpu": "T4", "gpus_per_node": 1}]}), mig=True)
