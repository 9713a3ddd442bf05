"""Constants and helpers shared by the Hadar reproduction's experiments (paper numbers, spec ranges)."""

from __future__ import annotations

import tomllib
from importlib import resources

TRACE_POLICIES = ("hadar", "hadare", "gavel", "tiresias", "yarn-cs")
SLACK = "hadar[slack-srpt]"  # our named variant, run beside the paper's Hadar in the trace experiment
SIZES = (32, 64, 128, 256, 512, 1024, 2048)
MIXES = ("M-1", "M-3", "M-4", "M-5", "M-8", "M-10", "M-12")
SLOTS = (90.0, 180.0, 360.0)


def paper_numbers() -> dict:
    return tomllib.loads(resources.files("gpuweave.hadar").joinpath("data", "paper_numbers.toml").read_text())


def in_range(x: float, lo: float, hi: float) -> str:
    return f"spec range [{lo}, {hi}]: {'ok' if lo <= x <= hi else 'OUT'}"
