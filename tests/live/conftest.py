import shutil
from pathlib import Path

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "live"


@pytest.fixture
def live_config(tmp_path):
    """Write a live run config beside a copy of the example cluster and a small trace; returns a writer."""
    shutil.copy(EXAMPLES / "cluster.yaml", tmp_path / "cluster.yaml")

    def write(rows: list[str], **overrides) -> Path:
        trace = tmp_path / "trace.csv"
        header = "job_id,arrival,num_gpus,job_type,duration"
        if any(r.count(",") > header.count(",") for r in rows):
            header += ",program"
            rows = [r if r.count(",") == header.count(",") else r + "," for r in rows]
        trace.write_text("\n".join([header, *rows]) + "\n")
        executor = {"program": "synthetic", "time_scale": 400, "checkpoint_every": 0.5, "poll_interval": 0.03}
        executor.update(overrides.pop("executor", {}))
        data = {
            "policy": "fifo",
            "cluster": "cluster.yaml",
            "trace": "trace.csv",
            "restart_delay": 10,
            "executor": executor,
            **overrides,
        }
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    return write
