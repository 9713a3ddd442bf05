"""Tasks sharing GPUs in the time-based simulator: the book's share ledger, queue policies composed with task
placements, traced durations, and the bad inputs of a shared run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuweave.cluster.decision import Decision
from gpuweave.cluster.metrics import summarize
from gpuweave.cluster.placements import make_task_placement
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.simulator import Simulator
from gpuweave.errors import InputError, InvalidDecisionError
from gpuweave.hardware.cluster_spec import Node
from gpuweave.workload.job import Job
from gpuweave.workload.traced_rates import TracedDurations

POWER = {"V100": (50.0, 300.0), "T4": (10.0, 70.0)}
REPO = Path(__file__).resolve().parents[2]
OPENB = REPO.parent / "shared" / "data" / "fgd" / "csv"


def nodes_of(spec, sharing="fraction"):
    """spec: (model, GPUs, milli-CPU) per node."""
    return [
        Node(i, f"n{i}", model, gpus, 0.1, 1.0, cpu_milli=cpu, memory_mib=1 << 16, sharing=sharing)
        for i, (model, gpus, cpu) in enumerate(spec)
    ]


def task(job_id, arrival, duration, gpu_milli=1000, num_gpus=1, cpu_milli=1000, allowed=None):
    return Job(
        job_id,
        arrival,
        num_gpus,
        float(duration),
        "any",
        attrs={"gpu_milli": gpu_milli, "cpu_milli": cpu_milli, "memory_mib": 1024},
        allowed_models=allowed,
    )


def simulate(nodes, jobs, policy="fifo", placement="best-fit", **options):
    sim = Simulator(
        nodes,
        jobs,
        make_policy(policy, **options),
        TracedDurations(),
        POWER,
        restart_delay=0.0,
        placement=make_task_placement(placement),
    )
    return sim, sim.run()


def test_shares_of_one_gpu_run_together_and_a_third_waits():
    nodes = nodes_of([("V100", 1, 8000)])
    jobs = [task("a", 0, 100, 500), task("b", 0, 50, 500), task("c", 1, 10, 300)]
    _, rec = simulate(nodes, jobs)
    by = {js.job_id: js for js in rec.jobs}
    assert by["a"].first_start == by["b"].first_start == 0.0  # two halves of one GPU at once
    assert by["c"].first_start == 50.0  # strict FIFO: room only once b leaves
    assert by["a"].end == 100.0 and by["c"].end == 60.0  # traced durations: work = seconds on any GPU
    # GPU-seconds count the share held: 0.5 x 100 + 0.5 x 50 + 0.3 x 10
    assert sum(js.attained_gpu_seconds for js in rec.jobs) == pytest.approx(50 + 25 + 3)


def test_capacity_never_exceeded_and_everything_given_back():
    nodes = nodes_of([("V100", 2, 4000), ("T4", 1, 16000)])
    jobs = [task(f"j{i}", i * 3.0, 40 + (i * 7) % 50, (150, 400, 1000, 700)[i % 4], cpu_milli=1000) for i in range(60)]
    sim, rec = simulate(nodes, jobs, policy="sjf", placement="fgd")
    assert all(js.end is not None for js in rec.jobs)
    ledger = sim.book.shares
    assert ledger.nodes.gpu_used_milli == 0 and not ledger.assignments and not ledger.provisional
    assert (ledger.nodes.cpu_free == ledger.table.cpu_milli).all()
    # replay the allocation records: at no instant does a GPU hold more than its whole or a node more CPU than it has
    share = {js.job_id: js.job.attrs["gpu_milli"] for js in rec.jobs}
    events = sorted(
        (a.time, a.gpus > 0, a.job_id, a.node) for a in rec.allocations
    )  # releases (False) before takes at one instant, as the book applies them
    used = [0, 0, 0]
    cpu = [0, 0, 0]
    for _, take, job_id, node in events:
        sign = 1 if take else -1
        used[node] += sign * share[job_id]
        cpu[node] += sign * 1000
        assert used[node] <= 1000 * nodes[node].num_gpus and cpu[node] <= nodes[node].cpu_milli
    assert rec.shares is not None and rec.shares.series[-1][1] == 0


def test_a_cluster_that_does_not_share_rounds_shares_up():
    nodes = nodes_of([("V100", 1, 8000)], sharing="whole")
    _, rec = simulate(nodes, [task("a", 0, 100, 500), task("b", 0, 50, 500)])
    by = {js.job_id: js for js in rec.jobs}
    assert by["b"].first_start == 100.0  # half a GPU asked, the whole GPU held
    assert sum(js.attained_gpu_seconds for js in rec.jobs) == pytest.approx(150.0)


def test_cpu_fragments_a_node():
    nodes = nodes_of([("V100", 2, 2000)])
    jobs = [task("cpu-heavy", 0, 100, 100, cpu_milli=2000), task("b", 1, 10, 100, cpu_milli=500)]
    _, rec = simulate(nodes, jobs)
    by = {js.job_id: js for js in rec.jobs}
    assert by["b"].first_start == 100.0  # the GPUs are 90 % free, the CPU is not


def test_start_classes_name_the_request():
    """A non-strict FIFO skips a class once its head fails; a smaller share of the same job type behind a big one
    is another class and still starts."""
    nodes = nodes_of([("V100", 1, 8000)])
    jobs = [task("a", 0, 100, 600), task("big", 1, 10, 600), task("small", 2, 10, 300)]
    _, rec = simulate(nodes, jobs, strict=False)
    by = {js.job_id: js for js in rec.jobs}
    assert by["small"].first_start == 2.0 and by["big"].first_start == 100.0


def test_allowed_models_and_whole_gpu_tasks():
    nodes = nodes_of([("V100", 2, 8000), ("T4", 2, 8000)])
    jobs = [task("t4-only", 0, 10, 500, allowed=("T4",)), task("pair", 0, 10, 1000, num_gpus=2, allowed=("V100",))]
    _, rec = simulate(nodes, jobs)
    placed = {a.job_id: a.node for a in rec.allocations if a.gpus > 0}
    assert nodes[placed["t4-only"]].gpu_model == "T4" and nodes[placed["pair"]].gpu_model == "V100"


def test_invalid_decision_gives_back_the_plans_shares():
    nodes = nodes_of([("V100", 1, 8000)])
    jobs = [task("a", 0, 10, 600), task("b", 0, 10, 600)]
    sim = Simulator(
        nodes, jobs, make_policy("fifo"), TracedDurations(), POWER, placement=make_task_placement("best-fit")
    )
    book = sim.book
    for js in book.states:
        book.arrive(js)
    before = book.shares.nodes.gpu_free.copy()
    with pytest.raises(InvalidDecisionError, match="does not fit"):
        book.apply(Decision(assign={"a": ((0, 1),), "b": ((0, 1),)}), "test")
    assert (book.shares.nodes.gpu_free == before).all() and not book.shares.provisional
    assert book.apply(Decision(assign={"a": ((0, 1),)}), "test")  # the same book still takes a valid one


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: (nodes_of([("V100", 1, 8000)]), "hadar", [task("a", 0, 1, 500)]), "places jobs by its own rule"),
        (lambda: (nodes_of([("V100", 1, 8000)]), "fifo", [task("a", 0, 1, 500, cpu_milli=9000)]), "fits on no node"),
        (lambda: (nodes_of([("V100", 1, 8000)]), "fifo", [task("a", 0, 1, 1000, num_gpus=2)]), "cannot run on any GPU"),
    ],
)
def test_bad_shared_runs_are_one_clear_error(build, message):
    nodes, policy, jobs = build()
    with pytest.raises(InputError, match=message):
        Simulator(nodes, jobs, make_policy(policy), TracedDurations(), POWER, placement=make_task_placement("fgd"))


def test_whole_gpu_runs_keep_no_ledger(profiles):
    from tests.cluster.conftest import make_nodes

    nodes = make_nodes([("V100", 2)])
    sim = Simulator(nodes, [Job("a", 0.0, 1, 30.0, "small")], make_policy("fifo"), profiles, {"V100": (50.0, 300.0)})
    rec = sim.run()
    assert sim.book.shares is None and rec.shares is None and sim.view.shares is None


@pytest.mark.skipif(not (OPENB / "openb_pod_list_gpushare40.csv").exists(), reason="shared/data/fgd not present")
def test_openb_replay_end_to_end(tmp_path):
    """openb pods converted, openb's nodes as a cluster, FIFO with FGD: every task ends, the shares recorded."""
    from typer.testing import CliRunner

    from gpuweave.cli import app

    runner = CliRunner()
    pods = tmp_path / "pods.csv"
    lines = (OPENB / "openb_pod_list_gpushare40.csv").read_text().splitlines()
    pods.write_text("\n".join(lines[:1500]) + "\n")
    for argv in (
        ["trace", "convert", str(pods), str(tmp_path / "t.csv"), "--from", "alibaba-pods"],
        [
            "trace",
            "cluster",
            str(OPENB / "openb_node_list_gpu_node.csv"),
            str(tmp_path / "c.yaml"),
            "--gpu-map",
            "G2=V100",
            "--gpu-map",
            "G3=A100",
        ],
        [
            "cluster",
            "simulate",
            "--policy",
            "fifo",
            "--trace",
            str(tmp_path / "t.csv"),
            "--cluster",
            str(tmp_path / "c.yaml"),
            "--profiles",
            "traced",
            "--placement-rule",
            "fgd",
            "--out",
            str(tmp_path / "r"),
        ],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    metrics = summary["metrics"]
    assert metrics["completed"] == metrics["jobs"] > 200
    assert 0 < metrics["peak_gpu_allocation_pct"] <= 100 and metrics["mean_fragment_ratio_pct"] >= 0
    rows = (tmp_path / "r" / "sharing.csv").read_text().splitlines()
    assert rows[0] == "time_s,used_milli_gpus,fragment_milli_gpus,fragment_ratio_pct"
    assert rows[-1].split(",")[1] == "0"  # everything given back at the end


def test_mig_nodes_give_each_task_an_instance_and_reuse_or_repartition():
    """A100 with MIG: half a GPU needs a 4-slice instance, so two halves cannot share its 7 slices; a 3-slice
    instance (3/7 of a GPU) fits beside a 4-slice one. A task's instance stays, idle, when it ends: the next task
    of that size reuses it at no cost; one of another size has the idle instance destroyed first (FAR Table 1)."""
    nodes = nodes_of([("A100-40GB", 1, 64000)], sharing="mig")
    power = {"A100-40GB": (50.0, 400.0)}
    jobs = [task("a", 0, 100, 500), task("b", 0, 10, 500), task("c", 0, 10, 428), task("d", 200, 10, 1000)]
    sim = Simulator(
        nodes, jobs, make_policy("fifo", strict=False), TracedDurations(), power, restart_delay=0.0,
        placement=make_task_placement("best-fit"),
    )  # fmt: skip
    rec = sim.run()
    by = {js.job_id: js for js in rec.jobs}
    # created at 0.21 s (4g) and 0.20 s (3g); b reuses a's idle 4g when a ends
    assert by["a"].productive_start == pytest.approx(0.21) and by["c"].productive_start == pytest.approx(0.20)
    assert by["b"].first_start == pytest.approx(100.21) and by["b"].productive_start == by["b"].first_start
    # the whole GPU: both idle instances (4g, 3g) destroyed, then the 7g created
    assert by["d"].productive_start - by["d"].first_start == pytest.approx(0.21 + 0.21 + 0.24)
    nodes_state = sim.book.shares.nodes
    assert (nodes_state.instances_created, nodes_state.instances_destroyed) == (3, 2)
    assert not any(nodes_state.instances.values()) and nodes_state.gpu_used_milli == 0
    assert summarize(rec)["mig_reconfig_s"] == pytest.approx(0.21 + 0.20 + 0.66)


def _small_replay(tmp_path: Path) -> tuple[Path, Path]:
    """A trace of 40 tasks (shares, whole GPUs, CPU) in the gpuweave schema and a cluster of 2 A100 nodes."""
    rows = ["job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli,memory_mib"]
    for i in range(40):
        gpus, milli = ((1, 250), (1, 500), (1, 1000), (2, 1000))[i % 4]
        rows.append(f"t{i},{i * 5},{gpus},any,{60 + (i * 37) % 200},{milli},{2000 + 1000 * (i % 3)},4096")
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "name: two-a100\nnodes:\n- count: 2\n  gpu: A100\n  gpus_per_node: 4\n  cpu_milli: 16000\n"
        "  memory_mib: 65536\n  sharing: fraction\n"
    )
    return trace, cluster


