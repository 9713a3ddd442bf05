"""Reading user files and preparing output paths, with one-line :class:`InputError`s.

Every command that reads a file the user names, or writes to a path the user names, goes through these
helpers, so that a missing file, a directory where a file was expected, an unreadable or non-UTF-8 file,
malformed or hostile JSON/YAML, or an output path under a regular file all end as one line naming the path,
never a traceback. This is the one module that parses JSON and YAML input (``tests/test_hardening.py`` checks
that no other module calls ``json.loads``/``yaml.safe_load`` on user input):

- a file's size is checked before it is read (limits ``input_mb``, and ``yaml_mb`` for YAML);
- JSON is strict: ``NaN`` and ``Infinity`` are not numbers; an integer of more than 4300 digits, nesting deeper
  than the interpreter can parse (``RecursionError``) or more memory than there is (``MemoryError``) become one
  line;
- after parsing, the document's nesting depth (limit ``json_depth``) and, for YAML, its size with every alias
  expanded (limit ``yaml_nodes``: a "billion laughs" document is a few lines that expand to 10^9 values) are
  checked without recursion.

Complexity: O(size of the document).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gpuweave.errors import InputError
from gpuweave.limits import check_limit, limit

_CHUNK = 1 << 20


_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISDIR, "a directory"),
)


def file_kind(mode: int) -> str:
    """What a file of ``stat`` mode ``mode`` is, in words ("a regular file", "a named pipe (FIFO)", ...)."""
    return next(
        (words for test, words in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "not a file"
    )


def check_regular_file(path: str | Path, *, what: str = "file", field: str | None = None) -> Path:
    """``path`` if it names a regular file (symbolic links followed); one InputError for a missing file, a directory,
    a named pipe, a socket or a device. Checked with ``stat``, before anything opens the path: opening a FIFO blocks
    until a writer comes, so a FIFO given as a trace hung the command. O(1)."""
    file = Path(path)
    try:
        mode = os.stat(file).st_mode
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=file, field=field) from None
    except PermissionError:
        raise InputError(f"cannot read the {what}: permission denied", file=file, field=field) from None
    except ValueError:  # an embedded NUL
        raise InputError("a file name cannot contain a NUL character", field=field) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", file=file, field=field) from None
    if not stat.S_ISREG(mode):
        raise InputError(f"expected a {what}, got {file_kind(mode)}", file=file, field=field)
    return file


def _read_bytes(file: Path, what: str, limit_name: str) -> bytes:
    """At most the limit's bytes of regular file ``file``, read in chunks so that a file that grows is refused early.

    The kind of file is checked before it is opened (:func:`check_regular_file`), and again on the open descriptor
    (opened non-blocking, so a file swapped for a FIFO in between cannot block)."""
    check_regular_file(file, what=what)
    cap = limit(limit_name) * 1024 * 1024
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb", closefd=True) as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"expected a {what}, got {file_kind(mode)}", file=file)
        os.set_blocking(fd, True)
        size = os.fstat(fd).st_size
        check_limit(limit_name, (size + 1024 * 1024 - 1) // (1024 * 1024), f"{what} of {size:,} bytes", file=file)
        return _read_capped(fh, cap, limit_name, what, file)


def _read_capped(stream: Any, cap: int, limit_name: str, what: str, source: str | Path) -> bytes:
    """All of binary ``stream``, in chunks, refused (limit ``limit_name``) as soon as it passes ``cap`` bytes: a
    file that grows while read, or a pipe, never fills memory first."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > cap:
            check_limit(limit_name, total // (1024 * 1024) + 1, f"{what} of more than {cap:,} bytes", file=source)
        chunks.append(chunk)
    return b"".join(chunks)


def read_input_bytes(path: str | Path, *, what: str = "file", limit_name: str = "input_mb") -> bytes:
    """The bytes of regular file ``path``, at most limit ``limit_name`` MB; InputError for every way reading can
    fail, and for a path that is not a regular file (a FIFO, socket or device is never opened)."""
    file = Path(path)
    try:
        return _read_bytes(file, what, limit_name)
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=file) from None
    except IsADirectoryError:
        raise InputError(f"expected a {what}, got a directory", file=file) from None
    except PermissionError:
        raise InputError(f"cannot read the {what}: permission denied", file=file) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", file=file) from None
    except MemoryError:
        raise InputError(f"not enough memory to read the {what}", file=file) from None


