"""PyTorch op-level hook client: a ``TorchDispatchMode`` that asks the FIKIT scheduler before each op
(spec §4.4 path 1).

Problem: gate a PyTorch program's GPU work through the scheduler without changing the program. The
paper hooks every CUDA kernel launch (a C preload library); this Python path intercepts every aten
operation instead. **Granularity is per op**, an approximation of the paper's kernel level: one op
may launch several kernels (or none), and the ID is the op's overload name plus input shapes/dtypes
(the ID "ext" field), e.g. ``aten.mm.default|b1,1,1|g1,1,1|xf32[64,64];f32[64,64]``.

Modes (``FIKIT_MODE``): ``share`` asks the server (LAUNCH → GO) before running each op; ``measure``
also asks (the server admits a measuring task exclusively, R-14) and times every op with a
``perf_counter`` timer backend (CUDA tensors: ``torch.cuda.Event`` pairs), and :meth:`task` marks
run boundaries; :meth:`FikitDispatchMode.build_profile` turns the T recorded runs into SK/SG
(:mod:`gpuweave.kernel.profile`), saved as ``{FIKIT_PROFILE_DIR}/{task_key}.json`` where the server
loads it. ``off`` runs ops untouched. A missing server fails open (ops run; a warning is logged).

torch is an optional dependency (``pip install gpuweave[torch]``); it is imported on first use.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

from gpuweave.errors import InputError
from gpuweave.kernel.client import ClientConfig, FikitClient
from gpuweave.kernel.ids import KernelId
from gpuweave.kernel.profile import Profile, ProfileBuilder

MAX_EXT = 200


def _describe(x) -> str | None:
    import torch

    if isinstance(x, torch.Tensor):
        dt = str(x.dtype).replace("torch.", "")
        return f"{dt}[{','.join(str(s) for s in x.shape)}]"
    return None


def op_kernel_id(func, args, kwargs) -> str:
    """Op-level kernel ID: overload name + input shapes/dtypes as the ``ext`` field (hashed if long)."""
    parts: list[str] = []
    for a in list(args) + list((kwargs or {}).values()):
        if isinstance(a, (list, tuple)):
            parts.extend(d for d in (_describe(y) for y in a) if d)
        else:
            d = _describe(a)
            if d:
                parts.append(d)
    ext = ";".join(parts)
    if len(ext) > MAX_EXT:
        ext = "sha1:" + hashlib.sha1(ext.encode()).hexdigest()
    return KernelId(str(func), (1, 1, 1), (1, 1, 1), ext.replace("|", "/")).canonical()


def _mode_base():
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


def FikitDispatchMode(*args, **kwargs):  # noqa: N802 - a factory that looks like the class it builds
    """Create the dispatch mode (see :class:`_FikitDispatchModeImpl` for the arguments)."""
    return _impl_class()(*args, **kwargs)


_IMPL = None


class _DispatchGate:
    """``with FikitDispatchMode(client, mode="share"):`` gates every aten op through ``client``.

    The behaviour of the dispatch mode, kept apart from torch's ``TorchDispatchMode`` base so that this module
    imports without torch; :func:`_impl_class` joins the two on first use.
    """

    def __init__(self, client: FikitClient | None, mode: str = "share", profile_dir: str | Path | None = None) -> None:
        super().__init__()
        if mode not in ("share", "measure", "off"):
            raise InputError(f"mode must be share, measure or off, got {mode!r}", field="FIKIT_MODE")
        self.client = client
        self.mode = mode
        self.profile_dir = Path(profile_dir) if profile_dir else None
        self.ops = 0
        self.gated = 0
        self.trace: list[str] = []
        self._runs: list[tuple[list[str], list[float], list[float]]] = []
        self._cur: tuple[list[str], list[float], list[float]] | None = None
        self._job = 0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **client_kw):
        cfg = ClientConfig.from_env(env)
        env = dict(os.environ) if env is None else env
        client = (
            None if cfg.mode == "off" else FikitClient(cfg.address, cfg.task_key, cfg.priority, cfg.mode, **client_kw)
        )
        return cls(client, cfg.mode, env.get("FIKIT_PROFILE_DIR"))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.mode == "off":
            return func(*args, **kwargs)
        kid = op_kernel_id(func, args, kwargs)
        self.ops += 1
        self.trace.append(kid)
        if self.client is not None and self.client.launch(kid):
            self.gated += 1
        if self.mode == "measure" and self._cur is not None:
            return self._timed(func, args, kwargs, kid)
        return func(*args, **kwargs)

    def _timed(self, func, args, kwargs, kid):
        import torch

        cuda = any(isinstance(a, torch.Tensor) and a.is_cuda for a in args)
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = func(*args, **kwargs)
            end.record()
            end.synchronize()
            t_end = time.perf_counter() * 1000.0
            dur = start.elapsed_time(end)
            t_start = t_end - dur
        else:
            t_start = time.perf_counter() * 1000.0
            out = func(*args, **kwargs)
            t_end = time.perf_counter() * 1000.0
        ids, starts, ends = self._cur
        ids.append(kid)
        starts.append(t_start)
        ends.append(t_end)
        return out

    @contextlib.contextmanager
    def task(self):
        """Mark one task (one inference); in measure mode it is one recorded run."""
        self._job += 1
        if self.client is not None:
            self.client.task_mark(self._job, end=False)
        if self.mode == "measure":
            self._cur = ([], [], [])
        try:
            yield self
        finally:
            if self.mode == "measure" and self._cur is not None and self._cur[0]:
                self._runs.append(self._cur)
            self._cur = None
            if self.client is not None:
                self.client.task_mark(self._job, end=True)

    @property
    def measured_runs(self) -> int:
        return len(self._runs)

    def build_profile(self, key: str | None = None) -> Profile:
        if not self._runs:
            raise InputError("no measured runs (use measure mode and `with mode.task():`)")
        b = ProfileBuilder()
        for ids, starts, ends in self._runs:
            b.add_run_times(ids, starts, ends)
        return b.build(key or (self.client.task_key if self.client else "task"))

    def save_profile(self, directory: str | Path | None = None) -> Path:
        d = Path(directory or self.profile_dir or ".")
        d.mkdir(parents=True, exist_ok=True)
        prof = self.build_profile()
        path = d / f"{prof.task_key}.json"
        prof.save(path)
        return path


def _impl_class():
    """The dispatch mode class: :class:`_DispatchGate` on torch's TorchDispatchMode, built once on first use."""
    global _IMPL
    if _IMPL is None:
        _IMPL = type("_FikitDispatchModeImpl", (_DispatchGate, _mode_base()), {"__doc__": _DispatchGate.__doc__})
    return _IMPL


def from_env(env: dict[str, str] | None = None, **client_kw):
    """The dispatch mode configured by FIKIT_* environment variables (see module docstring)."""
    return _impl_class().from_env(env, **client_kw)
