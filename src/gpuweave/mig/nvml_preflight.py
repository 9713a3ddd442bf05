"""NVML access for MIG runs: error mapping, destroy with retries, and the pre-flight check of the GPU (spec §2.6).

Problem. Before the executor (:mod:`gpuweave.mig.nvml_exec`, FAR paper Sec. 3.4) creates any instance, the GPU
must be one the schedule can run on, or the run fails halfway with instances left behind. :func:`preflight`
refuses with one line (:class:`NvmlUnavailable`, an InputError: exit 2 in the CLI) when

* the GPU index does not exist, or its NVML name resolves to a catalog model without MIG or with another MIG
  geometry than the schedule's (``gpu_from_nvml_name``: "NVIDIA A100-SXM4-40GB" is the A100-40GB);
* MIG mode is off (or a mode change is pending a GPU reset);
* the process may not reconfigure MIG: neither root nor read access to the ``mig/config`` capability
  (``/proc/driver/nvidia/capabilities/mig/config`` names the minor of ``/dev/nvidia-caps/nvidia-capN``);
* the device's geometry differs from the schedule's: for each instance size, the profile's slice count and its
  placements (``nvmlDeviceGetGpuInstancePossiblePlacements_v2``, in memory slices) must equal the catalog's;
* GPU instances already exist (mig-parted, a crashed run): refused unless ``clean_existing``, which destroys
  them (compute instances first).

Everything but ``clean_existing`` is read-only. Complexity: O(profiles x placements) NVML queries.
The placement argument of ``nvmlDeviceCreateGpuInstanceWithPlacement`` is ``const nvmlGpuInstancePlacement_t *``
and pynvml (checked against nvidia-ml-py 13.580.65) forwards it to C untyped: callers pass ``ctypes.byref``.
"""

from __future__ import annotations

import ctypes
import os
import time
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import get_mig_geometry, gpu_from_nvml_name, mig_geometries
from gpuweave.hardware.mig import MigGeometry

NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_IN_USE = 19
DESTROY_RETRIES = 200  # x DESTROY_RETRY_S: the driver may report "in use" for a while after the last process exits
DESTROY_RETRY_S = 0.05
GI_PROFILE_COUNT = 5  # NVML_GPU_INSTANCE_PROFILE_{1,2,3,4,7}_SLICE = 0..4: the profiles FAR schedules use
MIG_CONFIG_CAPABILITY = Path("/proc/driver/nvidia/capabilities/mig/config")
CAPABILITY_DEVICES = Path("/dev/nvidia-caps")


class NvmlUnavailable(InputError):
    """No usable MIG GPU: pynvml missing, no such GPU, MIG off, no permission, or the wrong GPU."""


def load_nvml() -> Any:
    """Import pynvml (nvidia-ml-py) lazily; refuse clearly when it is not installed."""
    try:
        import pynvml
    except ImportError:
        raise NvmlUnavailable(
            "nvidia-ml-py is not installed, so no MIG GPU can be driven (pip install 'gpuweave[gpu]'); "
            "plan and validate work without it"
        ) from None
    return pynvml


@cache
def nvml_profiles() -> dict:
    """``data/nvml_profiles.toml``: per geometry and size, the NVML profile constants and memory slices."""
    return tomllib.loads(resources.files("gpuweave.mig").joinpath("data").joinpath("nvml_profiles.toml").read_text())


def nvml_code(exc: BaseException) -> int | None:
    return getattr(exc, "value", None)


def nvml_call(nvml: Any, what: str, fn: Callable, *args: Any) -> Any:
    """Call ``fn``; an NVML error becomes one clear NvmlUnavailable line naming ``what``."""
    try:
        return fn(*args)
    except nvml.NVMLError as exc:
        code = nvml_code(exc)
        if code == NVML_ERROR_NO_PERMISSION:
            raise NvmlUnavailable(
                f"{what}: no permission (MIG management needs root or the mig/config capability)"
            ) from None
        if code == NVML_ERROR_LIBRARY_NOT_FOUND:
            raise NvmlUnavailable(f"{what}: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine?)") from None
        if code == NVML_ERROR_NOT_SUPPORTED:
            raise NvmlUnavailable(f"{what}: not supported on this GPU (not MIG-capable?)") from None
        raise NvmlUnavailable(f"{what} failed: {exc}") from None