def read_input_text(path: str | Path, *, what: str = "file", limit_name: str = "input_mb") -> str:
    """The UTF-8 text of ``path`` (a BOM is dropped); InputError for every way reading can fail."""
    return decode_text(read_input_bytes(path, what=what, limit_name=limit_name), source=path)


def decode_text(data: bytes, *, source: str | Path | None) -> str:
    """``data`` as UTF-8 text (a BOM dropped); text in another encoding (latin-1, UTF-16) is one InputError naming
    the first byte that is not UTF-8, never a ``UnicodeDecodeError`` or text with surrogates."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=source) from None


STDIN = "<stdin>"


def read_stdin_text(*, what: str = "standard input", limit_name: str = "input_mb", stream: Any = None) -> str:
    """Standard input (``-`` on the command line) as UTF-8 text, read as bytes whatever the locale says (a C locale
    gives ``sys.stdin`` surrogate escapes, which fail later, far from here), at most limit ``limit_name`` MB; what
    is not UTF-8 is one InputError naming ``<stdin>`` and the byte. ``stream``: a binary stream (tests)."""
    import sys

    source = stream if stream is not None else getattr(sys.stdin, "buffer", None)
    if source is None:
        raise InputError(f"no {what} to read", file=STDIN)
    try:
        data = _read_capped(source, limit(limit_name) * 1024 * 1024, limit_name, what, STDIN)
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", file=STDIN) from None
    return decode_text(data, source=STDIN)


# --------------------------------------------------------------------------- CSV tables
def csv_rows(lines: Iterable[str], *, file: str | Path | None) -> Iterator[list[str]]:
    """``csv.reader`` over ``lines``, its ``csv.Error`` an InputError naming the file and the record (the header is
    row 0, every record after it counts, blank ones too): a field past the csv module's 131,072-character limit, a
    NUL byte or a stray quote is one line, not a traceback. O(size of the text).

    A NUL is refused here: the csv module of Python 3.11 and later reads it as data (3.10 refused it), and a table
    with one is a binary file or a damaged one, not text to schedule from."""
    import csv

    nul = False

    def checked(source: Iterable[str]) -> Iterator[str]:
        nonlocal nul
        for line in source:
            if "\0" in line:
                nul = True
            yield line

    reader = csv.reader(checked(lines))  # reads a record's lines as it parses it, never ahead
    row = 0
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", file=file, row=row) from None
        if nul:
            raise InputError(NUL_IN_CSV, file=file, row=row)
        yield record
        row += 1


#: the message for a NUL character in a CSV table (every reader: :func:`csv_rows`, ``read_csv_strings``)
NUL_IN_CSV = "malformed CSV: a NUL character (is it a binary file?)"


def csv_dicts(
    lines: Iterable[str], *, file: str | Path | None, restval: str | None = None
) -> tuple[list[str], Iterator[dict[str, str | None]]]:
    """The header of a CSV table (its names checked by :func:`check_unique_columns`) and its data records as
    dicts keyed by the header's names, read through :func:`csv_rows` (so what the csv module cannot parse is an
    InputError): blank records are skipped, a short record's missing cells are ``restval`` and cells past the
    header are dropped. The header is read at once, the records as they are iterated. O(size of the text)."""
    records = csv_rows(lines, file=file)
    header = next(records, [])
    check_unique_columns([name.strip() for name in header], file=file)
    width = len(header)

    def rows() -> Iterator[dict[str, str | None]]:
        for record in records:
            if record:
                row: dict[str, str | None] = dict(zip(header, record))
                for name in header[len(record) : width]:
                    row[name] = restval
                yield row

    return header, rows()


def check_column_count(count: int, *, file: str | Path | None, what: str = "columns in the header") -> None:
    """Limit ``table_columns`` on a table's header, checked before its rows are parsed: a header of 10^6 fields
    made pandas (``report``) and the sacct reader take minutes to hours. O(1)."""
    check_limit("table_columns", count, what, file=file, row=0)


def check_unique_columns(header: list[str], *, file: str | Path | None) -> None:
    """A CSV header of more columns than limit ``table_columns``, or that names a column twice, is refused (row 0,
    the name as field): a reader would take one of the two silently (``csv.DictReader`` the last, a lookup by index
    the first, pandas renames the second ``name.1``), so which value a row holds would depend on the reader. Empty
    names are not checked. O(columns)."""
    check_column_count(len(header), file=file)
    seen: set[str] = set()
    for name in header:
        if name and name in seen:
            raise InputError(f"column '{name}' appears twice in the header", file=file, row=0, field=name)
        seen.add(name)


def first_csv_row(text: str, comment: str | None = "#", *, file: str | Path | None = None) -> list[str]:
    """The first record of CSV ``text`` (its header) with blank lines and, with ``comment``, the text after a
    comment character skipped, names stripped; [] when there is none. For the readers that parse with pandas, so it
    also refuses a NUL anywhere in ``text`` (:data:`NUL_IN_CSV`, the row counted in lines, the header's is 0), which
    pandas would read as data or as the end of a cell."""
    import csv

    nul = text.find("\0")
    if nul >= 0:
        raise InputError(NUL_IN_CSV, file=file, row=text.count("\n", 0, nul))
    for line in text.lstrip("\ufeff").splitlines():
        if comment is not None:
            line = line.split(comment, 1)[0]
        if line.strip():
            try:
                return [name.strip() for name in next(csv.reader([line]))]
            except csv.Error:  # e.g. a name past the csv module's field limit: the caller's own parser decides
                return []
    return []


# --------------------------------------------------------------------------- JSON and YAML documents
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number in JSON")


def parse_json(text: str | bytes, *, source: str | Path | None = None, what: str = "JSON") -> Any:
    """Parse JSON text strictly; every failure (syntax, NaN/Infinity, huge integers, nesting, memory) and a
    document deeper than limit ``json_depth`` becomes one InputError naming ``source`` and the line."""
    import json

    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (line {exc.lineno})", file=source, row=exc.lineno) from None
    except RecursionError:
        raise InputError(
            f"not valid JSON: nested deeper than the parser allows (the limit json_depth is {limit('json_depth')})",
            file=source,
        ) from None
    except MemoryError:
        raise InputError(f"not enough memory to parse the {what}", file=source) from None
    except (ValueError, UnicodeDecodeError) as exc:  # NaN/Infinity, integers of more than 4300 digits, bad bytes
        raise InputError(f"not valid JSON: {_value_error(exc)}", file=source) from None
    check_document(data, source=source, what=what)
    return data


def load_json(path: str | Path, *, what: str = "file") -> Any:
    """Parse a JSON file (see :func:`parse_json`); a syntax error names the line (``row``)."""
    return parse_json(read_input_bytes(path, what=what), source=path, what=what)


_LOADER: Any = None


def _yaml_loader():
    """The safe loader (libyaml's when there is one: fast, and it bounds flow nesting itself) that refuses a mapping
    naming a key twice: PyYAML keeps the last value silently, so ``{count: 2, count: 200}`` meant whichever the
    reader took. Keys merged in with ``<<`` may be overridden, as YAML says."""
    global _LOADER
    if _LOADER is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class UniqueKeyLoader(base):
            def construct_mapping(self, node, deep=False):
                if isinstance(node, yaml.MappingNode):
                    _refuse_duplicate_keys(self, node)
                return super().construct_mapping(node, deep=deep)

        _LOADER = UniqueKeyLoader
    return _LOADER


def _refuse_duplicate_keys(loader: Any, node: Any) -> None:
    """ConstructorError at the second occurrence of a key of mapping ``node`` (merge keys left out). O(keys)."""
    import yaml

    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:  # an unhashable key: the constructor refuses it itself
            continue
        if duplicate:
            shown = repr(key)
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {shown if len(shown) <= 60 else shown[:57] + '...'}",
                key_node.start_mark,
            )
        seen.add(key)


def parse_yaml(text: str, *, source: str | Path | None = None, what: str = "YAML") -> Any:
    """Parse YAML text safely (no Python objects); every failure becomes one InputError with the line, and the
    document is checked against limits ``json_depth`` and ``yaml_nodes`` (aliases expanded)."""
    import yaml

    try:
        data = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        problem = " ".join(str(problem).split())
        raise InputError(
            f"not valid YAML: {problem}", file=source, row=mark.line + 1 if mark is not None else None
        ) from None
    except RecursionError:
        raise InputError(
            f"not valid YAML: nested deeper than the parser allows (the limit json_depth is {limit('json_depth')})",
            file=source,
        ) from None
    except MemoryError:
        raise InputError(f"not enough memory to parse the {what}", file=source) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a bad timestamp, an integer of more than 4300 digits
        raise InputError(f"not valid YAML: {_value_error(exc)}", file=source) from None
    check_document(data, source=source, what=what, count_nodes=True)
    return data


def parse_yaml_text(
    text: str, *, source: str | Path | None = None, what: str = "YAML", limit_name: str = "yaml_mb"
) -> Any:
    """:func:`parse_yaml` after the size check :func:`load_yaml` makes of a file (limit ``limit_name`` MB, its
    UTF-8 bytes counted): what a writer checks of the text it is about to write. O(size of the text)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    check_limit(limit_name, (size + 1024 * 1024 - 1) // (1024 * 1024), f"{what} of {size:,} bytes", file=source)
    return parse_yaml(text, source=source, what=what)


def load_yaml(path: str | Path, *, what: str = "file") -> Any:
    """Parse a YAML file (see :func:`parse_yaml`); a syntax error becomes one line with the line number."""
    text = read_input_text(path, what=what, limit_name="yaml_mb")
    return parse_yaml(text, source=path, what=what)


def check_document(data: Any, *, source: str | Path | None = None, what: str = "document", count_nodes: bool = False):
    """Raise InputError when ``data`` nests deeper than limit ``json_depth`` or (``count_nodes``) holds more than
    limit ``yaml_nodes`` values once shared sub-documents (YAML aliases) are counted at every place they appear.

    Iterative, and memoised by object identity, so a shared sub-document is walked once: O(distinct nodes).
    """
    max_depth = limit("json_depth")
    depth_of: dict[int, int] = {}  # id -> depth below this node (for shared nodes)
    size_of: dict[int, int] = {}  # id -> values in this node, aliases expanded
    visiting: set[int] = set()  # containers on the current path: seeing one again means the document is cyclic
    stack: list[tuple[Any, int, bool]] = [(data, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > max_depth:
            check_limit("json_depth", depth, f"nesting depth of the {what}", file=source)
        children = _children(node)
        if children is None:
            continue
        key = id(node)
        if done:
            visiting.discard(key)
            depth_of[key] = 1 + max((depth_of.get(id(c), 0) for c in children), default=0)
            size_of[key] = 1 + sum(size_of.get(id(c), 1) for c in children)
            continue
        if key in visiting:
            raise InputError(f"the {what} refers to itself (a YAML alias inside its own anchor)", file=source)
        if key in depth_of:
            if depth + depth_of[key] - 1 > max_depth:
                check_limit("json_depth", depth + depth_of[key] - 1, f"nesting depth of the {what}", file=source)
            continue
        visiting.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children)
    if count_nodes:
        total = size_of.get(id(data), 1)
        check_limit("yaml_nodes", total, f"values in the {what} with its aliases expanded", file=source)


def _value_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if "integer string conversion" in text:
        return "an integer of more than 4300 digits"
    return text[:160]


def _children(node: Any) -> list[Any] | None:
    if isinstance(node, dict):
        return [*node.keys(), *node.values()]
    if isinstance(node, (list, tuple, set)):
        return list(node)
    return None


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
    _check_not_special(path, field)
    _check_parents(path, field)
    _mkdir(path.parent, path, field)
    _check_writable(path.parent, path, field)
    return path


def _check_not_special(path: Path, field: str | None) -> None:
    """An existing ``path`` that is a FIFO, socket or device is not written over: opening a FIFO blocks, and a
    write-then-rename would replace ``/dev/null`` itself."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise InputError(f"exists and is {file_kind(mode)}; expected a file path to write", file=path, field=field)


def _check_writable(directory: Path, target: Path, field: str | None) -> None:
    """Create and remove a probe file in ``directory``: a directory where no file can be made (``/proc``, a
    read-only mount, one without write permission) is one line now, not a traceback from the writer later."""
    import tempfile

    try:
        handle, probe = tempfile.mkstemp(prefix=".gpuweave-probe.", dir=directory)
    except OSError as exc:
        why = "permission denied" if isinstance(exc, PermissionError) else exc.strerror or str(exc)
        raise InputError(f"cannot write in '{directory}': {why}", file=target, field=field) from None
    os.close(handle)
    try:
        os.unlink(probe)
    except OSError:
        pass


def prepare_output_dir(path: str | Path, *, field: str | None = None, create: bool = True) -> Path:
    """Check that ``path`` is (or can become) a directory, and create it unless ``create`` is False."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError("is a file; expected a directory for the results", file=path, field=field)
    _check_parents(path, field)
    _mkdir(path if create else path.parent, path, field)
    _check_writable(path if create else path.parent, path, field)
    return path


IMAGE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg")


#: Linux's NAME_MAX and PATH_MAX: longer names make every file call fail with "File name too long"
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4095


def check_path(value: Any, *, file: str | Path | None = None, field: str | None = None) -> str:
    """A path named inside an input file (a trace, a cluster, an output directory): a non-empty string without
    NUL characters whose parts fit the filesystem's limits. Refused as one line instead of a ``ValueError``
    (embedded NUL) or an ``OSError`` (name too long) from the first file call that meets it."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected a file or directory name, got {value!r}"[:120], file=file, field=field)
    if "\0" in value:
        raise InputError("a file name cannot contain a NUL character", file=file, field=field)
    encoded = value.encode("utf-8", "surrogateescape")
    if len(encoded) > MAX_PATH_BYTES or any(len(part) > MAX_NAME_BYTES for part in encoded.split(b"/")):
        raise InputError(
            f"file name too long ({len(encoded)} bytes; at most {MAX_NAME_BYTES} per part)", file=file, field=field
        )
    return value


def safe_name(
    name: Any,
    *,
    suffix: str = "",
    field: str | None = None,
    file: str | Path | None = None,
    row: int | None = None,
) -> str:
    """``name`` (read from input: a trace, workload or job name) checked to be usable as one plain file name with
    ``suffix`` appended: a name that is not a non-empty string, holds a path separator (``/``, a backslash), a NUL
    or another control character, starts with ``.`` (``..``, ``.``, hidden files) or is too long for the
    filesystem is one InputError naming ``field`` (and ``file``/``row``: where the name was read). For readers that
    check names as they read them; :func:`safe_child` makes the path. O(len(name))."""
    where: dict[str, Any] = {"file": file, "row": row, "field": field}
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"expected a name, got {name!r}"[:120], **where)
    shown = repr(name if len(name) <= 60 else name[:57] + "...")
    if "/" in name or "\\" in name:
        raise InputError(f"the name {shown} contains a path separator; it cannot be a file name", **where)
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InputError(f"the name {shown} contains a control character; it cannot be a file name", **where)
    if name.startswith("."):
        raise InputError(f"the name {shown} starts with '.'; it cannot be a file name", **where)
    encoded = (name + suffix).encode("utf-8", "surrogateescape")
    if len(encoded) > MAX_NAME_BYTES:
        raise InputError(
            f"the name {shown} is too long for a file name ({len(encoded)} bytes; at most {MAX_NAME_BYTES})", **where
        )
    return name


def safe_child(
    directory: str | Path,
    name: Any,
    *,
    suffix: str = "",
    field: str | None = None,
    file: str | Path | None = None,
    row: int | None = None,
) -> Path:
    """``directory / (name + suffix)`` for a ``name`` read from input, checked by :func:`safe_name` and, as a last
    guard, that the path stays a direct entry of ``directory``. The one way such names become paths: a crafted
    ``../../evil`` in a data file must not read or write outside the folder it belongs to. O(len(name))."""
    safe_name(name, suffix=suffix, field=field, file=file, row=row)
    base = os.path.normpath(os.path.abspath(directory))
    child = os.path.normpath(os.path.join(base, name + suffix))
    if os.path.dirname(child) != base:
        raise InputError(f"the name {name!r} would leave the directory {directory}", file=file, row=row, field=field)
    return Path(directory) / (name + suffix)