def test_sharing_modes_side_by_side_one_command(tmp_path):
    from typer.testing import CliRunner

    from gpuweave.cli import app

    trace, cluster = _small_replay(tmp_path)
    base = ["cluster", "simulate", "--policy", "fifo", "--trace", str(trace), "--cluster", str(cluster)]
    base += ["--profiles", "traced", "--placement-rule", "best-fit"]
    out = tmp_path / "modes"
    result = CliRunner().invoke(app, [*base, "--sharing", "whole,fraction,mig", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)["modes"]
    assert set(runs) == {"whole", "fraction", "mig"}
    assert (out / "report" / "report.html").is_file() and all((out / m / "sharing.csv").is_file() for m in runs)
    jct = {m: runs[m]["metrics"]["avg_jct_s"] for m in runs}
    assert jct["fraction"] <= jct["whole"]  # the same tasks wait less when shares are not rounded up
    held = {m: runs[m]["metrics"]["gpu_hours"] for m in runs}
    assert held["fraction"] < held["mig"] < held["whole"]  # MIG rounds shares up to slices, whole to the GPU

    v100 = tmp_path / "v100.yaml"
    v100.write_text(cluster.read_text().replace("A100", "V100"))
    refused = tmp_path / "refused"
    result = CliRunner().invoke(app, [*base[:7], str(v100), *base[8:], "--sharing", "whole,mig", "--out", str(refused)])
    # (the CLI's entry point prints an InputError as one line with exit code 2; the app itself raises it)
    assert isinstance(result.exception, InputError) and "MIG-capable" in str(result.exception)
    assert not refused.exists()


def test_sharing_needs_a_task_placement():
    from gpuweave.cluster.config import parse_config

    with pytest.raises(InputError, match="task placement"):
        parse_config({"policy": "fifo", "sharing": "fraction"})


def test_cpu_only_tasks_hold_cpu_and_no_gpu():
    """openb's CPU-only pods fragment GPU nodes' CPU: a task of 0 GPUs takes the node's cores, a GPU task waits."""
    nodes = nodes_of([("V100", 2, 4000)])
    cpu = Job("cpu", 0.0, 0, 100.0, "cpu-only", attrs={"cpu_milli": 4000, "memory_mib": 1024})
    sim, rec = simulate(nodes, [cpu, task("gpu", 1, 10, 500, cpu_milli=1000)])
    by = {js.job_id: js for js in rec.jobs}
    assert by["cpu"].first_start == 0.0 and by["cpu"].end == 100.0 and by["cpu"].attained_gpu_seconds == 0.0
    assert by["gpu"].first_start == 100.0
    assert {a.job_id for a in rec.allocations} == {"gpu"}  # a CPU-only task holds no GPU to record
    assert sim.book.shares.nodes.cpu_free[0] == 4000


def test_cpu_only_tasks_need_a_shared_run(profiles):
    from tests.cluster.conftest import make_nodes

    cpu = Job("cpu", 0.0, 0, 100.0, "small", attrs={"cpu_milli": 1000})
    with pytest.raises(InputError, match="asks no GPU"):
        Simulator(make_nodes([("V100", 2)]), [cpu], make_policy("fifo"), profiles, {"V100": (50.0, 300.0)})
    with pytest.raises(InputError, match="no rate without GPUs"):
        Simulator(
            nodes_of([("V100", 2, 4000)]),
            [cpu],
            make_policy("fifo"),
            profiles,
            POWER,
            placement=make_task_placement("fgd"),
        )


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ("x,0,0,any,5,,", "num_gpus", ">= 1 GPUs \\(0 only for a CPU-only task"),
        ("x,0,0,any,5,500,2000", "gpu_milli", "leave gpu_milli empty"),
    ],
)
def test_cpu_only_rows_in_the_schema(tmp_path, row, field, message):
    from gpuweave.workload.traces.schema import read_trace

    path = tmp_path / "t.csv"
    path.write_text(f"job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli\n{row}\n")
    with pytest.raises(InputError, match=message) as caught:
        read_trace(path, profiles=TracedDurations())
    assert caught.value.field == field and caught.value.row == 1
    path.write_text("job_id,arrival,num_gpus,job_type,duration,gpu_milli,cpu_milli\nx,0,0,cpu-only,5,,2000\n")
    (job,) = read_trace(path, profiles=TracedDurations())
    assert job.num_gpus == 0 and job.work == 5.0 and job.attrs["cpu_milli"] == 2000


