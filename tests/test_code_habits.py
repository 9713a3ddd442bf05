"""House habits, checked: no function over 80 lines unless its docstring says why.

ruff (line length 120, complexity limit) and import-linter (the layer contracts in pyproject.toml) run in
``make test`` before pytest; this test covers what neither checks.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "gpuweave"
MAX_LINES = 80
REASON = "Long because"  # a docstring that contains this explains why the function is longer


def long_functions() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = node.end_lineno - node.lineno + 1
            if length > MAX_LINES and REASON not in (ast.get_docstring(node) or ""):
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_over_80_lines_without_a_reason():
    assert long_functions() == []
