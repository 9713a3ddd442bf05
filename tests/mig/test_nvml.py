"""`gpuweave mig run` against the real NVML ABI: the real pynvml wrappers driving the C stub ``nvml_stub.c``.

Every run happens in a subprocess whose loader finds the stub as ``libnvidia-ml.so.1`` (conftest.py); the stub
logs each state change and, at process exit, how many GPU and compute instances are still alive.
"""

from __future__ import annotations

import csv
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.mig.far import far
from gpuweave.mig.nvml_exec import dry_run_calls, execute_schedule, load_nvml
from gpuweave.mig.nvml_preflight import NvmlUnavailable, check_permissions
from gpuweave.mig.problem import make_problem
from gpuweave.mig.schedule import Schedule, read_schedule_json

SCALE = 0.01  # task commands sleep planned time x SCALE
TIMES = {
    "A100": [
        [30, 16, 11, 8, 5],
        [12, 7, 5, 4, 3.5],
        [3, 2.5, 2.2, 2.1, 2],
        [3, 2.6, 2.4, 2.2, 2.1],
        [2.5, 2.0, 1.8, 1.7, 1.6],
        [2, 1.6, 1.5, 1.4, 1.4],
    ],
    "A30": [[20, 11, 6], [8, 5, 3], [3, 2, 1.5], [2.5, 1.8, 1.2]],
}
TIMES["H100"] = TIMES["A100"]


def far_schedule(gpu: str, command) -> Schedule:
    rows = TIMES[gpu]
    schedule = far(make_problem([f"t{i}" for i in range(len(rows))], rows, gpu)).schedule
    schedule.tasks = [replace(t, command=command(t)) for t in schedule.tasks]
    return schedule


def write_schedule(tmp_path: Path, gpu: str = "A100", command=None) -> Path:
    env_dir = tmp_path / "env"
    env_dir.mkdir(exist_ok=True)
    command = command or (
        lambda t: f"echo $CUDA_VISIBLE_DEVICES > {env_dir}/{t.task}; sleep {(t.end - t.start) * SCALE:.3f}"
    )
    return far_schedule(gpu, command).write_json(tmp_path / "schedule.json")


def live_at_exit(log: list[str]) -> str:
    return [line for line in log if line.startswith("exit ")][-1]


def one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


@pytest.mark.parametrize("gpu", ["A100", "A30", "H100"])
def test_far_schedule_runs_end_to_end_and_destroys_every_instance(nvml_stub, tmp_path, gpu):
    path = write_schedule(tmp_path, gpu)
    schedule = far_schedule(gpu, lambda t: "true")
    out = tmp_path / "timings.csv"
    proc, log = nvml_stub.cli(["mig", "run", str(path), "--out", str(out)], tmp_path / "stub.log", gpu=gpu)
    assert proc.returncode == 0, proc.stderr
    lifetimes = len(schedule.initial_instances) + sum(o.op == "create" for o in schedule.operations)
    assert sum(line.startswith("create-gi") and line.endswith("ret=0") for line in log) == lifetimes
    assert sum(line.startswith("destroy-gi") and line.endswith("ret=0") for line in log) == lifetimes
    assert any(line.startswith("destroy-ci") and line.endswith("ret=19") for line in log)  # IN_USE, retried
    assert live_at_exit(log) == "exit live_gi=0 live_ci=0"
    assert not [line for line in log if line.startswith("after-shutdown")]
    assert log.index("shutdown") > max(i for i, line in enumerate(log) if line.startswith("destroy-gi"))
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == len(schedule.tasks) and all(r["returncode"] == "0" for r in rows)
    for t in schedule.tasks:
        assert (tmp_path / "env" / t.task).read_text().startswith("MIG-stub-gi")


def test_placement_passed_by_value_faults_and_by_pointer_works(nvml_stub, tmp_path):
    """The stub reads the placement through the pointer nvml.h declares: the old by-value call crashes."""
    snippet = """
import ctypes, sys, pynvml as n
n.nvmlInit()
dev = n.nvmlDeviceGetHandleByIndex(0)
pid = n.nvmlDeviceGetGpuInstanceProfileInfo(dev, n.NVML_GPU_INSTANCE_PROFILE_3_SLICE).id
placement = n.c_nvmlGpuInstancePlacement_t()
placement.start, placement.size = 4, 4
arg = placement if sys.argv[1] == "value" else ctypes.byref(placement)
gi = n.nvmlDeviceCreateGpuInstanceWithPlacement(dev, pid, arg)
n.nvmlGpuInstanceDestroy(gi)
n.nvmlShutdown()
"""
    by_value, _ = nvml_stub.run(["-c", snippet, "value"], tmp_path / "value.log")
    assert by_value.returncode == -signal.SIGSEGV
    by_pointer, log = nvml_stub.run(["-c", snippet, "pointer"], tmp_path / "pointer.log")
    assert by_pointer.returncode == 0, by_pointer.stderr
    assert "create-gi start=4 size=4 ret=0" in log and live_at_exit(log) == "exit live_gi=0 live_ci=0"


