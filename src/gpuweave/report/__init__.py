"""Plots and the self-contained HTML report of cluster runs."""

from gpuweave.report.html import render_report, render_sections_report
from gpuweave.report.rundir import RunData, load_run, load_runs

__all__ = ["RunData", "load_run", "load_runs", "render_report", "render_sections_report"]