def destroy_with_retries(nvml: Any, fn: Callable, handle: Any, what: str) -> None:
    """Destroy an instance, retrying while the driver reports it in use; "not found" means already gone."""
    for attempt in range(DESTROY_RETRIES):
        try:
            fn(handle)
            return
        except nvml.NVMLError as exc:
            code = nvml_code(exc)
            if code == NVML_ERROR_NOT_FOUND:
                return
            if code != NVML_ERROR_IN_USE or attempt == DESTROY_RETRIES - 1:
                raise NvmlUnavailable(f"{what} failed: {exc}") from None
            time.sleep(DESTROY_RETRY_S)


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One instance size on the device: its GPU-instance profile ID and the matching full compute profile."""

    size: int
    gi_id: int
    ci_constant: int
    memory_slices: int


@dataclass(frozen=True, slots=True)
class MigDevice:
    """A GPU that passed the pre-flight: its NVML handle, names and the profile of each instance size."""

    index: int
    handle: Any
    name: str
    geometry: MigGeometry
    profiles: dict[int, MigProfile]


def check_permissions(
    euid: int | None = None, config: Path = MIG_CONFIG_CAPABILITY, devices: Path = CAPABILITY_DEVICES
) -> None:
    """Refuse unless the process is root or may read the ``mig/config`` capability (and its device file)."""
    if (os.geteuid() if euid is None else euid) == 0:
        return
    hint = "run as root, or grant read access to the mig/config capability (NVIDIA MIG User Guide, 'Device Nodes')"
    try:
        text = config.read_text()
    except OSError:
        raise NvmlUnavailable(f"no permission to reconfigure MIG: {config} is not readable; {hint}") from None
    minor = next(
        (line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("DeviceFileMinor")), ""
    )
    device = devices / f"nvidia-cap{minor}"
    if minor and device.exists() and not os.access(device, os.R_OK):
        raise NvmlUnavailable(f"no permission to reconfigure MIG: {device} is not readable; {hint}")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _device_geometry(nvml: Any, handle: Any) -> dict[int, tuple[int, frozenset[tuple[int, int]]]]:
    """Per size (compute slices) of the standard profiles: (profile ID, placements as (start, memory slices))."""
    found: dict[int, tuple[int, frozenset[tuple[int, int]]]] = {}
    for constant in range(GI_PROFILE_COUNT):
        try:
            info = nvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, constant)
        except nvml.NVMLError as exc:
            if nvml_code(exc) in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT):
                continue  # this GPU has no such profile
            raise
        count = ctypes.c_uint(0)
        nvml_call(
            nvml,
            "placement count",
            nvml.nvmlDeviceGetGpuInstancePossiblePlacements,
            handle,
            info.id,
            None,
            ctypes.byref(count),
        )
        array = (nvml.c_nvmlGpuInstancePlacement_t * max(count.value, 1))()
        nvml_call(
            nvml,
            "placements",
            nvml.nvmlDeviceGetGpuInstancePossiblePlacements,
            handle,
            info.id,
            array,
            ctypes.byref(count),
        )
        found[info.sliceCount] = (info.id, frozenset((p.start, p.size) for p in array[: count.value]))
    return found


def _expected_geometry(geometry: MigGeometry) -> dict[int, frozenset[tuple[int, int]]]:
    table = nvml_profiles()[geometry.name]
    return {
        size: frozenset((p.start, table[str(size)]["memory_slices"]) for p in geometry.placements_of_size(size))
        for size in geometry.sizes
    }


def _describe(geometry: dict[int, frozenset]) -> str:
    return ", ".join(f"{size}g x{len(places)}" for size, places in sorted(geometry.items()))


def _check_geometry(found: dict, geometry: MigGeometry, where: str) -> None:
    """Refuse unless the device offers exactly the schedule geometry's sizes and placements."""
    seen = {size: places for size, (_id, places) in found.items()}
    expected = _expected_geometry(geometry)
    if seen == expected:
        return
    same = [name for name, g in mig_geometries().items() if _expected_geometry(g) == seen]
    looks = f" (the {' / '.join(same)} geometry)" if same else ""
    raise NvmlUnavailable(
        f"{where} has MIG placements {_describe(seen) or 'none'}{looks}, but the schedule was planned for "
        f"{geometry.name} ({_describe(expected)}); plan it for this GPU (gpuweave mig plan --gpu ...)"
    )


def _existing_instances(nvml: Any, handle: Any) -> list[tuple[Any, Any]]:
    """Every GPU instance on the device, of any profile: (handle, nvmlGpuInstanceGetInfo)."""
    found = []
    for constant in range(getattr(nvml, "NVML_GPU_INSTANCE_PROFILE_COUNT", GI_PROFILE_COUNT)):
        try:
            info = nvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, constant)
        except nvml.NVMLError:
            continue
        array = (nvml.c_nvmlGpuInstance_t * max(info.instanceCount, 1))()
        count = ctypes.c_uint(len(array))
        nvml_call(
            nvml, "list GPU instances", nvml.nvmlDeviceGetGpuInstances, handle, info.id, array, ctypes.byref(count)
        )
        found += [
            (gi, nvml_call(nvml, "GPU instance info", nvml.nvmlGpuInstanceGetInfo, gi)) for gi in array[: count.value]
        ]
    return found


