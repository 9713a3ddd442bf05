"""A real Slurm for the tests that need one, and config writers for live runs on it.

The session's ``slurm`` fixture starts :mod:`gpuweave.live.slurm_sandbox` (munged, MariaDB + slurmdbd, slurmctld
and slurmd with 4 V100 + 2 K80 as typed GPU GRES on node ``gw0``, all on loopback) once per test process and stops
it at the end; tests/conftest.py puts every module named ``test_slurm_*`` in one xdist group (which pytest 9.2 with
xdist 3.8 ignores: then each worker has its own Slurm, on its own ports). Without
root or Debian's packages the tests that use it are skipped with the reason; under CI (``.ci/run`` installs the
packages and runs as root) a missing Slurm fails instead, so a broken install cannot pass as a skip.
"""

import os
import shutil
from pathlib import Path

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    from gpuweave.live.slurm_sandbox import SlurmSandbox, missing_requirements

    reason = missing_requirements()
    if reason:
        if os.environ.get("CI") and os.name == "posix" and os.geteuid() == 0:
            pytest.fail(f"CI runs as root and .ci/run installs Slurm, yet: {reason}")
        pytest.skip(reason)
    box = SlurmSandbox(tmp_path_factory.mktemp("slurm")).start()
    saved = os.environ.get("SLURM_CONF")
    os.environ.update(box.env)
    try:
        yield box
    finally:
        box.stop()
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved


@pytest.fixture
def slurm_config(tmp_path):
    """Write a live run config for the slurm executor beside a small trace; returns a writer.

    ``cluster="live"`` uses examples/live/cluster.yaml (v100-0, v100-1, k80-0 of 2 GPUs: placed on gw0 by GPU
    type); ``cluster="imported"`` the sandbox's own nodes as ``gpuweave cluster import-slurm`` names them."""
    shutil.copy(EXAMPLES / "live" / "cluster.yaml", tmp_path / "live-cluster.yaml")
    (tmp_path / "imported-cluster.yaml").write_text(
        "name: gwsandbox\nnodes:\n  - {gpu: V100, gpus_per_node: 4, names: [gw0-v100]}\n"
        "  - {gpu: K80, gpus_per_node: 2, names: [gw0-k80]}\n"
    )

    def write(rows: list[str], *, cluster: str = "live", **overrides) -> Path:
        columns = ["job_id", "arrival", "num_gpus", "job_type", "duration", "program", "sbatch_args"]
        trace = tmp_path / "trace.csv"
        padded = [r + "," * (len(columns) - 1 - r.count(",")) for r in rows]
        trace.write_text("\n".join([",".join(columns), *padded]) + "\n")
        executor = {
            "kind": "slurm",
            "program": "synthetic",
            "time_scale": 200,
            "checkpoint_every": 0.5,
            "poll_interval": 0.03,
            "max_retries": 1,
            "slurm": {"poll_interval": 0.1, "gpus": "emulated"},  # the sandbox's GPUs are fake devices
        }
        executor.update(overrides.pop("executor", {}))
        data = {
            "policy": "fifo",
            "cluster": f"{cluster}-cluster.yaml",
            "trace": "trace.csv",
            "restart_delay": 10,
            "executor": executor,
            **overrides,
        }
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    return write
