"""Live runs on Ray, on the session's shared ``ray_cluster`` (tests/live/conftest.py)."""

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from gpuweave.cluster.policies import policy_names  # noqa: E402
from gpuweave.errors import InputError  # noqa: E402
from gpuweave.live.config import load_live_config  # noqa: E402
from gpuweave.live.launch import run_live  # noqa: E402
from gpuweave.live.ray_executor import RayExecutor  # noqa: E402
from gpuweave.live.results import write_live_run  # noqa: E402
from gpuweave.live.runtime import LiveRuntime  # noqa: E402
from tests.sockets import is_loopback, listening_sockets  # noqa: E402

RESNET = "ResNet-18 (batch size 128)"
TRACE = [f"a,0,1,{RESNET},300", f"b,0,2,{RESNET},400", "c,40,1,A3C,200", f"d,80,1,{RESNET},200"]
# A round of 0.4 wall seconds: every policy gets a few decisions, HadarE a few fork rounds, each run ~1 s.
FAST = {"round_length": 1600, "executor": {"time_scale": 4000}}


def _run(config, tmp_path, name):
    executor = RayExecutor(None)
    runtime = LiveRuntime(load_live_config(config), executor, tmp_path / name, config_dir=config.parent)
    runtime.run()
    return write_live_run(runtime, tmp_path / name)


@pytest.mark.parametrize("policy", policy_names())
def test_every_policy_finishes_synthetic_jobs_on_ray(ray_cluster, live_config, tmp_path, policy):
    config = live_config(TRACE, policy=policy, **FAST)
    summary = _run(config, tmp_path, policy)
    assert summary["completed"] == 4
    assert json.loads((tmp_path / policy / "summary.json").read_text())["executor"] == "ray"


def test_cluster_lacking_a_gpu_type_is_an_input_error(ray_cluster, live_config, tmp_path):
    (tmp_path / "cluster.yaml").write_text("name: p100\nnodes:\n  - {gpu: P100, gpus_per_node: 1}\n")
    config = live_config([f"a,0,1,{RESNET},100"])
    with pytest.raises(InputError, match="lacks GPU type P100"):
        _run(config, tmp_path, "t4")


def _cli(config, out, *extra) -> list[str]:
    return [sys.executable, "-m", "gpuweave.cli", "cluster", "run", str(config), "--executor", "ray", "--out", str(out)]


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))


def test_unreachable_address_is_one_line_exit_2_at_once(live_config, tmp_path):
    """In a subprocess: this process already holds the session's Ray connection."""
    config = live_config(TRACE[:1])
    argv = [*_cli(config, tmp_path / "out"), "--address", "127.0.0.1:1"]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=60)
    assert time.monotonic() - started < 20
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "cannot reach the Ray cluster at 127.0.0.1:1" in proc.stderr


