"""Whether a job can ever run on a cluster: the one rule the simulator, the live runtime and the service share.

Problem: a job that fits nowhere would wait for ever (a simulation never ends, a service queue never drains), so
every driver refuses it before work starts. A job of ``n`` GPUs can run on a GPU model when the model has ``n``
GPUs in all, its profile source gives a positive rate for ``n`` GPUs of it, and either one node of it holds all
``n`` (the consolidated rate) or the rate spread over nodes is positive; with ideal placement (Gavel's simulator)
every placement runs at the consolidated rate, so one node need not hold them. A GPU-type constraint (the job's
``allowed_models``) leaves the other models out.

Complexity: O(models) rate look-ups per job kind; :func:`capacity_by_model` is O(nodes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gpuweave.errors import MissingProfileError
from gpuweave.hardware.cluster_spec import Node


@dataclass(frozen=True, slots=True)
class ModelCapacity:
    """The GPUs of one model in a cluster: how many in all, and the most on one node."""

    gpus: int
    largest_node: int


def capacity_by_model(nodes: Iterable[Node]) -> dict[str, ModelCapacity]:
    """Each GPU model's capacity, models in first-seen order (nodes of 0 GPUs count for nothing)."""
    gpus: dict[str, int] = {}
    largest: dict[str, int] = {}
    for node in nodes:
        gpus[node.gpu_model] = gpus.get(node.gpu_model, 0) + node.num_gpus
        largest[node.gpu_model] = max(largest.get(node.gpu_model, 0), node.num_gpus)
    return {m: ModelCapacity(gpus[m], largest[m]) for m in gpus}


RateLookup = Callable[[str, str, int, bool], float]  # (job type, GPU model, GPUs, consolidated) -> steps/s


def fits_somewhere(
    job_type: str,
    num_gpus: int,
    capacity: dict[str, ModelCapacity],
    rate: RateLookup,
    ideal_placement: bool,
    allowed_models: Sequence[str] | None = None,
) -> tuple[bool, MissingProfileError | None]:
    """Whether a job of ``job_type`` on ``num_gpus`` GPUs can run on some model of ``capacity`` (of
    ``allowed_models`` when given), and, when it cannot, the first missing profile entry met on the way (None if
    every entry looked up was there: the job is simply too wide or too slow everywhere). ``rate`` raises
    :class:`MissingProfileError` for an absent entry."""
    missing: MissingProfileError | None = None
    for model, cap in capacity.items():
        if (allowed_models is not None and model not in allowed_models) or num_gpus > cap.gpus:
            continue
        one_node = num_gpus <= cap.largest_node or ideal_placement
        for consolidated in (True, False) if one_node else (False,):
            try:
                if rate(job_type, model, num_gpus, consolidated) > 0:
                    return True, None
            except MissingProfileError as exc:
                missing = missing or exc
    return False, missing
