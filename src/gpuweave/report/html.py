"""The cluster-run report and its tables (runs, metrics, comparison), and how a report's files reach its folder.

A report is one self-contained ``report.html``: inline CSS, images and figure data as base64 data URIs, no
scripts, no external assets, so it works offline and can be mailed as one file. The page itself (title, summary
paragraph, contents, numbered figures, appendix) is :class:`gpuweave.report.page.Page`.
:func:`render_report` compares one or several cluster run directories and can add extra
:class:`~gpuweave.report.section.DemoSection` blocks; :func:`render_sections_report` renders sections only.
All text from files, configs and sections is HTML-escaped. The HTML pieces (escaping, number formatting, tables,
data URIs) are :mod:`gpuweave.report.markup`.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from gpuweave.files import prepare_output_dir
from gpuweave.report.adaptation import adaptation_section
from gpuweave.report.markup import _is_number, esc, esc_breakable, format_value, html_table
from gpuweave.report.page import Page, appendix_html, winners_sentence
from gpuweave.report.plots import merge_identical, plot_runs
from gpuweave.report.rundir import load_runs
from gpuweave.report.section import DemoSection
from gpuweave.units import metric_text

REPORT_NAME = "report.html"
#: metrics shown first, in this order; any other metric follows in file order
METRIC_ORDER = [
    "jobs",
    "completed",
    "avg_jct_s",
    "p50_jct_s",
    "p99_jct_s",
    "makespan_s",
    "time_to_50pct_s",
    "mean_queueing_delay_s",
    "utilization",
    "useful_fraction",
    "median_placement_slowdown",
    "energy_kwh",
    "cost",
    "restarts",
    "gpu_hours",
    "useful_gpu_hours",
    "events",
    "decisions",
]
#: metrics in the comparison table, and whether higher is better
COMPARED = {
    "completed": True,
    "avg_jct_s": False,
    "p50_jct_s": False,
    "p99_jct_s": False,
    "makespan_s": False,
    "time_to_50pct_s": False,
    "mean_queueing_delay_s": False,
    "utilization": True,
    "useful_fraction": True,
    "median_placement_slowdown": False,
    "energy_kwh": False,
    "cost": False,
    "restarts": False,
}


@contextmanager
def drawn_aside(out_dir: str | Path) -> Iterator[Path]:
    """A scratch directory beside ``out_dir`` to draw a report's files into; they move into ``out_dir`` (made then),
    ``report.html`` last, only when the block finishes. A report that fails halfway (a damaged table met while
    drawing) leaves ``out_dir`` as it was, not half a folder of plots. The files are flat (PNGs, CSVs and the page),
    and a CSV linked instead of inlined keeps its path relative to the page. Not :mod:`gpuweave.staging`: that
    replaces a whole result directory, and a report's ``--out`` may hold other files (``--out .``) that must stay."""
    out_dir = Path(out_dir)
    prepare_output_dir(out_dir, field="out", create=False)  # checked, and its parent made, before any drawing
    scratch = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.report.", dir=out_dir.parent))
    try:
        yield scratch
        out_dir.mkdir(exist_ok=True)
        for item in sorted(scratch.iterdir(), key=lambda p: p.name == REPORT_NAME):
            os.replace(item, out_dir / item.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_report_file(out_dir: Path, text: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / REPORT_NAME
    tmp = out_dir / f".{REPORT_NAME}.{os.getpid()}.tmp"  # ordinary permissions, unlike mkstemp's 0600
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def metric_names(runs) -> list[str]:
    seen = list(dict.fromkeys(k for run in runs for k in run.metrics))
    return [m for m in METRIC_ORDER if m in seen] + [m for m in seen if m not in METRIC_ORDER]


def _runs_table(runs) -> str:
    rows = []
    for run in runs:
        cluster = run.summary.get("cluster") or {}
        rows.append(
            {
                "run": run.label,
                "policy": run.policy,
                "seed": run.seed,
                "cluster": run.config.get("cluster", ""),
                "total GPUs": cluster.get("total_gpus"),
                "GPUs by model": cluster.get("gpus_by_model"),
                "directory": str(run.path),
                "gpuweave": run.summary.get("gpuweave_version", ""),
            }
        )
    return html_table(rows)


def summary_table(runs, metrics: list[str]) -> str:
    out = ['<div class="scroll"><table><thead><tr><th class="text">metric</th>']
    out += [f"<th>{esc_breakable(run.label)}</th>" for run in runs]
    out.append("</tr></thead><tbody>")
    for m in metrics:
        out.append(f'<tr><td class="text name">{esc(m)}</td>')
        out += [f"<td>{esc(format_value(run.metrics.get(m), m))}</td>" for run in runs]
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


def _better(m: str, compared: dict[str, bool]) -> bool | None:
    """Whether higher is better for metric ``m`` (``mean_jct_ms[A]`` as ``mean_jct_ms``), None if not compared."""
    if m.startswith("utilization_"):
        return True
    return compared.get(m.split("[", 1)[0])


def comparison_table(runs, metrics: list[str], compared: dict[str, bool] = COMPARED) -> str:
    """Each compared metric relative to the first run, the best run highlighted."""
    metrics = [m for m in metrics if _better(m, compared) is not None]
    base = runs[0]
    out = [
        f"<p>Each value relative to the first run (<b>{esc(base.label)}</b>); "
        "the best run per metric is highlighted.</p>",
        '<div class="scroll"><table><thead><tr><th class="text">metric</th>',
    ]
    out += [f"<th>{esc_breakable(run.label)}</th>" for run in runs]
    out.append("</tr></thead><tbody>")
    for m in metrics:
        higher = _better(m, compared)
        values = [run.metrics.get(m) for run in runs]
        finite = [v for v in values if _finite(v)]
        best = (max(finite) if higher else min(finite)) if len(set(finite)) > 1 else None
        out.append(f'<tr><td class="text name">{esc(m)} ({"higher" if higher else "lower"} is better)</td>')
        b = values[0]
        for v in values:
            ratio = [f"\u00d7{v / b:.2f}"] if _finite(v) and _finite(b) and b != 0 else []
            text = metric_text(m, v, *ratio) if _is_number(v) else format_value(v, m)
            cls = ' class="best"' if best is not None and _finite(v) and v == best else ""
            out.append(f"<td{cls}>{esc(text)}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def definitions_html(runs) -> str:
    """The metric definitions the runs carry (cluster summaries have them), as a definition list."""
    defs: dict[str, str] = {}
    for run in runs:
        d = run.summary.get("definitions")
        if isinstance(d, dict):
            for k, v in d.items():
                defs.setdefault(str(k), str(v))
    if not defs:
        return ""
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in sorted(defs.items()))
    return f"<dl>{items}</dl>"


def runs_summary(runs, compared: dict[str, bool], what: str) -> str:
    """The report's summary paragraph: what ran, on what, and who won on each metric by how much."""
    names = ", ".join(dict.fromkeys(run.name for run in runs))
    text = f"{len(runs)} run{'s' if len(runs) != 1 else ''} ({names}) {what}."
    if len(runs) > 1:
        text += " " + winners_sentence(runs, compared)
    text += placement_sentence(runs, len(runs) > 1)
    return text.strip()


def placement_sentence(runs, several: bool) -> str:
    """ " In fifo, the median job of several GPUs ran 1.6x longer ...": each run whose placements slowed its jobs
    markedly (:func:`~gpuweave.cluster.metrics.placement_note`), so that a utilisation 'win' is read with it."""
    from gpuweave.cluster.metrics import placement_note  # numpy: only when a report is drawn

    notes = [(run.label, placement_note(run.metrics)) for run in runs]
    return "".join(
        f" In {label}, {note}." if several else f" {note[0].upper()}{note[1:]}." for label, note in notes if note
    )


def _cluster_what(runs) -> str:
    clusters = {str(run.config.get("cluster", "")) for run in runs} - {""}
    gpus = {(run.summary.get("cluster") or {}).get("total_gpus") for run in runs} - {None}
    jobs = {run.metrics.get("jobs") for run in runs} - {None}
    where = f"on {', '.join(sorted(clusters))}" if clusters else "on one cluster"
    if len(gpus) == 1:
        where += f" ({format_value(next(iter(gpus)))} GPUs)"
    if len(jobs) == 1:
        where += f" with {format_value(next(iter(jobs)))} jobs"
    return where


def render_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    title: str = "gpuweave report",
    sections: Sequence[DemoSection] = (),
    labels: Sequence[str] | None = None,
) -> Path:
    """Write ``out_dir/report.html`` (and the plot PNGs and CSVs) for one or several cluster run directories.

    Returns the report path. A run directory without a readable ``summary.json``, ``jobs.csv`` or
    ``timeseries.csv`` raises :class:`InputError` naming the file. ``labels``: the runs' labels, one per
    directory (default: :func:`gpuweave.report.rundir.label_runs`'s).
    """
    out_dir = Path(out_dir)
    runs = load_runs(list(run_dirs), labels)
    with drawn_aside(out_dir) as scratch:
        metrics = metric_names(runs)
        page = Page(title, scratch, summary=runs_summary(runs, COMPARED, _cluster_what(runs)))
        page.add("Runs", [_runs_table(runs)])
        page.add("Metrics", [summary_table(runs, metrics)])
        if len(runs) > 1:
            page.add("Comparison", [comparison_table(runs, metrics)])
        page.add("Plots", figures=plot_runs(runs, scratch))
        parts, figures = adaptation_section(merge_identical(runs), scratch)
        if figures:
            page.add("Adaptive jobs: batch, efficiency and goodput", parts, figures)
        for section in sections:
            page.add_section(section)
        definitions = definitions_html(runs)
        if definitions:
            page.add("Definitions", [definitions])
        page.appendix.append(appendix_html("Runs", [run.path for run in runs]))
        write_report_file(scratch, page.render())
    return out_dir / REPORT_NAME


def render_sections_report(
    sections: Sequence[DemoSection], out_dir: str | Path, title: str = "gpuweave report", summary: str = ""
) -> Path:
    """Write ``out_dir/report.html`` made of sections only (the demo's report). Returns its path.

    The summary paragraph is ``summary`` followed by each section's one-sentence ``summary``."""
    parts = [summary] + [s.summary for s in sections if s.summary]
    page = Page(title, Path(out_dir), summary=" ".join(p.strip() for p in parts if p.strip()))
    for section in sections:
        page.add_section(section)
    return write_report_file(Path(out_dir), page.render())