def test_local_ray_listens_on_loopback_only(live_config, tmp_path):
    """A run that starts its own Ray (no --address, so in a subprocess): every listening TCP socket of the run's
    process tree, sampled while it runs, is on 127.0.0.1 or ::1 (other processes on this machine are ignored)."""
    config = live_config([f"a,0,1,{RESNET},600", f"b,0,2,{RESNET},600"], executor={"time_scale": 2000})
    proc = subprocess.Popen(_cli(config, tmp_path / "out"), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: dict[str, str] = {}
    while proc.poll() is None:
        seen.update(listening_sockets(proc.pid))
        time.sleep(0.3)
    out, err = proc.communicate()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert any("gcs_server" in owner for owner in seen.values()), seen  # the sampling saw Ray up
    exposed = {address: owner for address, owner in seen.items() if not is_loopback(address)}
    assert not exposed
    meta = json.loads((tmp_path / "out" / "summary.json").read_text())  # the file says local, --executor ray ran:
    assert meta["executor"] == "ray" and meta["config"]["executor"]["kind"] == "ray"  # the config records it


def test_lost_ray_node_sends_its_jobs_back_from_their_checkpoints(ray_cluster, live_config, tmp_path):
    """A node this test adds (the only P100 one) disappears while two jobs run on it: they resume elsewhere from
    their last checkpoint, no crash is counted, and the run completes on the remaining node."""
    extra = ray_cluster.add_node(num_cpus=1, num_gpus=2, resources={"gpu_type:P100": 2})
    ray_cluster.wait_for_nodes()
    (tmp_path / "cluster.yaml").write_text(
        "name: lose-one\nnodes:\n  - {gpu: V100, gpus_per_node: 2, name_prefix: v100-}\n"
        "  - {gpu: P100, gpus_per_node: 2, name_prefix: p100-}\n"
    )
    rows = [f"j{i},0,1,{RESNET},{3000 + 100 * i}" for i in range(4)]
    # About 2 s of wall per job: the node goes once every job has checkpointed (0.2 s in), and a loaded machine
    # (CI's two test workers) must not let a job on it finish before its raylet is gone (it did at 1 s per job).
    config = live_config(rows, executor={"time_scale": 1500, "checkpoint_every": 0.2})
    out = tmp_path / "out"
    remover = threading.Thread(target=_remove_when_checkpointed, args=(ray_cluster, extra, out), daemon=True)
    remover.start()
    summary = _run(config, tmp_path, "out")
    remover.join(timeout=5)
    assert summary["completed"] == 4
    live = list(csv.DictReader(open(out / "live.csv")))
    lost = [r for r in live if r["outcome"] == "node-lost"]
    assert {r["placement"].split(":")[0] for r in lost} == {"p100-0"} and len(lost) == 2
    records = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert all(r["crashes"] == 0 for r in records if r["ev"] == "end")
    for r in lost:  # the next attempt of a job sent back resumes from what its checkpoint held
        again = next(x for x in records if x["ev"] == "launch" and x["job"] == r["job_id"] and x["attempt"] > 1)
        assert again["committed"] > 0
        assert next(x for x in live if x["job_id"] == r["job_id"] and int(x["attempt"]) > 1)["placement"].startswith(
            "v100-0"
        )


def _remove_when_checkpointed(cluster, node, out) -> None:
    """Remove ``node`` once two attempts on it (the P100 node: cluster node index 1) have saved a checkpoint."""
    deadline = time.time() + 30
    while time.time() < deadline:
        saved = 0
        for status in out.glob("channels/*/*/status.json"):
            try:
                saved += json.loads(status.read_text())["checkpoint_steps"] > 0
            except (ValueError, KeyError):
                continue
        if saved >= 4:
            break
        time.sleep(0.05)
    cluster.remove_node(node)


@pytest.mark.parametrize("program, message", [("missing.py", "does not exist"), ("run.yaml", "not executable")])
def test_bad_program_is_an_input_error_before_ray_is_touched(live_config, tmp_path, program, message):
    config = live_config(TRACE, executor={"program": program})
    with pytest.raises(InputError, match=message):
        run_live(config, "ray", None, tmp_path / "out")
    assert not (tmp_path / "out" / "journal.jsonl").exists()


def test_crashing_worker_on_ray_is_retried_then_its_job_fails_with_the_reason(ray_cluster, live_config, tmp_path):
    rows = [f"ok,0,1,{RESNET},400,synthetic --crash-attempts 1", f"bad,0,1,{RESNET},400,synthetic --crash-attempts 9"]
    config = live_config(rows, executor={"max_retries": 1, "time_scale": 2000})
    summary = _run(config, tmp_path, "out")
    assert summary["completed"] == 1
    reason = json.loads((tmp_path / "out" / "summary.json").read_text())["failed_jobs"]["bad"]
    assert "exited with status 3" in reason and "injected crash" in reason
    kinds = [r["kind"] for r in csv.DictReader(open(tmp_path / "out" / "live.csv")) if r["job_id"] == "ok"]
    assert kinds == ["start", "retry"]


# A rank of the gang test below: it writes its torchrun variables and the process that started its agent (the
# rank's actor), then sleeps; rank 3 fails instead.
_RANK = (
    "import json, os, sys, time; from pathlib import Path\n"
    "env = {k: os.environ[k] for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'GROUP_RANK')}\n"
    "env['actor'] = os.popen(f'ps -o ppid= -p {os.getppid()}').read().strip(); env['pid'] = os.getpid()\n"
    "Path(os.environ['OUT'], f\"rank-{env['RANK']}.json\").write_text(json.dumps(env))\n"
    "sys.exit(3) if env['RANK'] == '3' else time.sleep(60)\n"
)


def test_a_gang_on_ray_is_one_actor_per_rank_and_a_failed_rank_ends_its_node(ray_cluster, tmp_path):
    """issue 37: a 4-rank gang over two Ray nodes (2 + 2) runs as four actors, each starting one rank with
    torchrun's variables; rank 3's failure ends its node's other rank (the node's worker takes its status and its
    failure record names rank 3), and a kill ends the other node's ranks with their actors."""
    from gpuweave.hardware.cluster_spec import Node
    from gpuweave.live.channel import read_failure
    from gpuweave.live.executor import LaunchSpec
    from gpuweave.live.gang import agent_argv, agent_env

    nodes = [Node(i, f"v{i}", "V100", 2, 0.1, 1.0) for i in range(2)]
    executor = RayExecutor(None)
    executor.check_cluster(nodes)
    argv = tuple(agent_argv([sys.executable, "-c", _RANK]))
    specs = []
    for node in nodes:
        channel = tmp_path / f"r{node.index}"
        env = {"GPUWEAVE_CHANNEL": str(channel), "OUT": str(tmp_path)}
        env.update(agent_env([2, 2], node.index, tmp_path / "rendezvous.json", "gang"))
        specs.append(LaunchSpec("g", 1, 0, node.index, node.index, node.name, "V100", 2, argv, channel, env))
    workers = executor.launch_gang(specs)
    assert [len(w.actors) for w in workers] == [2, 2]
    deadline = time.monotonic() + 60
    while executor.exit_code(workers[1]) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert executor.exit_code(workers[1]) == 3 and not workers[1].actors  # its actors (rank 2's too) are gone
    failure = read_failure(specs[1].channel)
    assert failure is not None and (failure.rank, failure.local_rank, failure.status) == (3, 1, 3)
    ranks = {}
    while len(ranks) < 4 and time.monotonic() < deadline:
        ranks = {p.name: json.loads(p.read_text()) for p in tmp_path.glob("rank-*.json")}
        time.sleep(0.1)
    assert sorted(ranks) == [f"rank-{i}.json" for i in range(4)]
    for i in range(4):
        env = ranks[f"rank-{i}.json"]
        assert (env["RANK"], env["LOCAL_RANK"], env["GROUP_RANK"]) == (str(i), str(i % 2), str(i // 2))
        assert (env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == ("4", "2")
    assert len({env["actor"] for env in ranks.values()}) == 4  # each rank's agent started by an actor of its own
    assert executor.exit_code(workers[0]) is None  # ranks 0 and 1 sleep on: the runtime would stop them
    executor.kill(workers[0])
    assert executor.exit_code(workers[0]) == -9 and not workers[0].actors
    for ref in [*workers[0].refs, workers[1].refs[0]]:  # the sleeping ranks' actors were killed, not ended
        # Ray's kill may end an actor's child processes before the actor itself, so the run can still answer with
        # its rank's status, which is then a SIGKILL's; either way the rank did not run on
        try:
            assert ray.get(ref, timeout=10) == -signal.SIGKILL
        except ray.exceptions.RayActorError:
            pass
    for i in (0, 1, 2):  # and the sleeping ranks' processes are gone with their actors
        pid = ranks[f"rank-{i}.json"]["pid"]
        while _running(pid) and time.monotonic() < deadline + 10:
            time.sleep(0.1)
        assert not _running(pid)


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie has ended: only its parent's reaping is left)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
