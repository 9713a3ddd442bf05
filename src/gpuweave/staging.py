"""Write a result directory all at once: nothing that looks complete is left behind by a failure.

``with staged_directory(final) as tmp:`` yields a fresh directory beside ``final``; files are written
there and, only if the block finishes, ``final`` is replaced by it in one rename. On any exception the
staging directory is removed and ``final`` is left as it was.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from gpuweave.files import prepare_output_dir


@contextmanager
def staged_directory(final: str | Path) -> Iterator[Path]:
    final = prepare_output_dir(final, field="out", create=False)  # InputError if a file is in the way
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        yield staging
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
