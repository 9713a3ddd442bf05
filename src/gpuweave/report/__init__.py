"""Plots and the self-contained HTML report of result directories of every grain (house style: gpuweave.plotting)."""

from gpuweave.report.html import render_report, render_sections_report
from gpuweave.report.rundir import RunData, load_run, load_runs
from gpuweave.report.section import DemoSection, Figure

__all__ = ["DemoSection", "Figure", "RunData", "load_run", "load_runs", "render_report", "render_sections_report"]