@pytest.mark.skipif(not (OPENB / "openb_pod_list_default.csv").exists(), reason="shared/data/fgd not present")
def test_openb_cpu_tasks_kept_on_request_and_gpu_pods_unchanged():
    from gpuweave.workload.traces.formats import load_trace_frame

    source = OPENB / "openb_pod_list_default.csv"
    plain = load_trace_frame(source, "alibaba-pods")
    kept = load_trace_frame(source, "alibaba-pods", cpu_tasks=True)
    cpu = kept[kept["num_gpus"] == 0]
    # 1,088 CPU-only pods, of which 36 never ran (no scheduled_time or no positive run time)
    assert len(cpu) == 1052 and set(cpu["job_type"]) == {"cpu-only"} and cpu["gpu_milli"].isna().all()
    gpu = kept[kept["num_gpus"] > 0].reset_index(drop=True)
    assert gpu["job_id"].tolist() == plain["job_id"].tolist()
    assert gpu["job_type"].tolist() == plain["job_type"].tolist()  # the seeded draws are the GPU pods' alone
    with pytest.raises(InputError, match="--cpu-tasks"):
        load_trace_frame(REPO / "examples" / "live" / "trace.csv", "schema", cpu_tasks=True)


def test_bench_replay_times_each_placement_beside_best_fit(tmp_path):
    from gpuweave.bench import bench_replay

    trace, cluster = _small_replay(tmp_path)
    result = bench_replay(trace, str(cluster), ["fgd"], "sjf")
    assert [run["placement"] for run in result["runs"]] == ["best-fit", "fgd"]
    assert result["runs"][0]["ratio_to_best_fit"] == 1.0 and result["gpus"] == 8
    assert all(run["jobs"] == 40 and run["cpu_s"] >= 0 and "mean_fragment_ratio_pct" in run for run in result["runs"])
    with pytest.raises(InputError, match="unknown placement rule 'packed'|places whole-GPU gangs"):
        bench_replay(trace, str(cluster), ["packed"])


