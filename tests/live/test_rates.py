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

    x = runtime.book.by_id["x"]

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
    assert isinstance(runtime.book.profiles, MeasuredProfiles)
    assert all(j.done for j in runtime.jobs.values())


def test_measured_rates_can_be_switched_off(live_config, tmp_path):
    runtime, seen = _run_recording_view_rates(live_config, tmp_path, measured_rates=False)
    profiled = runtime.base_profiles.rate(RESNET, "V100", 1, True)
    assert seen and all(rate == profiled for rate in seen)
