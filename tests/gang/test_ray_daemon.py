"""A Ray node whose raylet is killed mid-run (the machine and its link live on), on a testbed of its own (issue 37).

The raylet takes its workers with it at once, so the gang's ranks on the other node fail their all-reduce (status
1) seconds before GCS declares the node dead. The runtime holds the crash verdict while the task on the victim is
undecided (:meth:`Executor.undecided`), so the attempt ends as a node lost, not a crash counted against
``max_retries``, and the gang runs again on the two other nodes from its last checkpoint.
"""

import pytest

pytest.importorskip("torch")
pytest.importorskip("ray")

from .test_ray_gang import run_and_fail_rank0s_node  # noqa: E402

pytestmark = pytest.mark.ray  # Ray's tests share one xdist worker (tests/conftest.py)


def test_a_killed_raylet_sends_the_gang_back_as_a_lost_node_not_a_crash(ray_bed, tmp_path):
    def kill_raylet(victim: int) -> None:
        assert ray_bed.kill_program(victim, "raylet"), "no raylet on the victim's namespace"

    rows, victim, _ = run_and_fail_rank0s_node(ray_bed, tmp_path, kill_raylet)
    assert [r["outcome"] for r in rows] == ["node-lost", "done"], [(r["outcome"], r["cause"]) for r in rows]
    lost = rows[0]["cause"]
    assert lost.startswith("node w") and lost.endswith(" lost")
    assert lost.split()[1] not in rows[1]["placement"]
