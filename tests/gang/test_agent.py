"""The node agent (gpuweave.live.gang): torchrun's environment for every rank, rendezvous, failure and stop handling.

The agents here run on loopback (two "nodes" of one host); crossing namespaces is test_ddp.py's.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpuweave.live import gang
from gpuweave.live.channel import read_failure

DUMP = """
import json, os, signal, sys, time
from pathlib import Path
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR",
        "MASTER_PORT", "GPUWEAVE_CHANNEL", "GPUWEAVE_CHECKPOINT", "GLOO_SOCKET_IFNAME", "TORCHELASTIC_RUN_ID"]
mode = sys.argv[2]
if mode in ("crash", "wait"):  # before the file below says this rank is up
    signal.signal(signal.SIGTERM, lambda *a: (Path(sys.argv[1], f"term{os.environ['RANK']}").touch(), sys.exit(0)))
out = Path(sys.argv[1]) / f"rank{os.environ['RANK']}.json"
Path(out).write_text(json.dumps({k: os.environ.get(k) for k in keys} | {"pid": os.getpid()}))
if mode == "crash" and os.environ["RANK"] == "2":
    while not Path(sys.argv[1], "rank1.json").exists():  # its node's other rank is up (its handler set)
        time.sleep(0.01)
    sys.exit(3)
if mode in ("crash", "wait"):
    time.sleep(60)