def _tiresias(nodes, jobs, **options):
    return simulate(nodes, jobs, policy="tiresias", placement="best-fit", round_length=100, thresholds=[100], **options)


def test_tiresias_preempts_a_demoted_task_for_a_new_one_and_its_share_serves_the_new_one_at_once():
    """Tiresias on shared GPUs: a task past the first threshold (attained service in milli-GPU-seconds of its share)
    gives way to a new one in queue 0; its share is free for the new task in the same decision, it resumes when
    the new one leaves, and nothing is held at the end."""
    nodes = nodes_of([("V100", 1, 8000)])
    jobs = [task("a", 0, 1000, 1000), task("b", 150, 100, 600)]
    sim, rec = _tiresias(nodes, jobs)
    by = {js.job_id: js for js in rec.jobs}
    assert by["b"].first_start == 200.0  # the first round after it arrived
    stops = [a for a in rec.allocations if a.job_id == "a" and a.gpus == 0]
    assert stops[0].time == 200.0 and by["a"].restarts == 1  # preempted for b at that round, resumed later
    assert by["b"].end == 300.0 and by["a"].end == 1100.0  # resumed at 300: 200 + 800 s of work left
    assert by["a"].attained_gpu_seconds == pytest.approx(1000.0) and by["b"].attained_gpu_seconds == pytest.approx(60)
    ledger = sim.book.shares
    assert ledger.nodes.gpu_used_milli == 0 and not ledger.assignments and not ledger.unheld


