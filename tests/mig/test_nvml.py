"""The NVML executor (Algorithm 3) against a fake NVML; refusals without pynvml, MIG or permission."""

from __future__ import annotations

import sys

import pytest

from gpuweave.errors import InputError
from gpuweave.mig.far import far
from gpuweave.mig.fixpart import fixpart
from gpuweave.mig.nvml_exec import NvmlUnavailable, execute_schedule, load_nvml
from gpuweave.mig.problem import make_problem

from .fake_nvml import FakeNvml

SCALE = 0.01  # fake reconfiguration = Table 1 time x SCALE; task commands sleep planned time x SCALE


def scaled_batch():
    names = ["big", "mid", "a", "b", "c", "d"]
    times = [
        [30, 16, 11, 8, 5],
        [12, 7, 5, 4, 3.5],
        [3, 2.5, 2.2, 2.1, 2],
        [3, 2.6, 2.4, 2.2, 2.1],
        [2.5, 2.0, 1.8, 1.7, 1.6],
        [2, 1.6, 1.5, 1.4, 1.4],
    ]
    p = make_problem(names, times, "A100")
    r = far(p)
    py = sys.executable
    cmds = {t.task: f"{py} -c 'import time; time.sleep({(t.end - t.start) * SCALE})'" for t in r.schedule.tasks}
    return p, r.schedule, cmds


def test_runs_far_schedule_on_fake_gpu():
    p, sched, cmds = scaled_batch()
    fake = FakeNvml(scale=SCALE, transient_in_use=1)
    res = execute_schedule(sched, fake, gpu_index=0, commands=cmds)
    assert len(res.timings) == p.n and all(t.returncode == 0 for t in res.timings)
    creates = [e for e in fake.log if e[0] == "create"]
    assert len(creates) == sum(1 for o in sched.operations if o.op == "create")
    # children are created only after their parent is destroyed (Algorithm 3 order)
    first = fake.log[0]
    assert first[0] == "create" and first[1] == max(t.size for t in sched.tasks)
    assert not fake.devices[0].gis  # everything destroyed (plan + cleanup)
    # measured order follows the plan: per instance, tasks run in planned order
    by_inst = {}
    for t in sorted(res.timings, key=lambda t: t.planned_start):
        by_inst.setdefault((t.size, t.start_slice), []).append(t)
    for ts in by_inst.values():
        assert all(a.measured_end <= b.measured_start + 1e-6 for a, b in zip(ts, ts[1:]))
    assert res.measured_makespan > 0


def test_env_carries_mig_uuid(tmp_path):
    p = make_problem(["x"], [[1, 1, 1, 1, 1]], "A100")
    sched = fixpart(p, "7")
    out = tmp_path / "env.txt"
    res = execute_schedule(sched, FakeNvml(scale=0.0), commands={"x": f"echo $CUDA_VISIBLE_DEVICES > {out}"})
    assert out.read_text().strip().startswith("MIG-fake-")
    assert res.timings[0].returncode == 0


def test_refusals():
    p, sched, cmds = scaled_batch()
    with pytest.raises(NvmlUnavailable, match="MIG mode is disabled"):
        execute_schedule(sched, FakeNvml(mig=False), commands=cmds)
    with pytest.raises(NvmlUnavailable, match="no permission"):
        execute_schedule(sched, FakeNvml(permission=False, scale=0.0), commands=cmds)
    with pytest.raises(NvmlUnavailable, match="no GPU with index 3"):
        execute_schedule(sched, FakeNvml(), gpu_index=3, commands=cmds)
    with pytest.raises(InputError, match="no command"):
        execute_schedule(sched, FakeNvml(), commands={})


def test_driver_rejects_conflicting_instance():
    fake = FakeNvml(scale=0.0)
    dev = fake.nvmlDeviceGetHandleByIndex(0)
    pl = fake.c_nvmlGpuInstancePlacement_t()
    pl.start, pl.size = 0, 4
    fake.nvmlDeviceCreateGpuInstanceWithPlacement(dev, 9, pl)  # 3g at 0 takes memory slices 0-3
    pl2 = fake.c_nvmlGpuInstancePlacement_t()
    pl2.start, pl2.size = 3, 1
    with pytest.raises(fake.NVMLError) as exc:
        fake.nvmlDeviceCreateGpuInstanceWithPlacement(dev, 19, pl2)
    assert exc.value.value == fake.NVML_ERROR_INSUFFICIENT_RESOURCES
    pl3 = fake.c_nvmlGpuInstancePlacement_t()
    pl3.start, pl3.size = 1, 2
    with pytest.raises(fake.NVMLError) as exc:
        fake.nvmlDeviceCreateGpuInstanceWithPlacement(dev, 14, pl3)
    assert exc.value.value == fake.NVML_ERROR_INVALID_ARGUMENT


def test_load_nvml_refuses_without_pynvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(NvmlUnavailable, match="nvidia-ml-py is not installed"):
        load_nvml()
