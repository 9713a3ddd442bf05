"""Write a result directory all at once: nothing that looks complete is left behind by a failure or a kill.

``with staged_directory(final) as tmp:`` yields a fresh directory beside ``final``; files are written there and,
only if the block finishes, ``final`` is replaced in three renames, none of which loses a result:

1. the old ``final`` (if any) is renamed aside to ``.NAME.old.PID.XXXX``;
2. the staging directory ``.NAME.new.PID.XXXX`` is renamed to ``final``;
3. the old one is deleted.

A kill between 1 and 2 leaves no ``final`` but the old result aside, whole; the next run for the same ``final``
(:func:`clean_stale`, called on entry) renames it back before it starts, and deletes the staging and aside
directories of processes that no longer run (including the ``.NAME.XXXXXXXX`` staging directories that
versions before this one left). On an exception the staging directory is removed and ``final`` is left as it was.

The directory gets the permissions a plain ``mkdir`` would (``0777`` less the umask), not ``mkdtemp``'s ``0700``,
so results can be shared with a group. An existing ``final`` is replaced only when it is empty or a result
directory (it holds ``summary.json`` or ``comparison.csv``): pointing ``--out`` at a directory of other files
is refused before any work, instead of deleting them.

Complexity: O(entries beside ``final``) to clean, three renames to replace, O(size of the old result) to delete.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from gpuweave.errors import InputError
from gpuweave.files import prepare_output_dir

#: files that mark a directory as a result gpuweave wrote (and may therefore replace)
RESULT_MARKERS = ("summary.json", "comparison.csv")
#: a staging directory of versions before the three-rename scheme (``mkdtemp(prefix=".NAME.")``)
_LEGACY_SUFFIX = re.compile(r"^[a-z0-9_]{8}$")
#: legacy staging directories are removed only when this old (their owner is unknown)
_LEGACY_AGE_S = 3600.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _sibling(final: Path, kind: str) -> Path:
    return final.parent / f".{final.name}.{kind}.{os.getpid()}.{secrets.token_hex(4)}"


def check_replaceable(final: str | Path, *, field: str = "out") -> Path:
    """``final`` as a Path if it may become (or be replaced by) a result directory; InputError otherwise."""
    final = prepare_output_dir(final, field=field, create=False)  # a file in the way is refused here
    if final.is_dir() and any(final.iterdir()) and not any((final / m).is_file() for m in RESULT_MARKERS):
        raise InputError(
            "exists and is not a gpuweave result directory (no summary.json or comparison.csv); "
            "refusing to replace it: choose another --out or remove it",
            file=final,
            field=field,
        )
    return final


def clean_stale(final: Path) -> None:
    """Before a run writes ``final``: restore an old result a killed run left aside, delete dead runs' leftovers."""
    prefix = f".{final.name}."
    try:
        entries = [p for p in final.parent.iterdir() if p.name.startswith(prefix) and p.is_dir()]
    except OSError:
        return
    asides: list[Path] = []
    for entry in entries:
        rest = entry.name[len(prefix) :]
        parts = rest.split(".")
        if len(parts) == 3 and parts[0] in ("new", "old") and parts[1].isdigit():
            if _alive(int(parts[1])) and int(parts[1]) != os.getpid():
                continue  # a run in progress
            if parts[0] == "old":
                asides.append(entry)
            else:
                shutil.rmtree(entry, ignore_errors=True)
        elif _LEGACY_SUFFIX.match(rest) and time.time() - entry.stat().st_mtime > _LEGACY_AGE_S:
            shutil.rmtree(entry, ignore_errors=True)
    for aside in sorted(asides, key=lambda p: p.stat().st_mtime, reverse=True):
        if not final.exists():
            aside.rename(final)  # killed between "aside" and "in": the old result comes back whole
        else:
            shutil.rmtree(aside, ignore_errors=True)


@contextmanager
def staged_directory(final: str | Path) -> Iterator[Path]:
    final = check_replaceable(final)
    clean_stale(final)
    staging = _sibling(final, "new")
    staging.mkdir()  # 0777 less the umask, like any directory the user makes
    aside: Path | None = None
    try:
        yield staging
        if final.exists():
            aside = _sibling(final, "old")
            final.rename(aside)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if aside is not None and not final.exists():
            aside.rename(final)  # the new result did not go in: the old one stays
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
