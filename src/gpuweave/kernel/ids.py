"""Kernel IDs, task keys and priorities (paper §3.2, Fig. 4; spec §1.3, §1.4, R-2, R-3).

Problem: give every kernel launch an identity that repeats within and across runs of the same
task, so that per-kernel statistics measured once can be looked up at sharing time.

A kernel ID is (function name, blockDim xyz, gridDim xyz) and nothing else: no arguments, no
shared-memory size, no stream. Its canonical string (R-2) is
``"{name}|b{bx},{by},{bz}|g{gx},{gy},{gz}"``; an optional extension (e.g. the op-level
path's input shapes) is appended as ``"|x{ext}"``. An unknown name is written ``"?0x…"`` (the host
function pointer; stable within one process only). ``name`` is the *demangled* kernel name as
:func:`clean_kernel_name` writes it, the one form used by the C shim (``__cxa_demangle`` of the
driver's name) and by ``trace import-torch`` (torch.profiler traces carry demangled names).

A task key is ``sha256(exe_basename + "\\0" + "\\0".join(argv))`` (R-3), overridable by the
environment variable ``FIKIT_TASK_KEY``. Priorities are integers 0 (highest) … 9 (lowest).

Complexity: O(len(string)) to build or parse.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpuweave.errors import InputError
from gpuweave.kernel import PRIORITY_LEVELS

_DIMS = re.compile(r"^(\d+),(\d+),(\d+)$")


def _dims(value: object, what: str) -> tuple[int, int, int]:
    if isinstance(value, (int,)) and not isinstance(value, bool):
        value = (value, 1, 1)
    if not isinstance(value, (tuple, list)) or len(value) not in (1, 2, 3):
        raise InputError(f"{what} must be 1 to 3 positive integers, got {value!r}", field=what)
    out = list(value) + [1] * (3 - len(value))
    for v in out:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{what} must be 1 to 3 positive integers, got {value!r}", field=what)
    return (out[0], out[1], out[2])


@dataclass(frozen=True, slots=True)
class KernelId:
    """(function name, block dims, grid dims) of one kernel launch; ``ext`` is an optional extension."""

    name: str
    block: tuple[int, int, int] = (1, 1, 1)
    grid: tuple[int, int, int] = (1, 1, 1)
    ext: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError("kernel name must be a non-empty string", field="name")
        for bad in ("|", "\n", "\r"):
            if bad in self.name or bad in self.ext:
                raise InputError(f"kernel name or extension must not contain {bad!r}: {self.name!r}", field="name")
        object.__setattr__(self, "block", _dims(self.block, "block"))
        object.__setattr__(self, "grid", _dims(self.grid, "grid"))

    def canonical(self) -> str:
        b, g = self.block, self.grid
        s = f"{self.name}|b{b[0]},{b[1]},{b[2]}|g{g[0]},{g[1]},{g[2]}"
        return f"{s}|x{self.ext}" if self.ext else s

    __str__ = canonical

    @classmethod
    def parse(cls, text: str) -> "KernelId":
        """Inverse of :meth:`canonical`; raises InputError on a malformed string."""
        parts = text.split("|") if isinstance(text, str) else []
        if len(parts) not in (3, 4) or not parts[1].startswith("b") or not parts[2].startswith("g"):
            raise InputError(f"malformed kernel id {text!r}: expected 'name|bX,Y,Z|gX,Y,Z[|xEXT]'", field="kernel_id")
        ext = ""
        if len(parts) == 4:
            if not parts[3].startswith("x"):
                raise InputError(f"malformed kernel id {text!r}: extension must start with 'x'", field="kernel_id")
            ext = parts[3][1:]
        dims: list[tuple[int, int, int]] = []
        for p in (parts[1][1:], parts[2][1:]):
            m = _DIMS.match(p)
            if not m:
                raise InputError(f"malformed kernel id {text!r}: bad dims {p!r}", field="kernel_id")
            dims.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
        return cls(parts[0], dims[0], dims[1], ext)


MAX_NAME_BYTES = 900
NAME_KEEP_BYTES = 880


def _fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def clean_kernel_name(raw: str) -> str:
    """A demangled kernel name as it goes into a kernel ID (the C shim's ``clean_name`` does the same).

    Works on the UTF-8 bytes: ``|`` becomes ``/``, bytes outside printable ASCII become ``?``; a name over
    900 bytes keeps its first 880 and gets ``~h`` + the FNV-1a-64 (hex) of the raw bytes, so IDs stay
    under the protocol's 1,024 characters and distinct.
    """
    data = raw.encode("utf-8", "surrogateescape")
    text = "".join("/" if b == 0x7C else chr(b) if 0x20 <= b <= 0x7E else "?" for b in data[:MAX_NAME_BYTES])
    if len(data) > MAX_NAME_BYTES:
        text = f"{text[:NAME_KEEP_BYTES]}~h{_fnv1a64(data):016x}"
    return text


def task_key(exe: str, argv: list[str] | tuple[str, ...], env: Mapping[str, str] | None = None) -> str:
    """Task key of a process (R-3): sha256 of exe basename + NUL + NUL-joined argv; env FIKIT_TASK_KEY wins."""
    override = (os.environ if env is None else env).get("FIKIT_TASK_KEY")
    if override:
        return validate_task_key(override)
    data = os.path.basename(exe) + "\0" + "\0".join(argv)
    return hashlib.sha256(data.encode("utf-8", "surrogateescape")).hexdigest()


_KEY_RE = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")


def validate_task_key(key: object) -> str:
    """A task key is 1–128 characters of ``[A-Za-z0-9_.:-]`` (safe as a file name and in messages)."""
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise InputError(f"task key must be 1-128 characters of [A-Za-z0-9_.:-], got {key!r}", field="task_key")
    return key


def parse_priority(value: object, *, field: str = "priority") -> int:
    """Priority 0 (highest) … 9 (lowest); anything else is an InputError (AC-7)."""
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"-?\d+", text):
            raise InputError(f"priority must be an integer 0-9, got {value!r}", field=field)
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < PRIORITY_LEVELS:
        raise InputError(f"priority must be an integer 0-{PRIORITY_LEVELS - 1} (0 highest), got {value!r}", field=field)
    return value
