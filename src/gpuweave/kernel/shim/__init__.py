"""Build helper for the FIKIT C preload shim (``fikit_shim.c``; spec §1.2, §4.4 path 2).

Problem: users with a GPU need the kernel-level hook as a shared library; building it must not
need CUDA headers, a GPU or anything beyond a C compiler.

:func:`build_shim` compiles ``fikit_shim.c`` with ``$CC`` (else ``cc``, ``gcc`` or ``clang``) as
``cc -shared -fPIC -O2 -fvisibility=hidden -o libfikit_shim.so fikit_shim.c -ldl -pthread`` into a
directory and returns the library path; the compile writes a temporary file that is renamed into
place, so concurrent builds never expose a half-written library. Use it as
``LD_PRELOAD=/path/libfikit_shim.so FIKIT_PRIORITY=0 your-cuda-program``; see ``docs/fikit-shim.md``.
Complexity: one compiler run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from gpuweave.errors import InputError

LIB_NAME = "libfikit_shim.so"
SOURCE = Path(__file__).with_name("fikit_shim.c")


def find_compiler() -> str | None:
    """The C compiler to use: ``$CC`` if set (its first word must exist), else cc, gcc or clang."""
    env = os.environ.get("CC", "").strip()
    if env:
        return env if shutil.which(shlex.split(env)[0]) else None
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def compile_command(out: Path, cc: str | None = None) -> list[str]:
    cc = cc or find_compiler() or "cc"
    return [
        *shlex.split(cc),
        "-shared",
        "-fPIC",
        "-O2",
        "-fvisibility=hidden",
        "-o",
        str(out),
        str(SOURCE),
        "-ldl",
        "-pthread",
    ]


def build_shim(out_dir: str | Path, cc: str | None = None, timeout_s: float = 120.0) -> Path:
    """Compile the shim into ``out_dir`` (created if needed) and return the ``.so`` path (absolute).

    Raises InputError when no C compiler is found or the compile fails (with the compiler's last lines).
    """
    cc = cc or find_compiler()
    if cc is None:
        raise InputError("no C compiler found: install cc/gcc/clang or set CC to build the FIKIT shim")
    out_dir = Path(out_dir).expanduser().resolve()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create output directory: {exc.strerror}", file=out_dir) from None
    dest = out_dir / LIB_NAME
    fd, tmp_name = tempfile.mkstemp(prefix=".libfikit_shim.", suffix=".so", dir=out_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            proc = subprocess.run(compile_command(tmp, cc), capture_output=True, text=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"cannot run the C compiler {cc!r}: {exc}") from None
        if proc.returncode != 0:
            tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])[:400]
            raise InputError(f"compiling the FIKIT shim failed (exit {proc.returncode}): {tail}")
        tmp.chmod(0o755)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def preload_line(lib: str | Path, scheduler: str = "127.0.0.1:47800", priority: int = 0) -> str:
    """The shell line to run a CUDA program under the shim."""
    return (
        f"LD_PRELOAD={shlex.quote(str(lib))} FIKIT_SCHEDULER={scheduler} FIKIT_PRIORITY={priority} "
        f"FIKIT_MODE=share <your CUDA program>"
    )