def test_tiresias_keeps_a_demoted_task_whose_share_leaves_room():
    nodes = nodes_of([("V100", 1, 8000)])
    jobs = [task("a", 0, 1000, 500), task("b", 150, 100, 400)]
    _, rec = _tiresias(nodes, jobs)
    by = {js.job_id: js for js in rec.jobs}
    assert by["a"].restarts == 0 and by["a"].end == 1000.0 and by["b"].first_start == 200.0
    # its service counts its half of the GPU: 500 s past the threshold of 100 GPU-seconds is demoted at 200 s
    assert by["a"].attained_gpu_seconds == pytest.approx(500.0)


def test_tiresias_composes_with_every_task_placement_within_capacity():
    nodes = nodes_of([("V100", 2, 4000), ("T4", 1, 16000)])
    jobs = [task(f"j{i}", i * 3.0, 40 + (i * 7) % 50, (150, 400, 1000, 700)[i % 4], cpu_milli=1000) for i in range(60)]
    for placement in ("fgd", "best-fit", "random", "dotprod", "gpu-clustering", "gpu-packing"):
        sim, rec = simulate(nodes, jobs, policy="tiresias", placement=placement, round_length=30, thresholds=[20])
        assert all(js.end is not None for js in rec.jobs), placement
        assert sum(js.restarts for js in rec.jobs) > 0, placement  # it preempted
        ledger = sim.book.shares
        assert ledger.nodes.gpu_used_milli == 0 and not ledger.assignments and not ledger.unheld
        assert (ledger.nodes.cpu_free == ledger.table.cpu_milli).all()
        share = {js.job_id: js.job.attrs["gpu_milli"] for js in rec.jobs}
        used = [0, 0, 0]
        for _, take, job_id, node in sorted((a.time, a.gpus > 0, a.job_id, a.node) for a in rec.allocations):
            used[node] += share[job_id] if take else -share[job_id]
            assert 0 <= used[node] <= 1000 * nodes[node].num_gpus, placement


