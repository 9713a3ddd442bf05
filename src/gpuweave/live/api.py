"""The worker-side API: wrap any training loop so the live runtime can pace, checkpoint, stop and resume it.

::

    from gpuweave.live import api

    steps = load_my_checkpoint(api.resume_path())   # None on a fresh start
    while steps < api.target_steps():
        train_one_step()
        steps += 1
        api.report(steps)
        if api.should_checkpoint():
            save_my_checkpoint(api.checkpoint_path(), steps)
            api.checkpointed(steps)                  # exits here if the runtime asked the job to stop

The runtime passes everything through environment variables (``GPUWEAVE_*``, see :func:`_env`); steps count from
the start of the attempt. ``report`` paces the loop to the emulated GPU's speed when the runtime asks for it (no
real GPU: a step takes at least ``1 / GPUWEAVE_PACE`` seconds). SIGTERM makes ``should_checkpoint()`` true and the
following ``checkpointed`` call exit with status 0. The ranks of a gang (:mod:`gpuweave.live.gang`) each use the
api on their own channel; a data-parallel script agrees on checkpoints and stops with its peers (an all-reduce of
``should_checkpoint()`` and ``stop_requested()``, then :func:`request_stop`), as the bundled torch worker does.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from gpuweave.live.channel import CHECKPOINT_REQUEST, WorkerStatus, write_status

STATUS_EVERY_S = 0.1  # status file rewrites at most this often (first step and checkpoints always)


class _Session:
    """One attempt's state inside the worker process."""

    def __init__(self) -> None:
        self.channel = Path(_env("GPUWEAVE_CHANNEL"))
        self.target = int(_env("GPUWEAVE_TARGET_STEPS"))
        self.pace = float(os.environ.get("GPUWEAVE_PACE", "0") or 0)
        self.checkpoint_every = float(os.environ.get("GPUWEAVE_CHECKPOINT_EVERY", "0") or 0)
        self.status = WorkerStatus()
        self.started = time.time()
        self.last_write = 0.0
        self.last_checkpoint = self.started
        self.stop_requested = False
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, _signum: int, _frame: FrameType | None) -> None:
        self.stop_requested = True

    def report(self, steps: int) -> None:
        now = time.time()
        if self.pace > 0:
            # Emulated GPU speed: the attempt's step n may not end before started + n / pace.
            due = self.started + steps / self.pace
            if due > now:
                time.sleep(due - now)
                now = due
        status = self.status
        if status.first_step_wall is None and steps > 0:
            status.first_step_wall = now
        status.steps = int(steps)
        elapsed = now - (status.first_step_wall or now)
        status.steps_per_s = (steps - 1) / elapsed if elapsed > 0 and steps > 1 else 0.0
        if now - self.last_write >= STATUS_EVERY_S or steps >= self.target or steps == 1:
            self.last_write = now
            write_status(self.channel, status)

    def should_checkpoint(self) -> bool:
        if self.stop_requested or self.status.steps >= self.target:
            return True
        if self.checkpoint_every and time.time() - self.last_checkpoint >= self.checkpoint_every:
            return True
        request = self.channel / CHECKPOINT_REQUEST
        if request.exists():
            request.unlink(missing_ok=True)
            return True
        return False

    def checkpointed(self, steps: int) -> None:
        self.status.checkpoint_steps = int(steps)
        self.last_checkpoint = time.time()
        write_status(self.channel, self.status)
        if self.stop_requested:
            sys.exit(0)


_session: _Session | None = None


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run this program under `gpuweave cluster run`")
    return value


def _get() -> _Session:
    global _session
    if _session is None:
        _session = _Session()
    return _session


def target_steps() -> int:
    """Steps this attempt must do (the job's remaining steps, or a forked copy's share)."""
    return _get().target


def resume_path() -> Path | None:
    """The checkpoint to resume from, or None on a fresh start."""
    value = os.environ.get("GPUWEAVE_RESUME_FROM", "")
    return Path(value) if value and Path(value).exists() else None


def checkpoint_path() -> Path:
    """Where to write this attempt's checkpoint (write a temporary file and rename it onto this path)."""
    return Path(_env("GPUWEAVE_CHECKPOINT"))


def report(steps: int) -> None:
    """Tell the runtime ``steps`` steps of this attempt are done (paces the loop on an emulated GPU)."""
    _get().report(steps)


def report_gradients(
    batch_size: int, init_batch_size: int, grad_sqr: float, grad_var: float, scaled: bool = False
) -> None:
    """Tell the runtime the attempt's global batch and the gradient statistics measured so far (the true gradient's
    squared norm and the gradients' variance at ``init_batch_size``, :class:`gpuweave.workload.goodput.NoiseEstimate`);
    sent with the next status write. Pollux's statistical efficiency and goodput in ``live.csv`` come from them, and
    an adaptive job's agent decides on them (:mod:`gpuweave.live.agents`). ``scaled``: the reported steps are
    already steps at the initial batch (AdaScale's progress), not optimizer steps."""
    status = _get().status
    status.batch_size, status.init_batch_size = int(batch_size), int(init_batch_size)
    status.grad_sqr, status.grad_var = float(grad_sqr), float(grad_var)
    status.scaled_steps = bool(scaled)


def report_step_times(step_time: float, sync_time: float) -> None:
    """Tell the runtime the attempt's mean seconds per synchronising step and the part of them spent synchronising
    (adaptdl's profile of a configuration; with gradient accumulation, each other micro-batch took the step time
    less the sync): an adaptive job's throughput model is fitted to them (:mod:`gpuweave.live.agents`)."""
    status = _get().status
    status.step_time, status.sync_time = float(step_time), float(sync_time)


def should_checkpoint() -> bool:
    """True when a checkpoint is due: asked by the runtime, SIGTERM, the period elapsed, or the target reached."""
    return _get().should_checkpoint()


def stop_requested() -> bool:
    """True once the runtime asked this worker to stop (SIGTERM) or :func:`request_stop` was called."""
    return _get().stop_requested


def request_stop() -> None:
    """Leave at the next :func:`checkpointed`, as on SIGTERM: a gang whose ranks agreed to stop together (the runtime
    signals each node on its own, so one rank may hear of a stop before the others)."""
    _get().stop_requested = True


def checkpointed(steps: int) -> None:
    """Record that the checkpoint at ``checkpoint_path()`` holds ``steps``; exits if the runtime asked to stop."""
    _get().checkpointed(steps)
