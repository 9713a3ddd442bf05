"""A report page that reads like a paper's evaluation: title, a one-paragraph summary, contents, sections with
numbered figures (caption, link to the CSV drawn), and an appendix with every run's config and code fingerprint.

:class:`Page` collects sections in order, numbers figures as they are added (``Figure 1.``, ``Figure 2.``, ...)
and renders one self-contained HTML document whose contents links all point at ids on the page.
:func:`winners_sentence` writes the "who won on each metric by how much" sentence from runs' metrics.
Complexity: O(size of the page).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from gpuweave import __version__
from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.report.markup import _CSS, _paragraphs, csv_href, esc, format_value, html_table, image_data_uri
from gpuweave.report.section import DemoSection, Figure
from gpuweave.results import LEGACY_FINGERPRINT_KEY
from gpuweave.units import duration_text, time_metric_unit

#: how a metric is named in a sentence
METRIC_WORDS = {
    "avg_jct_s": "average JCT",
    "p50_jct_s": "median JCT",
    "p99_jct_s": "p99 JCT",
    "makespan_s": "makespan",
    "time_to_50pct_s": "time to finish half the jobs",
    "mean_queueing_delay_s": "mean queueing delay",
    "utilization": "GPU utilisation",
    "useful_fraction": "useful work per GPU-hour held",
    "median_placement_slowdown": "median slowdown from placement",
    "energy_kwh": "energy",
    "cost": "cost",
    "restarts": "restarts",
    "completed": "completed jobs",
    "ratio": "makespan / lower bound",
    "reconfigurations": "reconfigurations",
    "relative_cost": "relative cost",
    "packing_ratio": "packing ratio",
    "relative_response_time": "relative response time",
    "cost_s": "total time",
    "response_time_s": "mean response time",
    "mean_jct_ms": "mean task JCT",
    "cv_jct": "JCT variation (CV)",
    "busy_fraction": "busy fraction",
    "end_time_ms": "simulated time",
}


def slug(text: str) -> str:
    """An HTML id from a title: lower case, words joined by hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "section"


def first_sentence(text: str, limit: int = 90) -> str:
    sentence = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0].rstrip(".")
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rsplit(" ", 1)[0] + "\u2026"


def sentence_value(metric: str, value: float) -> str:
    """A metric's value as it reads in a sentence: a time in the unit its magnitude calls for (as the tables and
    the plots' axes choose it, :func:`gpuweave.units.duration_text`), percent for utilisation."""
    unit = time_metric_unit(metric)
    if unit is not None:
        return duration_text(value * unit.seconds)
    if metric in ("utilization", "busy_fraction", "useful_fraction"):
        return f"{value:.1%}"
    if metric == "median_placement_slowdown":
        return f"{value:.2f}x"
    if metric == "energy_kwh":
        return f"{value:,.0f} kWh"
    return format_value(value)


def winners_sentence(runs: Sequence[Any], compared: dict[str, bool], metrics: Sequence[str] | None = None) -> str:
    """ "On average JCT hadar won (20.6 h, 3.8% better than gavel's 21.42 h); ..." over the runs' metrics.

    Runs with the same value share the win ("edf = priority"). Only metrics where the runs differ are named."""
    parts = []
    for metric in metrics or list(compared):
        higher = compared.get(metric.split("[", 1)[0])
        values: dict[float, list[str]] = {}
        for run in runs:
            v = run.metrics.get(metric)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                values.setdefault(float(v), []).append(run.label)
        if higher is None or len(values) < 2:
            continue
        ranked = sorted(values, reverse=bool(higher))
        best, second = ranked[0], ranked[1]
        margin = abs(best - second) / abs(second) if second else math.inf
        by = f"{margin:.1%} {'higher' if higher else 'lower'} than" if math.isfinite(margin) else "ahead of"
        name = METRIC_WORDS.get(metric.split("[", 1)[0], metric) + (
            f" of {metric.split('[', 1)[1].rstrip(']')}" if "[" in metric else ""
        )
        of_it = _qualifier(metric, runs, values)
        parts.append(
            f"on {name}, {' = '.join(values[best])} ({sentence_value(metric, best)}{of_it(best)}, {by} "
            f"{' = '.join(values[second])} at {sentence_value(metric, second)}{of_it(second)})"
        )
    return ("Best " + "; ".join(parts) + ".") if parts else ""


#: a metric never named best without another beside it: busy GPUs are not work done (issue #40)
QUALIFIED_BY = {"utilization": ("useful_fraction", "useful")}


def _qualifier(metric: str, runs: Sequence[Any], values: dict[float, list[str]]) -> Any:
    """For a metric of :data:`QUALIFIED_BY`: value -> ", 40.0% of it useful" (the runs that share that value's
    qualifying metric, "/"-joined when they differ); "" for other metrics or runs without it."""
    qualified = QUALIFIED_BY.get(metric)
    if qualified is None:
        return lambda value: ""
    other, word = qualified
    by_label = {run.label: run.metrics.get(other) for run in runs}

    def text(value: float) -> str:
        found = [by_label.get(label) for label in values[value]]
        shown = list(
            dict.fromkeys(
                sentence_value(other, float(v))
                for v in found
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            )
        )
        return f", {'/'.join(shown)} of it {word}" if shown else ""

    return text


