"""Reading user files and preparing output paths, with one-line :class:`InputError`s.

Every command that reads a file the user names, or writes to a path the user names, goes through these
helpers (or raises the same errors itself), so that a missing file, a directory where a file was
expected, an unreadable or non-UTF-8 file, malformed YAML, or an output path under a regular file all
end as one line naming the path, never a traceback.
"""

from __future__ import annotations

import errno
from pathlib import Path

from gpuweave.errors import InputError


def read_input_text(path: str | Path, *, what: str = "file") -> str:
    """The UTF-8 text of ``path`` (a BOM is dropped); InputError for every way reading can fail."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=file) from None
    except IsADirectoryError:
        raise InputError(f"expected a {what}, got a directory", file=file) from None
    except PermissionError:
        raise InputError(f"cannot read the {what}: permission denied", file=file) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", file=file) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=file) from None


def load_yaml(path: str | Path, *, what: str = "file"):
    """Parse a YAML file; a syntax error becomes one line with the line number (``row``)."""
    import yaml

    text = read_input_text(path, what=what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(
            f"not valid YAML: {problem}", file=path, row=mark.line + 1 if mark is not None else None
        ) from None


def load_json(path: str | Path, *, what: str = "file"):
    """Parse a JSON file; a syntax error becomes one line with the line number (``row``)."""
    import json

    text = read_input_text(path, what=what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (line {exc.lineno})", file=path, row=exc.lineno) from None


def _check_parents(path: Path, field: str | None) -> None:
    """Every existing ancestor of ``path`` must be a directory."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            raise InputError(f"cannot write here: '{parent}' is a file, not a directory", file=path, field=field)


def _mkdir(path: Path, target: Path, field: str | None) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        raise InputError(f"cannot create directory '{path}': permission denied", file=target, field=field) from None
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTDIR):
            raise InputError(
                f"cannot create directory '{path}': a file is in the way", file=target, field=field
            ) from None
        raise InputError(f"cannot create directory '{path}': {exc.strerror or exc}", file=target, field=field) from None


def prepare_output_file(path: str | Path, *, field: str | None = None, suffixes: tuple[str, ...] | None = None) -> Path:
    """Check that a file can be written at ``path`` and create its parent directories.

    ``suffixes`` (lower case, with the dot) restricts the extension, e.g. ``(".png", ".svg", ".pdf")``.
    """
    path = Path(path)
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise InputError(
            f"expected a file name ending in {', '.join(suffixes)}, got '{path.suffix or path.name}'",
            file=path,
            field=field,
        )
    if path.is_dir():
        raise InputError("is a directory; expected a file path to write", file=path, field=field)
    _check_parents(path, field)
    _mkdir(path.parent, path, field)
    return path


def prepare_output_dir(path: str | Path, *, field: str | None = None, create: bool = True) -> Path:
    """Check that ``path`` is (or can become) a directory, and create it unless ``create`` is False."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError("is a file; expected a directory for the results", file=path, field=field)
    _check_parents(path, field)
    _mkdir(path if create else path.parent, path, field)
    return path


IMAGE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg")
