"""Fixtures for the workload tests: the shared reference data and the bundled profile store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuweave.workload.profiles import ProfileStore, load_profiles


def shared_dir() -> Path:
    """The shared reference data: $GPUWEAVE_SHARED, else ../shared beside the repository root."""
    env = os.environ.get("GPUWEAVE_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    data = shared_dir() / "data"
    if not data.is_dir():
        pytest.skip(f"shared reference data not found at {data} (set GPUWEAVE_SHARED to the shared/ directory)")
    return data


@pytest.fixture(scope="session")
def profiles() -> ProfileStore:
    return load_profiles()


def assert_names(exc_info, file: Path | str, row: int, field: str) -> None:
    """The InputError names the file, the row and the field, in its attributes and its one line."""
    error = exc_info.value
    line = error.one_line()
    assert error.file == str(file) and str(file) in line
    assert error.row == row and f"row {row}" in line
    assert error.field == field and f"field '{field}'" in line
    assert "\n" not in line
