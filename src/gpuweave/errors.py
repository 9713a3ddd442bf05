"""One error type for bad user input.

Every reader, validator and CLI command raises :class:`InputError` for input a user can fix.
The CLI turns it into a single line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad input: names the file, the row and the field, and what was expected.

    ``row`` is 1-based and counts data rows (the header is row 0) for tables, or lines for
    text formats; the message says which.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.row = row
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field:
            where.append(f"field '{self.field}'")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class MissingProfileError(InputError):
    """A throughput/time profile needed by a simulation is not in the profile store."""


class InvalidDecisionError(RuntimeError):
    """A scheduling policy returned a decision that breaks the simulator's rules (a bug in the policy)."""