def test_a_plans_stop_the_decision_does_not_preempt_is_refused_and_the_share_taken_back():
    from gpuweave.cluster.decision import Plan

    nodes = nodes_of([("V100", 1, 8000)])
    jobs = [task("a", 0, 10, 600), task("b", 0, 10, 600)]
    sim = Simulator(
        nodes, jobs, make_policy("tiresias"), TracedDurations(), POWER, placement=make_task_placement("best-fit")
    )
    book, view = sim.book, sim.view
    for js in book.states:
        book.arrive(js)
    book.apply(Decision(assign={"a": ((0, 1),)}), "test")
    held = book.shares.nodes.gpu_free.copy()
    plan = Plan(view)
    plan.stop(book.running["a"])
    assert book.shares.nodes.gpu_used_milli == 0 and plan.free[0] == 1  # free for the plan's later starts
    plan.start(book.pending["b"], ((0, 1),))
    with pytest.raises(InvalidDecisionError, match="does not preempt"):
        book.apply(Decision(assign=dict(plan.decision.assign)), "test")
    assert (book.shares.nodes.gpu_free == held).all() and not book.shares.unheld and not book.shares.provisional
    # a decision built without a plan: the preempted task's share serves the start of the same decision
    book.apply(Decision(assign={"b": ((0, 1),)}, preempt=["a"]), "test")
    assert set(book.running) == {"b"} and book.shares.nodes.gpu_used_milli == 600


def test_gavel_counts_shares_so_two_halves_share_a_gpu_and_a_third_is_time_sliced_in():
    """Gavel on shared GPUs: its LP and its round's greedy pass count each task's share of a GPU (two halves fit on
    one GPU where whole-GPU Gavel would run one); a third half gets its turn by Gavel's priorities, the task it
    replaces preempted and its share free for it in the same decision."""
    nodes = nodes_of([("V100", 1, 8000)])
    jobs = [task("a", 0, 300, 500), task("b", 0, 300, 500), task("c", 0, 300, 500)]
    sim, rec = simulate(nodes, jobs, policy="gavel", round_length=100)
    by = {js.job_id: js for js in rec.jobs}
    assert sorted(js.first_start for js in rec.jobs) == [0.0, 0.0, 100.0]  # two at once, the third a round later
    assert sum(js.restarts for js in rec.jobs) > 0  # Gavel rotates them by its priorities
    # each round runs two of the three: a and b done at 400 (two turns of two rounds), c alone in the last round
    assert [by[j].end for j in "abc"] == [400.0, 400.0, 500.0] and [by[j].restarts for j in "abc"] == [1, 1, 1]
    assert all(by[j].attained_gpu_seconds == pytest.approx(150.0) for j in "abc")
    ledger = sim.book.shares
    assert ledger.nodes.gpu_used_milli == 0 and not ledger.assignments and not ledger.unheld


