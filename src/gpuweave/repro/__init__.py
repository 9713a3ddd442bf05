"""Paper reproductions: one module per paper, each registered by name (``gpuweave repro NAME``)."""

from gpuweave.repro.registry import (  # noqa: F401
    ComparisonRow,
    ReproContext,
    Reproduction,
    all_reproductions,
    get_reproduction,
    register_reproduction,
    run_reproduction,
)
