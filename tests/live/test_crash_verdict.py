"""The crash verdict on a gang (gpuweave.live.runtime): which failed worker names the crash, and how long the
verdict waits for the gang's other workers. The runs behind them are tests/gang's."""

from pathlib import Path
from types import SimpleNamespace

from gpuweave.live.attempts import Attempt, Copy
from gpuweave.live.channel import RankFailure, write_failure
from gpuweave.live.runtime import CRASH_SETTLE_S, LiveRuntime, root_cause


def _worker(tmp_path: Path, name: str, code: int | None, exited: float | None = None) -> SimpleNamespace:
    channel = tmp_path / name
    channel.mkdir()
    if exited is not None:
        write_failure(channel, RankFailure(rank=int(name[-1]), local_rank=0, status=code or 0, time=exited))
    return SimpleNamespace(spec=SimpleNamespace(channel=channel), code=code, handle=name)


def test_the_earliest_rank_exit_names_the_crash_not_placement_order(tmp_path):
    peer = _worker(tmp_path, "n0", 1, exited=100.004)  # failed in its all-reduce when rank 3's socket closed
    crashed = _worker(tmp_path, "n1", 3, exited=100.001)
    assert root_cause([peer, crashed]) is crashed


def test_a_worker_killed_without_a_record_comes_first_and_a_silent_exit_last(tmp_path):
    peer = _worker(tmp_path, "n0", 1, exited=100.004)
    killed = _worker(tmp_path, "n1", -9)  # its node went, or an operator's kill -9: its ranks died with it
    silent = _worker(tmp_path, "n2", 1)  # an agent that failed before it had ranks (its rendezvous timed out)
    assert root_cause([peer, silent, killed]) is killed
    assert root_cause([silent, peer]) is peer
    assert root_cause([silent]) is silent


def _attempt(workers: list[SimpleNamespace]) -> Attempt:
    copy = Copy(0, 10, Path("ckpt"), workers)  # type: ignore[arg-type]
    return Attempt(1, "start", ((0, 1), (1, 1)), False, [copy], 0.0, 0.0, 0.0)


def test_the_verdict_waits_for_the_failed_gangs_other_workers_up_to_the_settle_time(tmp_path):
    runtime = SimpleNamespace(executor=SimpleNamespace(undecided=lambda handle: False))
    failed, running = _worker(tmp_path, "n0", 1), _worker(tmp_path, "n1", None)
    attempt = _attempt([failed, running])
    assert LiveRuntime._settling(runtime, attempt, 50.0)  # type: ignore[arg-type]
    assert LiveRuntime._settling(runtime, attempt, 50.0 + CRASH_SETTLE_S / 2)  # type: ignore[arg-type]
    assert not LiveRuntime._settling(runtime, attempt, 50.0 + CRASH_SETTLE_S)  # type: ignore[arg-type]
    running.code = 3
    assert not LiveRuntime._settling(runtime, _attempt([failed, running]), 0.0)  # type: ignore[arg-type]  # all ended


def test_an_undecided_worker_holds_the_verdict_past_the_settle_time(tmp_path):
    lost = _worker(tmp_path, "n1", None)  # its task died with its Ray worker; GCS has not yet said about its node
    runtime = SimpleNamespace(executor=SimpleNamespace(undecided=lambda handle: handle == "n1"))
    attempt = _attempt([_worker(tmp_path, "n0", 1), lost])
    assert LiveRuntime._settling(runtime, attempt, 0.0)  # type: ignore[arg-type]
    assert LiveRuntime._settling(runtime, attempt, 10 * CRASH_SETTLE_S)  # type: ignore[arg-type]
    lost.code = -9  # the executor's verdict: as the node was declared dead, the runtime's lost_nodes takes over
    assert not LiveRuntime._settling(runtime, attempt, 10 * CRASH_SETTLE_S)  # type: ignore[arg-type]