@pytest.mark.parametrize("policy", ["gavel", "gavel-min-total-duration", "gavel-ftf", "fifo-perf", "gavel-las"])
def test_gavel_composes_with_every_task_placement_within_capacity_and_on_the_type_it_chose(policy):
    nodes = nodes_of([("V100", 2, 4000), ("V100", 2, 8000), ("T4", 1, 16000), ("T4", 2, 8000)])
    jobs = [task(f"j{i}", i * 3.0, 40 + (i * 7) % 50, (150, 400, 1000, 700)[i % 4], cpu_milli=1000) for i in range(80)]
    jobs += [task("t4-only", 1.0, 60, 300, allowed=("T4",))]
    for placement in ("fgd", "best-fit", "random", "dotprod", "gpu-clustering", "gpu-packing"):
        sim, rec = simulate(nodes, jobs, policy=policy, placement=placement, round_length=30)
        assert all(js.end is not None for js in rec.jobs), placement
        ledger = sim.book.shares
        assert ledger.nodes.gpu_used_milli == 0 and not ledger.assignments and not ledger.unheld
        assert (ledger.nodes.cpu_free == ledger.table.cpu_milli).all()
        share = {js.job_id: js.job.attrs["gpu_milli"] for js in rec.jobs}
        used = [0] * len(nodes)
        for _, take, job_id, node in sorted((a.time, a.gpus > 0, a.job_id, a.node) for a in rec.allocations):
            used[node] += share[job_id] if take else -share[job_id]
            assert 0 <= used[node] <= 1000 * nodes[node].num_gpus, placement
        assert {nodes[a.node].gpu_model for a in rec.allocations if a.job_id == "t4-only"} == {"T4"}


def test_gavel_refuses_cpu_only_tasks_in_a_shared_run():
    nodes = nodes_of([("V100", 1, 8000)])
    cpu = Job("cpu", 0.0, 0, 100.0, "cpu-only", attrs={"cpu_milli": 1000, "memory_mib": 1024})
    with pytest.raises(InputError, match="job 'cpu' asks no GPU .*'gavel' allocates GPU time only"):
        simulate(nodes, [cpu, task("a", 0, 10, 500)], policy="gavel")


def test_a_running_tasks_share_moves_to_the_gpu_the_cluster_gave_it():
    """ClusterBook.move_share (the live runtime's, after Slurm chose the GPU of a task's shards): the ledger's
    books and the node's counts follow; the same slot, a slot the node lacks, or one without room change nothing."""
    nodes = nodes_of([("V100", 2, 8000)])
    jobs = [task("a", 0, 10, 600), task("b", 0, 10, 300), task("c", 0, 10, 500)]
    best_fit = make_task_placement("best-fit")
    sim = Simulator(nodes, jobs, make_policy("fifo"), TracedDurations(), POWER, placement=best_fit)
    book = sim.book
    for js in book.states:
        book.arrive(js)
    book.apply(Decision(assign={"a": ((0, 1),), "b": ((0, 1),), "c": ((0, 1),)}), "test")
    ledger = book.shares
    assert [ledger.assignments[j].gpus for j in "abc"] == [(0,), (0,), (1,)]  # best fit: a and b fill GPU 0
    assert list(ledger.nodes.gpu_free[0]) == [100, 500] and book.free[0] == 2
    assert not book.move_share("b", (0,)) and not book.move_share("b", (5,))  # the same slot; no such GPU
    assert not book.move_share("a", (1,)) and list(ledger.nodes.gpu_free[0]) == [100, 500]  # 600 > 500 free
    assert book.move_share("b", (1,))  # the cluster put b on GPU 1
    assert ledger.assignments["b"].gpus == (1,) and list(ledger.nodes.gpu_free[0]) == [400, 200]
    assert ledger.nodes.gpu_used_milli == 1400 and book.free[0] == 2
    book.apply(Decision(preempt=["a", "b", "c"]), "test")
    assert ledger.nodes.gpu_used_milli == 0 and list(ledger.nodes.gpu_free[0]) == [1000, 1000]  # all given back
