"""``gpuweave demo`` section: two services (HI at priority 0, LO at priority 1) on one simulated GPU
under exclusive use, default sharing (time slice q = 2 ms) and FIKIT, with a JCT table and a timeline
PNG. Runs in about a second on the canonical traces (spec §6.3)."""

from __future__ import annotations

from gpuweave.demo.sections import DemoContext, DemoSection, register_demo_section


@register_demo_section("fikit", order=40)
def fikit_demo(ctx: DemoContext) -> DemoSection:
    from dataclasses import replace

    from gpuweave.kernel.sim import Service, SimConfig, Workload, simulate
    from gpuweave.kernel.timeline import plot_timelines
    from gpuweave.kernel.traces import hi_trace, lo_trace

    n_a, n_b = (4, 12) if ctx.quick else (10, 40)
    svcs = [
        Service("HI (p0)", hi_trace(), 0, Workload.back_to_back(n_a)),
        Service("LO (p1)", lo_trace(), 1, Workload.back_to_back(n_b)),
    ]
    base = SimConfig(seed=ctx.seed, stop_when=("HI (p0)",))
    win = (20.0, 32.0)
    rows = []
    panels = []
    alone = {s.name: simulate([s], replace(base, mode="exclusive", stop_when=None)).mean_jct(s.name) for s in svcs}
    rows.append(
        {
            "mode": "exclusive (each alone)",
            "HI mean JCT ms": round(alone["HI (p0)"], 2),
            "LO mean JCT ms": round(alone["LO (p1)"], 2),
            "HI vs exclusive": 1.0,
        }
    )
    for label, mode in (("default sharing (time slice 2 ms)", "share_timeslice"), ("FIKIT (recommended)", "fikit")):
        r = simulate(svcs, replace(base, mode=mode, record_kernels=True, record_window=win))
        hi, lo = r.mean_jct("HI (p0)"), r.mean_jct("LO (p1)")
        rows.append(
            {
                "mode": label,
                "HI mean JCT ms": round(hi, 2),
                "LO mean JCT ms": round(lo, 2),
                "HI vs exclusive": round(hi / alone["HI (p0)"], 3),
            }
        )
        panels.append((label, r.kernels))
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    png = plot_timelines(panels, win, ctx.out_dir / "fikit_timeline.png")
    text = (
        "HI keeps its exclusive-mode latency under FIKIT while LO's kernels fill HI's inter-kernel gaps "
        "(hatched); under time slicing HI waits for LO's slices. LO JCT is over the tasks finished while HI ran."
    )
    return DemoSection("FIKIT: kernel-level priority sharing of one GPU", rows, [png], text)
