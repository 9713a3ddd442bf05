"""A fingerprint of the installed gpuweave code and bundled data, stamped into every run's summary.json.

Problem: a sweep reuses a finished run when its config hash matches, but a run made by an older simulator or
policy would then be reused silently after the code changed. The fingerprint is a SHA-256 over the relative
path and bytes of every source and data file of the package (``.py``, ``.toml``, ``.csv``, ``.yaml``,
``.json``, ``.c``; caches skipped), so a sweep reruns exactly the cells whose stamp differs.

Complexity: O(package size), about 2 MB, read once per process (cached).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

SUFFIXES = (".py", ".toml", ".csv", ".yaml", ".json", ".c")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(
        p for p in root.rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts and p.is_file()
    ):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