def _compute_instances(nvml: Any, gi: Any) -> list[Any]:
    found = []
    for constant in range(getattr(nvml, "NVML_COMPUTE_INSTANCE_PROFILE_COUNT", GI_PROFILE_COUNT)):
        try:
            info = nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, constant, nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
            )
        except nvml.NVMLError:
            continue
        array = (nvml.c_nvmlComputeInstance_t * max(info.instanceCount, 1))()
        count = ctypes.c_uint(len(array))
        nvml_call(
            nvml,
            "list compute instances",
            nvml.nvmlGpuInstanceGetComputeInstances,
            gi,
            info.id,
            array,
            ctypes.byref(count),
        )
        found += list(array[: count.value])
    return found


def _handle_existing(nvml: Any, handle: Any, index: int, clean_existing: bool) -> None:
    existing = _existing_instances(nvml, handle)
    if not existing:
        return
    if not clean_existing:
        listed = ", ".join(f"GI {info.id} at memory slice {info.placement.start}" for _gi, info in existing)
        raise NvmlUnavailable(
            f"GPU {index} already has {len(existing)} MIG GPU instance(s) ({listed}), from mig-parted or an "
            f"earlier run; destroy them (sudo nvidia-smi mig -i {index} -dci; sudo nvidia-smi mig -i {index} -dgi) "
            "or pass --clean-existing"
        )
    for gi, info in existing:
        for ci in _compute_instances(nvml, gi):
            destroy_with_retries(
                nvml, nvml.nvmlComputeInstanceDestroy, ci, f"destroy a compute instance of GI {info.id}"
            )
        destroy_with_retries(nvml, nvml.nvmlGpuInstanceDestroy, gi, f"destroy existing GI {info.id}")


def preflight(nvml: Any, schedule_gpu: str, index: int, *, clean_existing: bool = False) -> MigDevice:
    """Check GPU ``index`` (NVML initialised) against a schedule planned for ``schedule_gpu``; see the module doc."""
    geometry = get_mig_geometry(schedule_gpu)
    count = nvml_call(nvml, "nvmlDeviceGetCount", nvml.nvmlDeviceGetCount)
    if not (0 <= index < count):
        raise NvmlUnavailable(f"no GPU with index {index} ({count} GPU(s) found)")
    handle = nvml_call(nvml, f"GPU {index}", nvml.nvmlDeviceGetHandleByIndex, index)
    name = _text(nvml_call(nvml, f"name of GPU {index}", nvml.nvmlDeviceGetName, handle))
    where = f"GPU {index} ({name})"
    model = gpu_from_nvml_name(name)
    if model is not None and model.mig is None:
        raise NvmlUnavailable(f"{where} has no MIG; the schedule needs a {geometry.name}-class GPU")
    if model is not None and model.mig is not None and model.mig.name != geometry.name:
        raise NvmlUnavailable(
            f"{where} is a {model.name} ({model.mig.name} MIG geometry), but the schedule was planned for "
            f"{schedule_gpu} ({geometry.name}); plan it with --gpu {model.name}"
        )
    current, pending = nvml_call(nvml, f"MIG mode of {where}", nvml.nvmlDeviceGetMigMode, handle)
    if current != nvml.NVML_DEVICE_MIG_ENABLE:
        change = " (a change is pending: reset the GPU)" if pending == nvml.NVML_DEVICE_MIG_ENABLE else ""
        raise NvmlUnavailable(f"MIG mode is disabled on {where}{change}; enable it: sudo nvidia-smi -i {index} -mig 1")
    check_permissions()
    found = _device_geometry(nvml, handle)
    _check_geometry(found, geometry, where)
    _handle_existing(nvml, handle, index, clean_existing)
    table = nvml_profiles()[geometry.name]
    profiles = {
        size: MigProfile(
            size, found[size][0], getattr(nvml, table[str(size)]["ci_profile"]), table[str(size)]["memory_slices"]
        )
        for size in geometry.sizes
    }
    return MigDevice(index, handle, name, geometry, profiles)


def check_gpu(nvml: Any, schedule_gpu: str, index: int) -> MigDevice:
    """The read-only pre-flight on its own (``gpuweave mig run --check``): init, check, shut down."""
    nvml_call(nvml, "nvmlInit", nvml.nvmlInit)
    try:
        return preflight(nvml, schedule_gpu, index)
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass
