"""A fake ``pynvml`` module for the executor tests: MIG state, driver-like placement checks, scaled sleeps.

It keeps GPU and compute instances per device, accepts only the placements of NVIDIA's
``nvidia-smi mig -lgipp`` tables (memory slices: A100 1g {0..6}:1, 2g {0,2,4}:2, 3g {0,4}:4,
4g {0}:4, 7g {0}:8), rejects overlapping ones with INSUFFICIENT_RESOURCES and bad ones with
INVALID_ARGUMENT, refuses to destroy a GPU instance that still has a compute instance (IN_USE),
serialises every create/destroy under one lock (like the driver) and sleeps the FAR Table 1 time
times ``scale``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_IN_USE = 19
NVML_ERROR_INSUFFICIENT_RESOURCES = 23
NVML_DEVICE_MIG_ENABLE = 1
NVML_DEVICE_MIG_DISABLE = 0
NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0
# profile index constants (nvidia-ml-py); value -> compute slices
NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0
NVML_GPU_INSTANCE_PROFILE_2_SLICE = 1
NVML_GPU_INSTANCE_PROFILE_3_SLICE = 2
NVML_GPU_INSTANCE_PROFILE_4_SLICE = 3
NVML_GPU_INSTANCE_PROFILE_7_SLICE = 4
NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0
NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 1
NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 2
NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 3
NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 4

A100 = {
    "name": "NVIDIA A100-SXM4-40GB",
    # profile constant -> (smi id, compute slices, memory size, allowed starts, create s, destroy s)
    "profiles": {0: (19, 1, 1, (0, 1, 2, 3, 4, 5, 6), 0.16, 0.20), 1: (14, 2, 2, (0, 2, 4), 0.17, 0.20),
                 2: (9, 3, 4, (0, 4), 0.20, 0.21), 3: (5, 4, 4, (0,), 0.21, 0.21), 4: (0, 7, 8, (0,), 0.24, 0.22)},
}  # fmt: skip


class NVMLError(Exception):
    def __init__(self, value: int):
        self.value = value
        super().__init__(
            {
                2: "Invalid Argument",
                3: "Not Supported",
                4: "Insufficient Permissions",
                19: "In use by another client",
                23: "Insufficient Resources",
            }.get(value, str(value))
        )


class c_nvmlGpuInstancePlacement_t:  # noqa: N801 - mirrors the pynvml name
    def __init__(self) -> None:
        self.start = 0
        self.size = 0


@dataclass
class _GI:
    gid: int
    profile: int
    start: int
    size: int
    cis: list = field(default_factory=list)


@dataclass
class _Device:
    spec: dict
    mig: int = NVML_DEVICE_MIG_ENABLE
    gis: dict = field(default_factory=dict)
    next_id: int = 1


class FakeNvml:
    """Module-like object: pass it to ``execute_schedule(..., nvml=fake)``."""

    NVMLError = NVMLError
    c_nvmlGpuInstancePlacement_t = c_nvmlGpuInstancePlacement_t

    def __init__(
        self,
        devices: int = 1,
        *,
        mig: bool = True,
        scale: float = 0.01,
        permission: bool = True,
        transient_in_use: int = 0,
    ):
        for k, v in globals().items():
            if k.startswith("NVML_"):
                setattr(self, k, v)
        self.devices = [
            _Device(A100, NVML_DEVICE_MIG_ENABLE if mig else NVML_DEVICE_MIG_DISABLE) for _ in range(devices)
        ]
        self.scale = scale
        self.permission = permission
        self.transient_in_use = transient_in_use
        self.lock = threading.Lock()
        self.log: list[tuple[str, int, int]] = []
        self.max_alive = 0

    # --- library -------------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int):
        if not 0 <= i < len(self.devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self.devices[i]

    def nvmlDeviceGetName(self, dev) -> str:
        return dev.spec["name"]

    def nvmlDeviceGetMigMode(self, dev):
        return dev.mig, dev.mig

    def nvmlDeviceGetGpuInstanceProfileInfo(self, dev, profile):
        if profile not in dev.spec["profiles"]:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        sid, slices, mem, *_ = dev.spec["profiles"][profile]
        return SimpleNamespace(id=sid, sliceCount=slices, memorySizeMB=mem * 5120)

    def _profile_by_id(self, dev, sid):
        for k, v in dev.spec["profiles"].items():
            if v[0] == sid:
                return k, v
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceCreateGpuInstanceWithPlacement(self, dev, profile_id, placement):
        if not self.permission:
            raise NVMLError(NVML_ERROR_NO_PERMISSION)
        if dev.mig != NVML_DEVICE_MIG_ENABLE:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        prof, (sid, slices, mem, starts, c, _) = self._profile_by_id(dev, profile_id)
        if placement.size != mem or placement.start not in starts:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        with self.lock:
            lo, hi = placement.start, placement.start + placement.size
            for gi in dev.gis.values():
                if lo < gi.start + gi.size and gi.start < hi:
                    raise NVMLError(NVML_ERROR_INSUFFICIENT_RESOURCES)
            time.sleep(c * self.scale)
            gi = _GI(dev.next_id, prof, placement.start, placement.size)
            dev.next_id += 1
            dev.gis[gi.gid] = gi
            self.log.append(("create", slices, placement.start))
            self.max_alive = max(self.max_alive, len(dev.gis))
            gi.device = dev
            return gi

    def nvmlGpuInstanceGetInfo(self, gi):
        return SimpleNamespace(id=gi.gid, placement=SimpleNamespace(start=gi.start, size=gi.size))

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(self, gi, profile, eng):
        return SimpleNamespace(id=100 + profile)

    def nvmlGpuInstanceCreateComputeInstance(self, gi, ci_profile_id):
        with self.lock:
            ci = SimpleNamespace(gi=gi, id=len(gi.cis))
            gi.cis.append(ci)
            return ci

    def nvmlComputeInstanceDestroy(self, ci):
        with self.lock:
            ci.gi.cis.remove(ci)

    def nvmlGpuInstanceDestroy(self, gi):
        with self.lock:
            if gi.cis:
                raise NVMLError(NVML_ERROR_IN_USE)
            if self.transient_in_use > 0:
                self.transient_in_use -= 1
                raise NVMLError(NVML_ERROR_IN_USE)
            _, (sid, slices, mem, starts, c, d) = self._profile_by_id(
                gi.device, gi.device.spec["profiles"][gi.profile][0]
            )
            time.sleep(d * self.scale)
            del gi.device.gis[gi.gid]
            self.log.append(("destroy", slices, gi.start))

    def nvmlDeviceGetMaxMigDeviceCount(self, dev) -> int:
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, dev, idx):
        gis = sorted(dev.gis.values(), key=lambda g: g.gid)
        if idx >= len(gis):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return SimpleNamespace(gi=gis[idx])

    def nvmlDeviceGetGpuInstanceId(self, mig) -> int:
        return mig.gi.gid

    def nvmlDeviceGetUUID(self, mig) -> str:
        return f"MIG-fake-{mig.gi.gid:04d}"
