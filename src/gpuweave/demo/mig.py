"""``gpuweave demo`` section: the 16 Rodinia kernels on one A100, FAR against the baselines.

Runs FAR, MISO-opt, FixPart(1,...,1), FixPart(7) and FixPartBest on the bundled Rodinia A100 profile
(paper Sec. 6.4-6.5), validates every schedule, and draws FAR's Gantt chart. Takes well under a second.
"""

from __future__ import annotations

from typing import Any

from gpuweave.demo.sections import DemoContext, DemoSection, register_demo_section
from gpuweave.mig.far import far
from gpuweave.mig.fixpart import fixpart, fixpart_best, ones_partition, whole_partition
from gpuweave.mig.miso import miso_opt
from gpuweave.mig.problem import bundled_dataset
from gpuweave.mig.validate import validate_schedule
from gpuweave.report.grains import GrainRun, mig_gantt_figure, mig_makespan_figure
from gpuweave.results import read_result_dir


@register_demo_section("mig", order=20)
def mig_section(ctx: DemoContext) -> DemoSection:
    # imported here: importing gpuweave.demo.mig does without pydantic
    from gpuweave.mig.results import write_mig_result

    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    p = bundled_dataset("rodinia-a100")
    r = far(p)
    scheds = [
        ("FAR", r.schedule),
        ("MISO-opt", miso_opt(p)),
        ("FixPart(1,...,1)", fixpart(p, ones_partition(p))),
        ("FixPart(7)", fixpart(p, whole_partition(p))),
        ("FixPartBest", fixpart_best(p)),
    ]
    table: list[dict[str, Any]] = []
    for name, s in scheds:
        table.append(
            {
                "algorithm": name,
                "makespan_s": round(s.makespan, 4),
                "sigma_vs_FAR": round(s.makespan / r.makespan, 3),
                "ratio_to_LB": round(s.makespan / r.lower_bound, 3),
                "reconfigurations": len(s.operations),
                "valid": validate_schedule(s, p).ok,
            }
        )
    runs = []
    for name, s in scheds:
        run_dir = ctx.out_dir / "runs" / slug(name)
        write_mig_result(run_dir, s, {"tasks": "bundled rodinia-a100", "gpu": "A100", "gpus": 1, "algo": name})
        runs.append(GrainRun(run_dir, read_result_dir(run_dir), label=name))
    figures = [
        mig_makespan_figure(runs, ctx.out_dir),
        mig_gantt_figure(
            runs[0], ctx.out_dir / "far_rodinia_a100.png", title=f"FAR, 16 Rodinia kernels on A100: {r.makespan:.3f} s"
        ),
    ]
    nxt = min((t for t in table[1:]), key=lambda t: t["makespan_s"])
    text = (
        f"FAR: makespan {r.makespan:.3f} s, lower bound {r.lower_bound:.3f} s, rho {r.rho:.3f} (paper 1.22); "
        f"{r.phase2.family_size} allocations, {r.stats.moves} move(s) and {r.stats.swaps} swap(s) in refinement, "
        f"{len(r.schedule.operations)} create/destroy operations. Times: Rodinia means from Jorgitou98/task-scheduling."
    )
    return DemoSection(
        title="MIG: Rodinia batch on A100 (FAR vs baselines)",
        table=table,
        figures=figures,
        text=text,
        summary=f"MIG: FAR plans the 16 Rodinia kernels in {r.makespan:.2f} s, "
        f"{1 - r.makespan / nxt['makespan_s']:.0%} shorter than the best baseline ({nxt['algorithm']}, "
        f"{nxt['makespan_s']:.2f} s), {r.rho:.2f}× the lower bound.",
        runs=[run.path for run in runs],
    )


def slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name).strip("_")
