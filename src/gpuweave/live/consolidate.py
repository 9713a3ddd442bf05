"""HadarE consolidation: the step-weighted average of forked copies' checkpoints.

Problem (Hadar paper Sec. V, HadarE): copies of one job train from the same checkpoint on separate nodes; at a
round's end their parameters are merged as ``sum_i w_i * theta_i / sum_i w_i`` with ``w_i`` the steps copy i did.
Floating-point tensors are averaged in float64 and cast back; integer buffers (e.g. BatchNorm's step counter) are
taken from the copy that did the most steps. Synthetic workers' JSON checkpoints carry only steps.
Complexity: O(copies x parameters).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def weighted_state_dict(states: list[dict[str, Any]], weights: list[float]) -> dict[str, Any]:
    """The step-weighted average of ``state_dict``s with the same keys (weights need not sum to 1)."""
    import torch  # torch is optional for the package; only torch jobs consolidate tensors

    total = float(sum(weights))
    if not states or total <= 0:
        raise ValueError("consolidation needs at least one copy with positive steps")
    heaviest = states[max(range(len(states)), key=lambda i: weights[i])]
    merged = {}
    for key, ref in heaviest.items():
        if torch.is_tensor(ref) and ref.is_floating_point():
            acc = sum(state[key].detach().to(torch.float64) * (w / total) for state, w in zip(states, weights))
            merged[key] = acc.to(ref.dtype)
        else:
            merged[key] = ref
    return merged


def consolidate_checkpoints(paths: list[Path], weights: Sequence[float], out: Path) -> None:
    """Merge the copies' checkpoint files into ``out`` (torch ``{"model": ...}`` files or synthetic JSON)."""
    pairs = [(p, w) for p, w in zip(paths, weights) if w > 0 and p.exists()]
    if not pairs:
        return
    tmp = out.with_name(out.name + ".tmp")
    if pairs[0][0].read_bytes()[:1] == b"{":
        tmp.write_text(json.dumps({"steps": int(sum(w for _, w in pairs))}))
    else:
        import torch

        states = [torch.load(p, map_location="cpu")["model"] for p, _ in pairs]
        torch.save({"model": weighted_state_dict(states, [w for _, w in pairs])}, tmp)
    os.replace(tmp, out)
