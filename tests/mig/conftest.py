"""The NVML stub of the MIG executor's tests: ``nvml_stub.c`` built as ``libnvidia-ml.so.1``, under the real pynvml.

pynvml loads the library with ``CDLL("libnvidia-ml.so.1")``, so the executor runs in a subprocess whose
``LD_LIBRARY_PATH`` (read by the dynamic loader at process start) points at the stub. The real wrappers come
from nvidia-ml-py when it is installed, else from the copy of nvidia-ml-py that Ray vendors
(``ray._private.thirdparty.pynvml``, same NVIDIA source), made importable as ``pynvml`` by a two-line module.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
STUB_SOURCE = Path(__file__).with_name("nvml_stub.c")
RAY_PYNVML = "ray._private.thirdparty.pynvml.pynvml"
CLI = "from gpuweave.cli import main; main()"


def _pynvml_path(tmp: Path) -> Path | None:
    """A directory to put first on PYTHONPATH so that ``import pynvml`` gives the real NVIDIA wrappers."""
    if importlib.util.find_spec("pynvml") is not None:
        return tmp  # nvidia-ml-py installed: nothing to add
    try:
        found = importlib.util.find_spec(RAY_PYNVML)
    except ModuleNotFoundError:
        found = None
    if found is None:
        return None
    (tmp / "pynvml.py").write_text(
        f"import sys\nfrom {RAY_PYNVML.rsplit('.', 1)[0]} import pynvml as _real\nsys.modules[__name__] = _real\n"
    )
    return tmp


@dataclass(frozen=True)
class NvmlStub:
    """How to run Python against the stub library; ``run`` returns the process and the stub's call log."""

    lib_dir: Path
    pynvml_dir: Path

    def env(self, log: Path, options: dict[str, str | int]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STUB_NVML_")}
        env.update({f"STUB_NVML_{k.upper()}": str(v) for k, v in options.items()})
        env["STUB_NVML_LOG"] = str(log)
        env["LD_LIBRARY_PATH"] = str(self.lib_dir)
        env["PYTHONPATH"] = os.pathsep.join([str(self.pynvml_dir), str(SRC)])
        return env

    def start(self, args: list[str], log: Path, **options: str | int) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, *args],
            env=self.env(log, options),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, args: list[str], log: Path, timeout: float = 120, **options: str | int):
        proc = subprocess.run(
            [sys.executable, *args], env=self.env(log, options), capture_output=True, text=True, timeout=timeout
        )
        return proc, (log.read_text().splitlines() if log.exists() else [])

    def cli(self, cli_args: list[str], log: Path, **options: str | int):
        return self.run(["-c", CLI, *cli_args], log, **options)


@pytest.fixture(scope="session")
def nvml_stub(tmp_path_factory) -> NvmlStub:
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler to build the NVML stub")
    lib_dir = tmp_path_factory.mktemp("nvml-stub")
    subprocess.run(
        [
            gcc,
            "-shared",
            "-fPIC",
            "-O1",
            "-Wall",
            "-Werror",
            "-o",
            str(lib_dir / "libnvidia-ml.so.1"),
            str(STUB_SOURCE),
            "-lpthread",
        ],
        check=True,
    )
    pynvml_dir = _pynvml_path(tmp_path_factory.mktemp("pynvml"))
    if pynvml_dir is None:
        pytest.skip("neither nvidia-ml-py nor Ray's vendored copy of it is installed")
    return NvmlStub(lib_dir, pynvml_dir)
