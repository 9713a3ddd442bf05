"""Import the modules that register commands, reproductions or demo sections.

A listed module that does not exist (yet) is skipped; an import error *inside* an existing module is
raised, so a broken module never disappears silently.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def import_if_present(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if name == missing or name.startswith(missing + "."):
            return None
        raise
