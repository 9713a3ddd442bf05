"""What fault tests wait for before they break something: a worker's first checkpoint, read from its channel."""

import json
from pathlib import Path


def has_checkpoint(status: Path) -> bool:
    """Whether the worker whose ``status.json`` this is has saved a checkpoint (its ``checkpoint_steps`` > 0)."""
    try:
        return json.loads(status.read_text() or "{}").get("checkpoint_steps", 0) > 0
    except (FileNotFoundError, json.JSONDecodeError):  # not written yet, or caught mid-rename
        return False