def test_existing_instances_are_refused_or_cleaned(nvml_stub, tmp_path):
    path = write_schedule(tmp_path)
    proc, log = nvml_stub.cli(["mig", "run", str(path)], tmp_path / "refused.log", existing="0@0,2@4")
    assert "already has 2 MIG GPU instance(s)" in one_error_line(proc) and "--clean-existing" in proc.stderr
    assert not [line for line in log if line.startswith("create-gi")]
    assert live_at_exit(log) == "exit live_gi=2 live_ci=2"  # left as they were
    proc, log = nvml_stub.cli(["mig", "run", str(path), "--clean-existing"], tmp_path / "clean.log", existing="0@0")
    assert proc.returncode == 0, proc.stderr
    assert live_at_exit(log) == "exit live_gi=0 live_ci=0"


def test_failed_compute_instance_leaves_no_gpu_instance(nvml_stub, tmp_path):
    path = write_schedule(tmp_path)
    for nth in (1, 2):
        proc, log = nvml_stub.cli(["mig", "run", str(path)], tmp_path / f"ci{nth}.log", fail_ci=nth)
        assert "create compute instance" in one_error_line(proc) and "Insufficient resources" in proc.stderr
        assert any(line.endswith("ret=23") for line in log if line.startswith("create-ci"))
        assert live_at_exit(log) == "exit live_gi=0 live_ci=0"
        assert not [line for line in log if line.startswith("after-shutdown")]


def start_run_and_wait_for_tasks(nvml_stub, tmp_path, command, **options):
    """A `mig run` whose tasks write their PIDs to ``pids``; returns it once a task runs."""
    pids = tmp_path / "pids"
    path = write_schedule(tmp_path, command=lambda t: command.format(pids=pids))
    log = tmp_path / "stub.log"
    proc = nvml_stub.start(["-c", "from gpuweave.cli import main; main()", "mig", "run", str(path)], log, **options)
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids.exists(), "no task started"
    return proc, pids, log


def assert_nothing_left(log: Path, pids: Path) -> list[str]:
    lines = log.read_text().splitlines()
    assert any(line.startswith("destroy-gi") for line in lines)
    assert live_at_exit(lines) == "exit live_gi=0 live_ci=0"
    assert not [line for line in lines if line.startswith("after-shutdown")]
    for pid in map(int, pids.read_text().split()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    return lines


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_kills_tasks_and_destroys_instances(nvml_stub, tmp_path, sig):
    """Ctrl-C, a batch system's SIGTERM and a dropped SSH session's SIGHUP all stop the run the same way."""
    proc, pids, log = start_run_and_wait_for_tasks(nvml_stub, tmp_path, "echo $$ >> {pids}; exec sleep 60")
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and f"interrupted ({signal.Signals(sig).name})" in err, err
    assert_nothing_left(log, pids)


def test_signals_during_cleanup_neither_stop_it_nor_leak_an_instance(nvml_stub, tmp_path):
    """Issue 39 class 9: a task that ignores SIGTERM, then a second Ctrl-C, SIGHUP and SIGTERM while the run
    kills tasks and destroys instances (each destroy retried "in use" for about a second)."""
    started = time.monotonic()
    proc, pids, log = start_run_and_wait_for_tasks(
        nvml_stub, tmp_path, "trap '' TERM; echo $$ >> {pids}; sleep 60", ci_in_use=20
    )
    proc.send_signal(signal.SIGINT)
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        time.sleep(0.4)
        if proc.poll() is None:
            proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "interrupted (SIGINT" in err, err
    assert "Traceback" not in err
    assert_nothing_left(log, pids)
    assert time.monotonic() - started < 45  # the second Ctrl-C skipped the grace; no 60-s wait for threads


@pytest.mark.parametrize(
    "schedule_gpu, stub_gpu, name, needle",
    [
        ("A30", "A100", "", "is a A100-40GB (A100 MIG geometry), but the schedule was planned for A30"),
        ("A100", "A30", "", "is a A30 (A30 MIG geometry)"),
        ("H100", "A100", "", "planned for H100 (H100); plan it with --gpu A100-40GB"),
        ("A100", "H100NVL", "", "is a H100-NVL"),
        ("A100", "T4", "", "GPU 0 (Tesla T4) has no MIG"),
        ("A100", "A30", "NVIDIA Future GPU", "has MIG placements 1g x4, 2g x2, 4g x1 (the A30 geometry)"),
    ],
)
def test_mismatched_gpu_is_refused_before_any_instance(nvml_stub, tmp_path, schedule_gpu, stub_gpu, name, needle):
    path = write_schedule(tmp_path, schedule_gpu)
    proc, log = nvml_stub.cli(["mig", "run", str(path)], tmp_path / "stub.log", gpu=stub_gpu, name=name)
    assert needle in one_error_line(proc)
    assert not [line for line in log if line.startswith("create-gi")]


def test_mig_mode_off_and_no_permission_are_refused(nvml_stub, tmp_path):
    path = write_schedule(tmp_path)
    proc, _ = nvml_stub.cli(["mig", "run", str(path)], tmp_path / "off.log", mig=0)
    assert "MIG mode is disabled on GPU 0 (NVIDIA A100-SXM4-40GB)" in one_error_line(proc)
    proc, log = nvml_stub.cli(["mig", "run", str(path)], tmp_path / "perm.log", no_perm=1)
    assert "no permission" in one_error_line(proc)
    assert live_at_exit(log) == "exit live_gi=0 live_ci=0"


def test_check_runs_only_the_read_only_preflight(nvml_stub, tmp_path):
    path = write_schedule(tmp_path, "H100")
    proc, log = nvml_stub.cli(["mig", "run", str(path), "--check"], tmp_path / "stub.log", gpu="H100")
    assert proc.returncode == 0, proc.stderr
    assert "GPU 0 (NVIDIA H100 80GB HBM3): MIG on, H100 placements, no instances: ready" in proc.stdout
    assert log == ["init", "shutdown", "exit live_gi=0 live_ci=0"]


def test_mig_device_lookup_survives_an_invalidated_handle(nvml_stub, tmp_path):
    path = write_schedule(tmp_path)
    proc, log = nvml_stub.cli(["mig", "run", str(path)], tmp_path / "stub.log", stale=1)
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith("stale mig handle") for line in log)
    assert live_at_exit(log) == "exit live_gi=0 live_ci=0"


