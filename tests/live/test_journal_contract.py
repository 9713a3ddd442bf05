"""The runtime's journal contract: both journals implement every transition the runtime reports, with its signature;
the runtime calls exactly the contract's methods; the service reads the runtime through its public API."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from gpuweave.live.journal import Journal
from gpuweave.live.journal_contract import RunJournal
from gpuweave.live.runtime import LiveRuntime

SRC = Path(__file__).resolve().parents[2] / "src" / "gpuweave"


def _journals() -> list[type]:
    pytest.importorskip("sqlalchemy")
    from gpuweave.service.ledger import Ledger

    return [Journal, Ledger]


def _shape(function) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("journal", _journals(), ids=lambda cls: cls.__name__)
def test_each_journal_implements_every_transition_with_its_signature(journal):
    assert issubclass(journal, RunJournal)
    assert not journal.__abstractmethods__  # nothing left abstract: it can be built
    for name in RunJournal.__abstractmethods__:
        assert name in vars(journal), f"{journal.__name__} does not define {name}"
        assert _shape(getattr(journal, name)) == _shape(getattr(RunJournal, name)), name


def test_the_runtime_calls_exactly_the_contract():
    tree = ast.parse((SRC / "live" / "runtime.py").read_text())
    called = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "journal"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "self"
    }
    assert called == set(RunJournal.__abstractmethods__)


def test_the_service_reads_the_runtime_only_through_its_public_api():
    """No ``runtime.book`` nor ``runtime.ex`` in the service: it uses ``now``, ``time_scale``, ``usage()``..."""
    for path in sorted((SRC / "service").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"book", "ex"}:
                owner = node.value
                name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
                assert name != "runtime", f"{path.name}:{node.lineno} reads runtime.{node.attr}"


def test_runtime_api_delegates_to_its_book(live_config, tmp_path):
    from gpuweave.live.config import load_live_config
    from gpuweave.live.local import LocalExecutor

    config = load_live_config(live_config(["x,0,1,ResNet-18 (batch size 128),30"], executor={"time_scale": 250}))
    runtime = LiveRuntime(config, LocalExecutor(), tmp_path / "out", config_dir=tmp_path, record_segments=False)
    try:
        assert runtime.time_scale == 250
        runtime.resume_clock(12.5, 100.0, 2.0)
        assert runtime.now == 12.5
        usage = runtime.usage()
        assert (usage.now, usage.energy_j, usage.cost, usage.waiting, usage.running) == (12.5, 100.0, 2.0, 0, 0)
        models = {node.gpu_model for node in runtime.nodes}
        total = {m: sum(node.num_gpus for node in runtime.nodes if node.gpu_model == m) for m in models}
        assert usage.total == total and usage.busy == dict.fromkeys(total, 0)
        assert not runtime.is_running("x")
        job = runtime.jobs["x"]
        runtime.mark_done(job)
        assert job.done and job.js.end == 12.5
    finally:
        runtime.executor.close()
