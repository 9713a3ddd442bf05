"""Package data of the packs sub-package: the paper's numbers and the SYN-REF generator parameters."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=None)
def _load(name: str) -> dict[str, Any]:
    with resources.files(__name__).joinpath(name).open("rb") as fh:
        return tomllib.load(fh)


def paper_numbers() -> dict[str, Any]:
    """``paper_numbers.toml``: Table 1, the text claims of Section 6.3, workloads and heuristic variants."""
    return _load("paper_numbers.toml")


def synref_params() -> dict[str, Any]:
    """``synref.toml``: the parameters of the spec's SYN-REF generator."""
    return _load("synref.toml")
