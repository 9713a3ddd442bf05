"""Test-suite settings shared by every area.

Under CI (the ``CI`` environment variable is set, as `.ci/run` runs) hypothesis is derandomized, so a CI run
is reproducible; locally every run draws fresh examples, which is how the property tests keep finding bugs.
"""

import json
import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_collection_modifyitems(config, items):
    """Every test that starts Ray runs in one xdist worker (``--dist loadgroup``): two Ray clusters started at once
    on this 2-core machine can starve each other until a test hangs. Likewise every test on the session's Slurm
    (tests/slurm/test_slurm_*), so one Slurm is started, not one per worker.

    Found with pytest 9.2 and pytest-xdist 3.8: the groups are ignored (xdist tags a group by rewriting
    ``item._nodeid``, which pytest 9 no longer reads), so tests of a group can land on both workers. Each worker
    then starts its own Slurm, on its own ports, which works; Ray tests have the same exposure. The dev extra
    therefore pins pytest below 9 (checked: a group's tests then all run on one worker)."""
    for item in items:
        if item.get_closest_marker("ray") or "tests/live/test_ray" in item.nodeid:
            item.add_marker(pytest.mark.xdist_group("ray"))
        elif "tests/slurm/test_slurm_" in item.nodeid:
            item.add_marker(pytest.mark.xdist_group("slurm"))


def pytest_addoption(parser):
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="long fuzz run: many examples per fuzz target (tests/fuzz; GPUWEAVE_FUZZ_EXAMPLES=N sets the count)",
    )


# ------------------------------------------------------------------ the fuzz suite's example counts (tests/fuzz)
def _folder(config):
    """Where each process of the session writes its fuzz example counts (None with ``-p no:cacheprovider``: then
    the counts are not summed)."""
    cache = getattr(config, "cache", None)
    return cache.mkdir("fuzz-counts") if cache is not None else None


def pytest_sessionstart(session):
    folder = _folder(session.config)
    if folder is not None and not hasattr(session.config, "workerinput"):  # the controller starts afresh
        for stale in folder.glob("*.json"):
            stale.unlink()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):
        return
    counts: dict[str, int] = {}
    folder = _folder(config)
    for part in folder.glob("*.json") if folder is not None else ():
        for name, n in json.loads(part.read_text()).items():
            counts[name] = counts.get(name, 0) + n
    if counts:
        terminalreporter.section("fuzz examples per target")
        for name, n in sorted(counts.items()):
            terminalreporter.write_line(f"{n:6d}  {name}")
        terminalreporter.write_line(f"{sum(counts.values()):6d}  in all")