"""


def _agents(tmp_path: Path, sizes: list[int], mode: str) -> list[subprocess.Popen]:
    script = tmp_path / "dump.py"
    script.write_text(DUMP)
    procs = []
    for node in range(len(sizes)):
        channel = tmp_path / f"node{node}"
        channel.mkdir()
        env = dict(
            os.environ,
            GPUWEAVE_CHANNEL=str(channel),
            GPUWEAVE_CHECKPOINT=str(tmp_path / "model.ckpt" if node == 0 else channel / "rank.ckpt"),
            **gang.agent_env(sizes, node, tmp_path / "rdv.json", "job-a1-c0"),
        )
        argv = gang.agent_argv([sys.executable, str(script), str(tmp_path), mode])
        procs.append(subprocess.Popen(argv, env=env, start_new_session=True))
    return procs


def _wait_files(tmp_path: Path, pattern: str, count: int, timeout: float = 30.0) -> list[Path]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(tmp_path.glob(pattern))
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{count} x {pattern} not written within {timeout} s: {sorted(tmp_path.iterdir())}")


def test_ranks_get_torchruns_environment_on_an_uneven_gang(tmp_path):
    procs = _agents(tmp_path, [2, 1], "exit")
    assert [p.wait(timeout=30) for p in procs] == [0, 0]
    dumps = {int(f.stem[4:]): json.loads(f.read_text()) for f in tmp_path.glob("rank*.json")}
    assert sorted(dumps) == [0, 1, 2]
    rdv = json.loads((tmp_path / "rdv.json").read_text())
    for rank, env in dumps.items():
        node, local = (0, rank) if rank < 2 else (1, 0)
        assert env["WORLD_SIZE"] == "3"
        assert (env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == (str(local), "2" if node == 0 else "1")
        assert (env["GROUP_RANK"], env["GROUP_WORLD_SIZE"]) == (str(node), "2")
        assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == (rdv["addr"], str(rdv["port"]))
        assert rdv["addr"] == "127.0.0.1"
        assert env["GLOO_SOCKET_IFNAME"] == "lo" and env["TORCHELASTIC_RUN_ID"] == "job-a1-c0"
    # local rank 0 reports through the node's channel, the others through their own; only rank 0 has the job's
    # checkpoint
    assert dumps[0]["GPUWEAVE_CHANNEL"] == str(tmp_path / "node0")
    assert dumps[1]["GPUWEAVE_CHANNEL"] == str(tmp_path / "node0" / "local-1")
    assert dumps[2]["GPUWEAVE_CHANNEL"] == str(tmp_path / "node1")
    assert dumps[0]["GPUWEAVE_CHECKPOINT"] == str(tmp_path / "model.ckpt")
    assert {dumps[r]["GPUWEAVE_CHECKPOINT"] for r in (1, 2)} == {
        str(tmp_path / "node0" / "local-1" / "rank.ckpt"),
        str(tmp_path / "node1" / "rank.ckpt"),
    }


def test_a_failed_rank_ends_its_nodes_other_ranks_and_the_agent_reports_its_status(tmp_path):
    procs = _agents(tmp_path, [1, 2], "crash")  # rank 2 (node 1, local rank 1) exits 3
    codes = [None, None]
    codes[1] = procs[1].wait(timeout=30)
    assert codes[1] == 3
    _wait_files(tmp_path, "term1", 1)  # rank 1, its node's other rank, was asked to stop (SIGTERM)
    failure = read_failure(tmp_path / "node1")  # in the node's channel (local rank 0's), as torchrun's error file
    assert failure is not None and (failure.rank, failure.local_rank, failure.status) == (2, 1, 3)
    # the time is the rank's exit: after its last write, before its agent asked the node's other rank to stop
    # (files' times come from the kernel's coarse clock, up to a tick of 10 ms behind time.time())
    tick = 0.01
    assert (
        (tmp_path / "rank2.json").stat().st_mtime - tick <= failure.time <= (tmp_path / "term1").stat().st_mtime + tick
    )
    _wait_files(tmp_path, "rank0.json", 1)  # node 0's rank is up (its handler set)
    procs[0].send_signal(signal.SIGTERM)  # node 0 is stopped by the runtime, to its agent, as the attempt crashed
    assert procs[0].wait(timeout=30) == 0
    assert (tmp_path / "term0").exists()
    assert read_failure(tmp_path / "node0") is None  # a rank stopped that exits 0 is no failure


def test_sigterm_reaches_every_rank_and_a_killed_agent_leaks_none(tmp_path):
    procs = _agents(tmp_path, [2, 1], "wait")
    dumps = _wait_files(tmp_path, "rank*.json", 3)
    pids = {json.loads(f.read_text())["pid"] for f in dumps}
    procs[0].send_signal(signal.SIGTERM)  # the runtime's stop, to node 0's agent
    assert procs[0].wait(timeout=30) == 0
    assert {f.name for f in tmp_path.glob("term*")} == {"term0", "term1"}
    procs[1].kill()  # node 1's agent dies (kill -9): its rank goes with it
    procs[1].wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def test_rank_env_and_layout_arithmetic():
    assert gang.gang_sizes([(0, 2), (3, 1)]) == [2, 1]
    assert gang.gang_sizes([(4, 0)]) == [1]  # a CPU-only task still runs one process
    env = gang.single_rank_env("j-a1-c0")
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["MASTER_ADDR"]) == ("0", "1", "0", "127.0.0.1")
    assert 0 < int(env["MASTER_PORT"]) < 65536
    assert gang.interface_of("127.0.0.1") == "lo"
    assert gang.interface_of("203.0.113.7") is None  # TEST-NET-3: held by no interface here


FORKED = """
import json, os, sys
from pathlib import Path
Path(sys.argv[1], f"rank{os.environ['RANK']}.json").write_text(json.dumps({"rank": os.environ["RANK"],
    "name": __name__, "argv": sys.argv[1:], "ppid": os.getppid()}))
sys.exit(int(sys.argv[2]))
"""


def test_a_bundled_programs_ranks_are_forked_and_others_exec(tmp_path, monkeypatch):
    """Ranks of `python -m gpuweave.live.workers.X` are forked from the agent, which imported X once; each runs X as
    __main__ with its own environment and argv and exits with X's status; any other program is exec'd."""
    assert gang.forked_module([sys.executable, "-m", "gpuweave.live.workers.torch_train"]) is not None
    assert gang.forked_module([sys.executable, "train.py"]) is None  # a user's script: exec'd, as torchrun does
    assert gang.forked_module([sys.executable, "-m", "mypackage.train"]) is None  # importing it might run it
    (tmp_path / "gw_forked_probe.py").write_text(FORKED)
    monkeypatch.syspath_prepend(str(tmp_path))
    ranks = [gang._ForkedRank("gw_forked_probe", [str(tmp_path), code], {"RANK": str(i)}) for i, code in
             enumerate(("0", "3"))]  # fmt: skip
    assert [r.wait() for r in ranks] == [0, 3]
    seen = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    assert [s["name"] for s in seen] == ["__main__", "__main__"] and seen[1]["argv"] == [str(tmp_path), "3"]
    assert {s["ppid"] for s in seen} == {os.getpid()}  # children of this process: forked, not exec'd elsewhere
