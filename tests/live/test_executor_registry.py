"""A new executor is one module plus one registration: a test-only executor kind, registered here, runs a real live
run through ``gpuweave cluster run --executor``, and the live config, the service config and ``gpuweave serve``
accept its name; an unknown name is one line listing the registered ones, everywhere a name is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuweave.checks import validation_error
from gpuweave.cli import app, run
from gpuweave.errors import InputError
from gpuweave.executors import EXECUTORS, executor_names, register_executor, spoken
from gpuweave.live.config import ExecutorSection, load_live_config
from gpuweave.live.executor import Executor, LaunchSpec
from gpuweave.live.launch import make_executor
from gpuweave.live.local import LocalExecutor

RESNET = "ResNet-18 (batch size 128)"
ROWS = [f"a,0,1,{RESNET},300", "b,0,1,A3C,200", f"c,50,2,{RESNET},300"]
NAME = "relay"


class RelayExecutor(Executor):
    """The whole of a new executor: the live interface, here handing every call on to the local one."""

    name = NAME

    def __init__(self) -> None:
        self.inner = LocalExecutor()
        self.emulated = self.inner.emulated
        self.launches = 0

    def check_cluster(self, nodes: list) -> None:
        self.inner.check_cluster(nodes)

    def launch(self, spec: LaunchSpec) -> object:
        self.launches += 1
        return self.inner.launch(spec)

    def exit_code(self, handle: object) -> int | None:
        return self.inner.exit_code(handle)

    def terminate(self, handle: object) -> None:
        self.inner.terminate(handle)

    def kill(self, handle: object) -> None:
        self.inner.kill(handle)

    def can_launch(self, node: int, gpus: int) -> bool:
        return self.inner.can_launch(node, gpus)

    def pid(self, handle: object) -> int | None:
        return self.inner.pid(handle)

    def close(self) -> None:
        self.inner.close()

    def stats(self) -> dict:
        return {"launches": self.launches}


@pytest.fixture
def relay():
    """The one registration; removed again after the test."""
    built: list[RelayExecutor] = []

    def live(address, config, out: Path) -> RelayExecutor:
        built.append(RelayExecutor())
        return built[-1]

    register_executor(NAME, help="test only: local subprocesses through a relaying executor", live=live)
    yield built
    EXECUTORS.unregister(NAME)
    assert NAME not in EXECUTORS


def test_a_registered_executor_runs_a_live_run_from_the_cli(relay, live_config, tmp_path):
    """`cluster run --executor relay` on a config whose file says `local`: the relay ran every worker, and
    summary.json names it both as the executor and in the config it records (issue 40: it said the file's kind)."""
    config = live_config(ROWS, executor={"kind": "local", "time_scale": 1000})
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["cluster", "run", str(config), "--executor", NAME, "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["summary"]["completed"] == 3
    assert len(relay) == 1 and relay[0].launches >= 3
    meta = json.loads((out / "summary.json").read_text())
    assert meta["executor"] == NAME and meta["config"]["executor"]["kind"] == NAME
    assert meta["executor_stats"] == {"launches": relay[0].launches}


def test_the_configs_accept_a_registered_name(relay, live_config):
    pytest.importorskip("fastapi")  # the service's config module is plain pydantic, but lives with the service
    from gpuweave.service.config import ServiceConfig

    assert load_live_config(live_config(ROWS, executor={"kind": NAME})).executor.kind == NAME
    service = ServiceConfig(db="sqlite://", data_dir=Path("."), executor=NAME)
    assert service.live_config("fifo", {}).executor.kind == NAME
    assert isinstance(make_executor(NAME, None), RelayExecutor)
    assert NAME in executor_names() and NAME not in executor_names(sweeps=True)  # no sweep factory: no sweeps
    with pytest.raises(InputError, match="--address is for the ray executor"):
        make_executor(NAME, "auto")


def test_an_unknown_name_is_one_line_listing_the_registered_ones(live_config, tmp_path, capsys):
    known = f"(known: {', '.join(executor_names())})"
    assert known == "(known: local, ray, slurm)"
    with pytest.raises(InputError) as err:
        load_live_config(live_config(ROWS, executor={"kind": "kubernetes"}))
    assert err.value.field == "executor.kind" and err.value.message == f"unknown executor 'kubernetes' {known}"
    with pytest.raises(Exception) as err:
        ExecutorSection(kind="kubernetes")
    assert validation_error(err.value).one_line() == f"field 'executor.kind': unknown executor 'kubernetes' {known}"
    with pytest.raises(InputError, match=f"field 'executor': unknown executor 'kubernetes' \\{known[:-1]}\\)"):
        make_executor("kubernetes", None)
    code = run(["cluster", "run", str(live_config(ROWS)), "--executor", "kubernetes", "--out", str(tmp_path / "o")])
    assert code == 2
    assert capsys.readouterr().err == f"error: field 'executor': unknown executor 'kubernetes' {known}\n"


def test_the_cli_help_lists_the_registry():
    assert spoken(executor_names()) == "local, ray or slurm"
    assert spoken(executor_names(sweeps=True)) == "local or ray"
    assert spoken(executor_names(address=True)) == "ray"
