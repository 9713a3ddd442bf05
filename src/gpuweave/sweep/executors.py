"""Where sweep cells run: a small :class:`Executor` interface with a local process pool and Ray.

:func:`make_executor` builds the one an executor kind of :data:`gpuweave.executors.EXECUTORS` names (its
``sweep`` factory; ``gpuweave.executor_kinds`` registers ``local`` and ``ray`` with the two classes below).

``executor.map(fn, items, on_done)`` calls ``fn(item)`` for every item, calls ``on_done(index, result)``
in the calling process as each finishes (in completion order), and returns the results in input order.
An item whose call raised (or whose worker died) gets a :class:`TaskFailed` in place of its result, so
one bad cell never stops the others. ``fn`` and the items must be picklable (top-level functions).
Executors are context managers; ``close()`` releases what the executor started.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from gpuweave.errors import InputError
from gpuweave.executors import EXECUTORS, executor_kind, executor_names, spoken
from gpuweave.local_ray import join_ray, start_local_ray

OnDone = Callable[[int, Any], None]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class TaskFailed:
    """The result of an item whose call raised or whose worker died."""

    index: int
    error: str
    traceback: str = ""


def describe_exception(exc: BaseException) -> str:
    if isinstance(exc, InputError):
        return exc.one_line()
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _last_line(text: str) -> str:
    """Ray packs tracebacks into its error messages; keep the line that says what went wrong."""
    lines = [line.strip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else text
    return f"{lines[0].split(':', 1)[0]}: {lines[-1]}"


class Executor(ABC):
    name = "executor"

    @abstractmethod
    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], on_done: OnDone | None = None) -> list[Any]:
        """Run ``fn`` over ``items``; results (or :class:`TaskFailed`) in input order."""

    def close(self) -> None:
        """Release whatever this executor started (nothing by default)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _mp_context():
    import multiprocessing

    # Never fork: the caller may run threads (the rich progress bar does), and fork copies held locks.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class LocalExecutor(Executor):
    """``concurrent.futures.ProcessPoolExecutor`` on this machine; ``workers=1`` runs in this process."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise InputError(f"workers must be at least 1, got {workers}", field="workers")
        self.workers = workers or os.cpu_count() or 1

    def map(self, fn, items, on_done=None):
        items = list(items)
        results: list[Any] = [None] * len(items)

        def finish(i: int, value: Any) -> None:
            results[i] = value
            if on_done is not None:
                on_done(i, value)

        if self.workers == 1 or len(items) <= 1:
            for i, item in enumerate(items):
                try:
                    value = fn(item)
                except Exception as exc:  # one failed item must not stop the others
                    value = TaskFailed(i, describe_exception(exc), traceback.format_exc())
                finish(i, value)
            return results

        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=min(self.workers, len(items)), mp_context=_mp_context()) as pool:
            futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
            for future in as_completed(futures):
                i = futures[future]
                error = future.exception()
                if error is None:
                    finish(i, future.result())
                else:
                    tb = "".join(traceback.format_exception(error))
                    finish(i, TaskFailed(i, describe_exception(error), tb))
        return results


class RayExecutor(Executor):
    """One ``@ray.remote(num_cpus=1)`` task per item.

    ``address`` joins an existing cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``); without it a
    local Ray is started with ``num_cpus`` CPUs (default: all), no dashboard, and this process's ``sys.path``
    as the workers' ``PYTHONPATH``. A Ray that is already
    initialised in this process is used as is. ``close()`` shuts down only a Ray this executor started.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        if num_cpus is not None and num_cpus < 1:
            raise InputError(f"num_cpus must be at least 1, got {num_cpus}", field="num_cpus")
        if address is not None and num_cpus is not None:
            raise InputError(
                "--workers/num_cpus applies to a local Ray only; a cluster at --address has its own CPUs",
                field="num_cpus",
            )
        self.address = address
        self.num_cpus = num_cpus
        self._started = False

    @staticmethod
    def _import_ray():
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            import ray
        except ImportError:
            raise InputError(
                "the ray executor needs Ray: pip install 'gpuweave[ray]' (or use --executor local)", field="executor"
            ) from None
        return ray

    def _ensure(self):
        ray = self._import_ray()
        if ray.is_initialized():
            return ray
        if self.address:  # bounded in time; one InputError naming the address (gpuweave.local_ray)
            join_ray(self.address, log_to_driver=False)
            self._started = True
            return ray
        # Local workers import what this process imports (e.g. a runner defined next to a script).
        pythonpath = os.pathsep.join(p for p in sys.path if p)
        try:
            start_local_ray(
                num_cpus=self.num_cpus, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": pythonpath}}
            )
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError or its own error types
            raise InputError(f"cannot start a local Ray: {describe_exception(exc)}", field="executor") from None
        self._started = True
        return ray

    def map(self, fn, items, on_done=None):
        items = list(items)
        results: list[Any] = [None] * len(items)
        if not items:
            return results
        ray = self._ensure()
        remote = ray.remote(num_cpus=1)(fn)
        pending = {remote.remote(item): i for i, item in enumerate(items)}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                try:
                    value = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None) or exc
                    value = TaskFailed(i, _last_line(describe_exception(cause)), _ANSI.sub("", str(exc)))
                except ray.exceptions.RayError as exc:  # worker crashed, node died, object lost
                    value = TaskFailed(i, _last_line(describe_exception(exc)), _ANSI.sub("", str(exc)))
                results[i] = value
                if on_done is not None:
                    on_done(i, value)
        return results

    def close(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False


def make_executor(kind: str, *, workers: int | None = None, address: str | None = None) -> Executor:
    """The sweep executor registered as ``kind`` (:data:`gpuweave.executors.EXECUTORS`; ``local`` or ``ray``
    built in). ``workers`` = processes, or the CPUs of a local Ray."""
    sweeping = executor_names(sweeps=True)
    if kind not in EXECUTORS:
        raise InputError(f"unknown executor {kind!r} (expected {spoken(sweeping)})", field="executor")
    entry = executor_kind(kind)
    if entry.sweep is None:
        raise InputError(f"the {kind} executor cannot run sweep cells (expected {spoken(sweeping)})", field="executor")
    if address and not entry.takes_address:
        joining = [name for name in sweeping if executor_kind(name).takes_address]
        raise InputError(f"--address needs --executor {spoken(joining)}", field="address")
    return entry.sweep(workers, address)
