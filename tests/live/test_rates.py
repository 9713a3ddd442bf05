"""Measured rates feed the policies: once a job reports, the rates in the policy's view are the measured ones."""

from gpuweave.live.config import load_live_config
from gpuweave.live.local import LocalExecutor
from gpuweave.live.rates import MeasuredProfiles
from gpuweave.live.runtime import LiveRuntime

RESNET = "ResNet-18 (batch size 128)"
FIXED_RATE = 300.0  # steps per wall second the program really does, on any GPU
TIME_SCALE = 100.0


def _run_recording_view_rates(live_config, tmp_path, **executor) -> tuple[LiveRuntime, list[float]]:
    """Run one ResNet-18 job that ignores its emulated speed; return the rate the policy's view gave it on V100
    at each decision."""
    rows = [f"x,0,1,{RESNET},30,synthetic --fixed-rate {FIXED_RATE:g}", f"y,0,1,{RESNET},10"]
    config = live_config(rows, policy="tiresias", round_length=40, executor={"time_scale": TIME_SCALE, **executor})
    runtime = LiveRuntime(load_live_config(config), LocalExecutor(), tmp_path / "out", config_dir=config.parent)
    seen: list[float] = []
    schedule = runtime.policy.schedule

    x = runtime.book.cluster.by_id["x"]

    def recording(view):
        seen.append(view.model_rate(x, "V100"))
        return schedule(view)

    runtime.policy.schedule = recording
    runtime.run()
    return runtime, seen


def test_policy_sees_measured_steps_per_second_instead_of_the_profile(live_config, tmp_path):
    runtime, seen = _run_recording_view_rates(live_config, tmp_path)
    profiled = runtime.base_profiles.rate(RESNET, "V100", 1, True)
    measured = FIXED_RATE / TIME_SCALE
    assert abs(profiled - measured) > 0.5 * measured  # the program really is far from its profile
    assert seen[0] == profiled  # before any report: the profile store
    assert abs(seen[-1] - measured) < 0.25 * measured, seen  # after: the measurement
    assert isinstance(runtime.book.cluster.profiles, MeasuredProfiles)
    assert all(j.done for j in runtime.jobs.values())


def test_measured_rates_can_be_switched_off(live_config, tmp_path):
    runtime, seen = _run_recording_view_rates(live_config, tmp_path, measured_rates=False)
    profiled = runtime.base_profiles.rate(RESNET, "V100", 1, True)
    assert seen and all(rate == profiled for rate in seen)


def test_measured_profiles_of_a_pollux_job_model_hold_the_measured_rows_only(tmp_path):
    """A Pollux job model is no table: its rates depend on the placement's shape, so only what was measured is
    written (a replay from such a table covers the measured entries alone, as the docstring says)."""
    import pytest

    from gpuweave.live.rates import write_measured_profiles
    from gpuweave.workload.profiles import load_profiles
    from tests.workload.conftest import shared_dir

    pollux = shared_dir() / "data" / "pollux" / "traces"
    if not pollux.is_dir():
        pytest.skip(f"shared Pollux data not found at {pollux}")
    model = load_profiles(pollux)
    path = tmp_path / "measured.csv"
    measured = {("bert", "V100", 2, True): 1.5, ("bert", "V100", 1, False): 0.75}  # one GPU: one entry
    assert write_measured_profiles(model, measured, path) == 2
    rows = {(r.job_type, r.gpu_model, r.num_gpus, r.consolidated): r.throughput for r in load_profiles(path).rows()}
    assert rows == {("bert", "V100", 2, True): 1.5, ("bert", "V100", 1, True): 0.75}
