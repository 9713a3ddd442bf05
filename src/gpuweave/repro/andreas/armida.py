"""ARMIDA replay: the paper's real-cluster validation re-run in simulation (paper Sec. V-C; spec §10.4).

Problem: predict the energy cost of the 8 jobs of Table V on the three scheduled ARMIDA nodes (armida-05:
1×V100, armida-06: 2×V100, armida-07: 1×T4) with the optimizer invoked every 300 s, and compare it with
the paper's predicted 1.08438 € and measured 0.95111 € (Table III).

Recipe (spec §10.4): catalogue rows TESLA×1, TESLA×2, TURING×1 and the per-epoch profiles of §2.2; due
dates read as relative to submission (d_abs = S + d, A18); ω as given, in €/s (A19); periodic only,
H = 300 s, so f_OBJ's postponement horizon H_wc = 300. J9 cannot meet its due date under this profile
(its fastest time 2848.672 s exceeds its 2600 s), so every method predicts lateness for it and, as in the
paper, energy alone is compared. The predicted cost is the simulated energy (real-cost accounting of §3
on the simulated schedule). Complexity: a few dozen optimizer calls.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from gpuweave.andreas.catalog import gpu_type, load_costs
from gpuweave.andreas.workload import PRICE_EUR_PER_KWH, PUE, andreas_job
from gpuweave.repro.andreas.simulate import RunResult, run_policy


@dataclass(frozen=True, slots=True)
class ArmidaSetup:
    nodes: list
    jobs: list
    period: float


def armida_setup(snapshot_every: float | None = None) -> ArmidaSetup:
    """Nodes and jobs of the replay from the bundled ``data/armida.toml`` (Tables II and V)."""
    # imported when called: `gpuweave --help` imports this module
    from gpuweave.hardware.cluster_spec import Node

    data = tomllib.loads(
        resources.files("gpuweave.andreas").joinpath("data", "armida.toml").read_text(encoding="utf-8")
    )
    nodes = [
        Node(i, nd["name"], gpu_type(nd["gpu_type"]), int(nd["num_gpus"]), PRICE_EUR_PER_KWH, PUE)
        for i, nd in enumerate(data["nodes"])
    ]
    jobs = [
        andreas_job(
            jb["id"],
            jb["application"],
            jb["epochs"],
            jb["submission"],
            jb["submission"] + jb["due"],
            jb["weight"],
            batch=jb["batch"],
            snapshot_every=snapshot_every,
        )
        for jb in data["jobs"]
    ]
    return ArmidaSetup(nodes, jobs, float(data["period_s"]))


def replay(policy: str = "andreas", seed: int = 0, mode: str = "periodic", **options) -> RunResult:
    """Run the replay under ``policy``; ``mode`` = ``periodic`` (H = 300, periodic only; the paper's
    prototype), ``event`` (event-driven) or ``event+periodic``."""
    setup = armida_setup(options.pop("snapshot_every", None))
    if mode == "periodic":
        options.update(period=setup.period, periodic_only=True)
    elif mode == "event+periodic":
        options.update(period=setup.period, periodic_only=False)
    elif mode != "event":
        raise ValueError(f"mode must be periodic, event or event+periodic, got {mode!r}")
    if policy == "andreas":
        options.setdefault("seed", seed)
    return run_policy(setup.nodes, setup.jobs, policy, costs=load_costs(), **options)


def intervals(result: RunResult) -> list[tuple[str, int, int, float, float]]:
    """(job, node index, GPUs, start, end) stretches of the run, from the allocation records."""
    open_: dict[tuple[str, int], tuple[int, float]] = {}
    out = []
    for ch in result.records.allocations:
        key = (ch.job_id, ch.node)
        if key in open_:
            g, start = open_.pop(key)
            if ch.time > start:
                out.append((ch.job_id, ch.node, g, start, ch.time))
        if ch.gpus > 0:
            open_[key] = (ch.gpus, ch.time)
    for (job, node), (g, start) in open_.items():
        out.append((job, node, g, start, result.records.end_time))
    return out


def plot_trace(result: RunResult, node_names: list[str], path, title: str = "") -> None:
    """Figure 4-like Gantt chart: one row per node (and GPU), one bar per job stretch, labelled job×GPUs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = intervals(result)
    fig, ax = plt.subplots(figsize=(10, 3.2))
    cmap = plt.get_cmap("tab10")
    ids = sorted({r[0] for r in rows}, key=lambda s: (len(s), s))
    color = {j: cmap(i % 10) for i, j in enumerate(ids)}
    # Stack concurrent jobs of one node on lanes so that shared nodes show both jobs.
    lanes: dict[int, list[tuple[float, float, int]]] = {}
    for job, node, g, s, e in sorted(rows, key=lambda r: (r[1], r[3])):
        used = lanes.setdefault(node, [])
        lane = 0
        while any(not (e <= a or s >= b) for a, b, ln in [(x[0], x[1], x[2]) for x in used] if ln == lane):
            lane += 1
        used.append((s, e, lane))
        y = node * 3 + lane
        ax.broken_barh(
            [(s / 3600, (e - s) / 3600)], (y - 0.4, 0.8), facecolors=color[job], edgecolor="k", linewidth=0.4
        )
        ax.text((s + e) / 7200, y, f"{job}×{g}", ha="center", va="center", fontsize=7)
    ax.set_yticks([i * 3 + 0.5 for i in range(len(node_names))])
    ax.set_yticklabels(node_names)
    ax.set_xlabel("time [h]")
    ax.set_title(title or "ARMIDA replay: job placements (job × GPUs)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
