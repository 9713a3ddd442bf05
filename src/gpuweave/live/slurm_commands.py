"""Slurm's command-line tools (``sbatch``, ``scontrol``, ``squeue``, ``scancel``, ``sacct``), run with one-line errors.

gpuweave talks to Slurm only through its commands (no ``pyslurm``: the PyPI package does not match Debian's Slurm
22.05). Every failure becomes a :class:`SlurmCommandError` (an :class:`~gpuweave.errors.InputError`, so the CLI
prints one line and exits 2) that names the command and quotes the first line Slurm printed, for example::

    `scontrol show node --oneliner` failed: slurm_load_node error: Unable to contact slurm controller (connect failure)
    `sbatch` not found on PATH: is Slurm installed (Debian: apt-get install slurm-client)?

Every call is timed; :data:`TIMINGS` keeps the seconds spent per command for the runtime's overhead figures.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import defaultdict

from gpuweave.errors import InputError

COMMAND_TIMEOUT_S = 60.0
TIMINGS: dict[str, list[float]] = defaultdict(list)  # "scontrol release" -> seconds of each call


class SlurmCommandError(InputError):
    """A Slurm command is missing, failed or timed out; the message names the command and quotes Slurm."""

    def __init__(self, message: str, *, command: str, output: str = "") -> None:
        self.command = command
        self.output = output
        super().__init__(message)


def first_line(text: str) -> str:
    """Slurm's reason in a command's output: its ``fatal:`` line if any (the lines before it are often retries
    that led there), else the first non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if "fatal:" in line), lines[0] if lines else "")


def _label(args: list[str]) -> str:
    """``scontrol release`` for ``["scontrol", "release", "12"]``: the command and its verb, for timings."""
    words = [args[0]]
    if len(args) > 1 and not args[1].startswith("-") and args[0] in ("scontrol", "sacctmgr"):
        words.append(args[1])
    return " ".join(words)


def run_slurm(
    args: list[str], *, timeout: float = COMMAND_TIMEOUT_S, check: bool = True, env: dict[str, str] | None = None
) -> str:
    """Run one Slurm command; its standard output, or SlurmCommandError (``check``) naming it and Slurm's reason."""
    shown = " ".join(args)
    if shutil.which(args[0]) is None:
        raise SlurmCommandError(
            f"`{args[0]}` not found on PATH: is Slurm installed (Debian: apt-get install slurm-client)?",
            command=shown,
        )
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SlurmCommandError(f"`{shown}` did not answer within {timeout:g} s", command=shown) from None
    finally:
        TIMINGS[_label(args)].append(time.perf_counter() - t0)
    if check and proc.returncode != 0:
        reason = first_line(proc.stderr) or first_line(proc.stdout) or f"exit status {proc.returncode}"
        raise SlurmCommandError(f"`{shown}` failed: {reason}", command=shown, output=proc.stderr)
    return proc.stdout


def try_slurm(args: list[str], *, timeout: float = COMMAND_TIMEOUT_S) -> tuple[bool, str]:
    """Run a Slurm command that may fail for an expected reason: (succeeded, stdout or Slurm's first error line)."""
    try:
        return True, run_slurm(args, timeout=timeout)
    except SlurmCommandError as exc:
        return False, first_line(exc.output) or exc.message
