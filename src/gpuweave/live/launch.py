"""One live run from a config file: pick the executor, check everything that can be checked, run, write results."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Callable

from gpuweave.errors import InputError
from gpuweave.executors import EXECUTORS, executor_names, spoken
from gpuweave.files import prepare_output_dir
from gpuweave.live.config import LiveConfig, load_live_config
from gpuweave.live.executor import Executor
from gpuweave.live.journal import end_journalled_workers
from gpuweave.live.results import write_live_run
from gpuweave.live.runtime import LiveRuntime
from gpuweave.staging import clean_stale


def make_executor(
    kind: str, address: str | None, config: LiveConfig | None = None, out: Path | None = None
) -> Executor[Any]:
    """The live executor registered as ``kind`` (:data:`gpuweave.executors.EXECUTORS`)."""
    entry = EXECUTORS.get(kind).impl
    if address is not None and not entry.takes_address:
        raise InputError(f"--address is for the {spoken(executor_names(address=True))} executor", field="address")
    executor: Executor[Any] = entry.live(address, config, Path(out or "."))
    return executor


def run_live(
    config_path: Path,
    executor_kind: str | None,
    address: str | None,
    out: Path,
    progress: Callable[[int, int], None] | None = None,
    *,
    replace: bool = False,
) -> dict[str, Any]:
    """Run a live config to the end and write its results; ``progress(done, total)`` is told finished jobs.

    An ``out`` that holds an unfinished run (a journal, no ``summary.json``) is resumed; one that holds a finished
    run is refused unless ``replace`` (then it is deleted first, see :func:`prepare_run_dir`)."""
    config = load_live_config(config_path)
    out = prepare_run_dir(out, replace=replace)
    kind = executor_kind or config.executor.kind
    executor = make_executor(kind, address, config, out)
    # summary.json's config records the executor that ran, not the one the file named (--executor overrides it)
    config = config.model_copy(update={"executor": config.executor.model_copy(update={"kind": kind})})
    runtime = LiveRuntime(config, executor, out, config_dir=Path(config_path).parent)
    runtime.progress = progress
    runtime.run()
    return write_live_run(runtime, out)


#: files that mark a directory as a run: its results (written last) and the journal (written first)
FINISHED_MARKER = "summary.json"
JOURNAL_NAME = "journal.jsonl"


def prepare_run_dir(out: Path, *, replace: bool = False) -> Path:
    """``out`` ready for a live run, before any work starts.

    A finished run there (``summary.json``: its results, or any other gpuweave result) is refused in one line:
    resuming it would find every job done and rewrite its results without the attempts its journal does not
    hold (zeros, an empty ``live.csv``). With ``replace`` a run there, finished or not, is deleted first: the
    workers its journal left running are ended, then the directory is moved aside and removed, so a kill
    midway never leaves half a run behind (:func:`gpuweave.staging.clean_stale`). A directory of other files
    is never deleted. An unfinished run (journal, no ``summary.json``) without ``replace`` is resumed."""
    out = prepare_output_dir(out, field="out", create=False)
    clean_stale(out.resolve())  # a run deleted by a killed --replace: its leftovers go, or it comes back whole
    finished = (out / FINISHED_MARKER).is_file()
    if out.is_dir() and replace and any(out.iterdir()):
        if not finished and not (out / JOURNAL_NAME).is_file():
            raise InputError(
                f"holds files that are not a gpuweave run (no {FINISHED_MARKER} or {JOURNAL_NAME}); "
                "refusing to delete them: choose another --out",
                file=out,
                field="out",
            )
        target = out.resolve()
        if Path.cwd().resolve().is_relative_to(target):
            raise InputError("is (or holds) the current directory; refusing to delete it", file=out, field="out")
        end_journalled_workers(out / JOURNAL_NAME)
        aside = target.parent / f".{target.name}.old.{os.getpid()}.{secrets.token_hex(4)}"
        target.rename(aside)
        shutil.rmtree(aside, ignore_errors=True)
    elif finished:
        what = "a finished run" if (out / JOURNAL_NAME).is_file() else "a gpuweave result"
        raise InputError(
            f"holds {what} ({FINISHED_MARKER}); pass --replace to delete it and run again, or choose another --out",
            file=out,
            field="out",
        )
    return prepare_output_dir(out, field="out", create=True)
