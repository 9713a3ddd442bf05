"""File names made of job ids: one folder per job under a run's ``checkpoints/`` and ``channels/``.

Problem: a job id is any string a trace holds (``x/1``, ``..``, ``Ab``, 300 characters, a NUL byte), and two jobs
must never share a folder: one would resume from the other's checkpoint, or read its progress. Replacing the
characters a file name cannot hold (``x/1`` -> ``x_1``) is not enough, since ``x/1``, ``x_1`` and ``x?1`` then
share one folder, and ``.`` or ``..`` name the folder itself or its parent.

:func:`job_folder_name` keeps a *plain* id as it is (lowercase ASCII letters, digits, ``_``, ``-`` and ``.``, not
starting with ``.`` or ``-``, at most 64 characters), so the folders of ordinary ids (and of runs written by
earlier versions, which a restarted runtime resumes) do not change. Any other id becomes a readable slug of it,
``~`` and 16 hex digits of the SHA-256 of the exact id: ``x/1`` -> ``x_1~<hash>``. A plain name has no ``~``
and a hashed one has, so the two kinds never meet; two hashed names are equal only if the ids' hashes are
(2^-64). Plain names are lowercase, so ``A`` and ``a`` differ on a case-insensitive filesystem too (``A`` is
hashed). Every name is one path component of at most 81 characters: never empty, ``.`` or ``..``.
"""

from __future__ import annotations

import hashlib
import re

_PLAIN = re.compile(r"[a-z0-9_][a-z0-9._-]{0,63}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
SLUG_CHARS = 64
HASH_HEX = 16


def job_folder_name(job_id: str) -> str:
    """One path component for ``job_id``, different for every id (see the module docstring). O(len(job_id))."""
    if _PLAIN.fullmatch(job_id):
        return job_id
    slug = _UNSAFE.sub("_", job_id)[:SLUG_CHARS].lstrip(".-") or "job"
    digest = hashlib.sha256(job_id.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_HEX]
    return f"{slug}~{digest}"