@dataclass
class Page:
    """A report being assembled; figures are numbered in the order sections add them."""

    title: str
    out_dir: Path
    summary: str = ""
    sections: list[tuple[str, str, str, list[tuple[str, str]]]] = field(default_factory=list)
    appendix: list[str] = field(default_factory=list)
    _figures: int = 0
    _ids: set[str] = field(default_factory=set)

    def _id(self, base: str) -> str:
        sid, n = base, 2
        while sid in self._ids:
            sid, n = f"{base}-{n}", n + 1
        self._ids.add(sid)
        return sid

    def figure(self, fig: Figure | Path) -> tuple[str, str, str]:
        """(html, id, contents entry) of the next numbered figure."""
        if not isinstance(fig, Figure):  # a bare image from before captions: its file name, as a sentence
            fig = Figure(Path(fig), Path(fig).stem.replace("_", " ").capitalize() + ".")
        self._figures += 1
        fid = self._id(f"fig-{self._figures}")
        link = ""
        if fig.csv is not None and Path(fig.csv).is_file():
            name = esc(Path(fig.csv).name)
            link = f' <a href="{esc(csv_href(Path(fig.csv), self.out_dir))}" download="{name}">Data: {name}</a>'
        label = f"Figure {self._figures}."
        body = (
            f'<figure id="{fid}"><img alt="{esc(label + " " + first_sentence(fig.caption))}" '
            f'src="{image_data_uri(fig.path)}"><figcaption><b>{label}</b> {esc(fig.caption)}{link}</figcaption>'
            "</figure>"
        )
        return body, fid, f"{label} {first_sentence(fig.caption)}"

    def add(self, title: str, parts: Sequence[str] = (), figures: Sequence[Figure | Path] = (), after=()) -> str:
        """A section: ``parts`` (HTML), then the numbered figures, then ``after`` (HTML). Returns its id."""
        sid = self._id(slug(title))
        html, entries = list(parts), []
        for fig in figures:
            body, fid, entry = self.figure(fig)
            html.append(body)
            entries.append((fid, entry))
        html += list(after)
        self.sections.append((sid, title, "".join(html), entries))
        return sid

    def add_section(self, section: DemoSection) -> str:
        """A :class:`DemoSection`: text, table, figures; its runs and config go in the appendix."""
        parts = [_paragraphs(section.text)] if section.text else []
        if section.table:
            if not all(isinstance(row, dict) for row in section.table):
                raise InputError("section table must be a list of dicts", field=f"{section.title}.table")
            parts.append(html_table(section.table))
        sid = self.add(section.title, parts, [*section.figures, *section.images])
        if section.runs or section.config:
            self.appendix.append(appendix_html(section.title, section.runs, section.config))
        return sid

    def render(self) -> str:
        toc = ['<nav class="toc" id="contents"><h2>Contents</h2><ol>']
        for sid, title, _, entries in self.sections:
            sub = "".join(f'<li><a href="#{fid}">{esc(text)}</a></li>' for fid, text in entries)
            toc.append(f'<li><a href="#{sid}">{esc(title)}</a>' + (f"<ol>{sub}</ol>" if sub else "") + "</li>")
        if self.appendix:
            toc.append('<li><a href="#appendix">Appendix: run configurations and code fingerprints</a></li>')
        toc.append("</ol></nav>")
        body = [
            f"<header><h1>{esc(self.title)}</h1>"
            f'<p class="meta">generated by gpuweave {esc(__version__)}; one self-contained file, works offline</p>'
            "</header>"
        ]
        if self.summary:
            body.append(f'<section id="summary"><h2>Summary</h2><p class="summary">{esc(self.summary)}</p></section>')
        body.append("".join(toc))
        body += [f'<section id="{sid}"><h2>{esc(title)}</h2>{html}</section>' for sid, title, html, _ in self.sections]
        if self.appendix:
            body.append(
                '<section id="appendix"><h2>Appendix: run configurations and code fingerprints</h2>'
                "<p>What produced every number above: each run's configuration and the fingerprint of the code "
                "and bundled data that ran it (equal fingerprints mean the same code).</p>"
                + "".join(self.appendix)
                + "</section>"
            )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(self.title)}</title><style>{_CSS}</style></head><body>" + "".join(body) + "</body></html>\n"
        )


def appendix_html(title: str, runs: Sequence[Path], config: dict[str, Any] | None = None) -> str:
    """One appendix block: a table of the result directories (seed, version, fingerprint) and their configs."""
    out = [f"<h3>{esc(title)}</h3>"]
    if config:
        text = json.dumps(config, indent=2, sort_keys=True, default=str)
        out.append(f"<details><summary>configuration</summary><pre>{esc(text)}</pre></details>")
    rows, configs = [], []
    for run in runs:
        path = Path(run)
        try:
            summary = load_json(path / "summary.json", what="summary file")
        except InputError:
            continue
        if not isinstance(summary, dict):
            continue
        fingerprint = summary.get("fingerprint") or summary.get(LEGACY_FINGERPRINT_KEY) or ""
        version = summary.get("version") or summary.get("gpuweave_version") or ""
        rows.append({"run": path.name, "seed": summary.get("seed"), "gpuweave": version, "fingerprint": fingerprint})
        text = json.dumps(summary.get("config") or {}, indent=2, sort_keys=True, default=str)
        configs.append(f"<details><summary>{esc(path.name)}: configuration</summary><pre>{esc(text)}</pre></details>")
    if rows:
        out.append(html_table(rows))
    return "".join(out + configs)
