"""Fuzz every reader through its CLI command: generated malformed inputs must give exit 0 with sane output, or
exit 2 with one ``error:`` line, never a traceback, within 10 s of CPU and 500 MB (issue 13).

Each target (:mod:`tests.fuzz.targets`) damages a valid seed input with :mod:`tests.fuzz.mutate`'s strategies and
runs the command under :data:`~tests.fuzz.targets.FUZZ_LIMITS` (so that whatever is accepted is small work) in
:mod:`tests.cli_harness`, which forks each command from a process that has imported gpuweave and measures it.

``make test`` runs a few examples per target (:data:`QUICK`); ``pytest tests/fuzz --full`` (or
``GPUWEAVE_FUZZ_EXAMPLES=N``) runs many. The examples run per target are counted and printed at the end of the
session (``tests/conftest.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_harness import CliServer, assert_bounded
from tests.fuzz.mutate import document_bytes, table_bytes
from tests.fuzz.targets import FUZZ_LIMITS, TARGETS, Target

QUICK = 6
FULL = 200
COUNTS: dict[str, int] = {}


def examples(config) -> int:
    if os.environ.get("GPUWEAVE_FUZZ_EXAMPLES"):
        return int(os.environ["GPUWEAVE_FUZZ_EXAMPLES"])
    return FULL if config.getoption("--full") else QUICK


@pytest.fixture(scope="module")
def cli():
    with CliServer() as server:
        yield server


def _fuzz(cli, target: Target, n: int) -> None:
    @settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(st.data())
    def one(data):
        with tempfile.TemporaryDirectory(prefix="gpuweave-fuzz-") as tmp:
            cwd = Path(tmp)
            inputs = []
            for name, strategy in target.files.items():
                content = data.draw(strategy, label=name)
                (cwd / name).write_bytes(content)
                inputs.append(content.decode("utf-8", "replace"))
            argv = target.argv(data) if callable(target.argv) else list(target.argv)
            outcome = cli.run(argv, cwd, env={"GPUWEAVE_LIMITS": FUZZ_LIMITS})
            COUNTS[target.name] = COUNTS.get(target.name, 0) + 1
            assert_bounded(outcome, " ".join([*inputs, *argv]))

    one()


def _save_counts(config) -> None:
    """This process's example counts, for the session summary (several xdist workers write one file each)."""
    cache = getattr(config, "cache", None)
    if cache is None:  # -p no:cacheprovider: nothing to sum the counts in
        return
    folder = cache.mkdir("fuzz-counts")
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    (folder / f"{worker}.json").write_text(json.dumps(COUNTS))


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_fuzz_command(cli, target, request):
    """Every generated input meets the contract (``assert_bounded`` inside ``_fuzz``), and examples did run."""
    before = COUNTS.get(target.name, 0)
    try:
        _fuzz(cli, target, examples(request.config))
    finally:
        _save_counts(request.config)
    assert COUNTS.get(target.name, 0) > before, f"no example of {target.name} was run"


# ------------------------------------------------------------------ result directories for `report`
@pytest.fixture(scope="module")
def run_dirs(cli, tmp_path_factory):
    """A cluster run and a kernel run, written by the commands themselves."""
    base = tmp_path_factory.mktemp("runs")
    example = Path(__file__).resolve().parents[2] / "examples" / "kernel" / "two-services.yaml"
    assert cli.run(["cluster", "simulate", "--policy", "fifo", "--jobs", "8", "--out", "cluster"], base).code == 0
    assert cli.run(["kernel", "simulate", str(example), "--out", "kernel"], base).code == 0
    return base


@pytest.mark.parametrize(
    ("kind", "files"),
    [
        ("cluster", ["jobs.csv", "timeseries.csv", "summary.json"]),
        ("kernel", ["tasks.csv", "services.csv", "summary.json", "kernels.csv"]),
    ],
)
def test_fuzz_report(cli, run_dirs, kind, files, request):
    """`gpuweave report` on a result directory with one of its files damaged."""
    name = f"report ({kind} run)"

    @settings(
        max_examples=max(2, examples(request.config) // 2),  # each report draws its plots: seconds per example
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def one(data):
        with tempfile.TemporaryDirectory(prefix="gpuweave-fuzz-") as tmp:
            run = Path(tmp) / "run"
            shutil.copytree(run_dirs / kind, run)
            victim = run / data.draw(st.sampled_from(files), label="file")
            original = victim.read_bytes()
            if victim.suffix == ".csv":
                lines = [line.split(",") for line in original.decode().splitlines()]
                damaged = data.draw(table_bytes(lines[0], lines[1:6]), label="table")
            else:
                damaged = data.draw(document_bytes(json.loads(original)), label="document")
            victim.write_bytes(damaged)
            outcome = cli.run(["report", "run", "--out", "rep"], tmp, env={"GPUWEAVE_LIMITS": FUZZ_LIMITS})
            COUNTS[name] = COUNTS.get(name, 0) + 1
            assert_bounded(outcome, damaged.decode("utf-8", "replace"))

    try:
        one()
    finally:
        _save_counts(request.config)
