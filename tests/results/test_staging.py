"""Result directories are replaced in three renames (issue 13, item 6): a kill at any point loses no result, the
next run cleans what a dead run left, and permissions follow the umask."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuweave.errors import InputError
from gpuweave.staging import staged_directory

ROOT = Path(__file__).resolve().parents[2]


def _result(path: Path, value: str) -> None:
    (path / "summary.json").write_text(json.dumps({"value": value}))


def _value(path: Path) -> str:
    return json.loads((path / "summary.json").read_text())["value"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _leftovers(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


def test_replace_keeps_nothing_but_the_new_result(tmp_path):
    final = tmp_path / "run"
    with staged_directory(final) as staging:
        _result(staging, "old")
    with staged_directory(final) as staging:
        assert staging.name.startswith(".run.new.") and _value(final) == "old"  # the old one stays until the end
        _result(staging, "new")
    assert _value(final) == "new" and _leftovers(tmp_path, "run") == []


def test_a_failed_run_leaves_the_old_result(tmp_path):
    final = tmp_path / "run"
    with staged_directory(final) as staging:
        _result(staging, "old")
    with pytest.raises(RuntimeError):
        with staged_directory(final) as staging:
            _result(staging, "half")
            raise RuntimeError("boom")
    assert _value(final) == "old" and _leftovers(tmp_path, "run") == []


KILLER = """
import os, signal, sys
from pathlib import Path
from gpuweave.staging import staged_directory

real_rename = Path.rename
def rename(self, target):
    real_rename(self, target)
    if ".old." in Path(target).name:  # the old result is aside, the new one not yet in: die here
        os.kill(os.getpid(), signal.SIGKILL)
    return Path(target)
Path.rename = rename
with staged_directory(sys.argv[1]) as staging:
    (staging / "summary.json").write_text('{"value": "new"}')
"""


def test_a_kill_between_the_renames_loses_nothing(tmp_path):
    final = tmp_path / "run"
    with staged_directory(final) as staging:
        _result(staging, "old")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, "-c", KILLER, str(final)], env=env, capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    assert not final.exists()
    left = _leftovers(tmp_path, "run")
    assert len(left) == 2 and any(".old." in n for n in left) and any(".new." in n for n in left)
    # the next run restores the old result before it starts; if it fails, the old result is what remains
    with pytest.raises(RuntimeError):
        with staged_directory(final):
            assert _value(final) == "old"
            raise RuntimeError("this run fails too")
    assert _value(final) == "old" and _leftovers(tmp_path, "run") == []


def test_stale_staging_directories_are_cleaned_only_when_their_run_is_gone(tmp_path):
    dead, alive = _dead_pid(), os.getppid()
    for name in (f".run.new.{dead}.aaaa", f".run.new.{alive}.bbbb", ".run.old12345", ".run.legacy01", ".runner.x"):
        (tmp_path / name).mkdir()
    old = time.time() - 7200
    os.utime(tmp_path / ".run.legacy01", (old, old))  # a pre-0.2 staging directory, hours old
    with staged_directory(tmp_path / "run") as staging:
        _result(staging, "new")
    assert _leftovers(tmp_path, "run") == [f".run.new.{alive}.bbbb", ".run.old12345"]
    assert (tmp_path / ".runner.x").is_dir()  # another result's name is not touched


@pytest.mark.parametrize("mask", [0o002, 0o022, 0o077])
def test_permissions_follow_the_umask(tmp_path, mask):
    saved = os.umask(mask)
    try:
        with staged_directory(tmp_path / f"run{mask}") as staging:
            _result(staging, "x")
    finally:
        os.umask(saved)
    assert (tmp_path / f"run{mask}").stat().st_mode & 0o777 == 0o777 & ~mask


def test_a_directory_of_other_files_is_not_replaced(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match="not a gpuweave result directory"):
        with staged_directory(home):
            pytest.fail("the block must not run")
    assert (home / "thesis.tex").read_text() == "years of work"
    (tmp_path / "empty").mkdir()
    with staged_directory(tmp_path / "empty") as staging:  # an empty directory may become a result
        _result(staging, "x")
    assert _value(tmp_path / "empty") == "x"