def test_instances_that_survive_are_reported_with_nvidia_smi_commands(nvml_stub, tmp_path):
    path = write_schedule(tmp_path)
    proc, log = nvml_stub.cli(["mig", "run", str(path)], tmp_path / "stub.log", gi_stuck=1)
    assert proc.returncode == 2
    assert "could not be destroyed; remove them with:" in proc.stderr
    named = [line for line in proc.stderr.splitlines() if "sudo nvidia-smi mig" in line]
    assert named and all(line.count("-dgi") == 1 for line in named)  # one line per instance, all its commands
    assert any("-gi 1 -dgi" in line and "instance at S" in line for line in named)
    assert "survived the run" in proc.stderr
    assert live_at_exit(log).startswith("exit live_gi=") and live_at_exit(log) != "exit live_gi=0 live_ci=0"


def test_dry_run_lists_the_nvml_calls_without_a_gpu(nvml_stub, tmp_path):
    path = write_schedule(tmp_path)
    proc, log = nvml_stub.cli(["mig", "run", str(path), "--dry-run"], tmp_path / "stub.log")
    assert proc.returncode == 0, proc.stderr
    assert not log  # NVML never loaded
    schedule = read_schedule_json(path)
    lines = dry_run_calls(schedule)
    assert proc.stdout.splitlines() == lines
    creates = [line for line in lines if "nvmlDeviceCreateGpuInstanceWithPlacement" in line]
    assert len(creates) == len(schedule.initial_instances) + sum(o.op == "create" for o in schedule.operations)
    assert creates[0].endswith("id of NVML_GPU_INSTANCE_PROFILE_4_SLICE, byref(placement start=0 size=4))  # 4g at S0")
    assert lines[0] == "nvmlInit()" and lines[-1] == "nvmlShutdown()"


def test_refusals_before_nvml(monkeypatch):
    schedule = far_schedule("A100", lambda t: None)
    with pytest.raises(InputError, match="no command"):
        execute_schedule(schedule, object())
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(NvmlUnavailable, match="nvidia-ml-py is not installed"):
        load_nvml()


def test_permission_check(tmp_path):
    config = tmp_path / "config"
    with pytest.raises(NvmlUnavailable, match="no permission to reconfigure MIG"):
        check_permissions(1000, config, tmp_path)
    check_permissions(0, config, tmp_path)  # root needs no capability
    config.write_text("DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n")
    check_permissions(1000, config, tmp_path)  # capability readable, device file absent (procfs mode)
