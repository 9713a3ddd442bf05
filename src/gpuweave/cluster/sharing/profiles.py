"""Tasks that name a MIG profile (``3g.20gb``) on a cluster: which of its GPUs they may use, checked before work.

Problem: a profile is a MIG instance of particular GPU models (``3g.20gb`` is an A100-40GB's, ``3g.40gb`` an
A100-80GB's or H100-80GB's: :mod:`gpuweave.hardware.mig_profiles`). The rule, in every sharing mode:

* a task with a profile runs only on a GPU whose model has that profile: its allowed models become the cluster's
  models that have it (within its own ``gpu_spec`` constraint, if any);
* on a node that runs MIG (``--sharing mig``, or a node group with ``sharing: mig``) it gets an instance of exactly
  that profile (its slices, hence its memory: :meth:`.state.SharedNodes.mig_size`), not the smallest covering its
  share;
* elsewhere (``--sharing fraction``: a share of the GPU; ``--sharing whole``: the whole GPU) it is its share of
  the GPU: the profile's slices over the GPU's slices in milli-GPUs, rounded down (``3g.20gb``: 3/7 of an A100,
  428), which is the ``gpu_milli`` the readers gave it (:mod:`gpuweave.workload.traces.mig_column`). So the same
  task asks the same share in all three modes, and ``--sharing mig`` is compared with fractions and whole GPUs on
  the same GPUs.

Bad input is one line naming the file, row and field ``mig_profile``, before any task is placed: a profile no GPU
of the cluster has (naming the cluster's MIG-capable models and their profiles, or saying it has none), and a
profile none of whose models the task's ``gpu_spec`` allows. Complexity: O(tasks) once, a lookup per distinct
(profile, constraint).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpuweave.errors import InputError
from gpuweave.hardware.mig_profiles import describe_profiles, models_with, why_unknown
from gpuweave.hardware.node_resources import NodeTable
from gpuweave.workload.tasks import TaskTable


def resolve_mig_profiles(nodes: NodeTable, tasks: TaskTable) -> TaskTable:
    """``tasks`` with each profile task's allowed models narrowed to the cluster's models that have its profile
    (module docstring); ``tasks`` itself when no task names a profile. InputError at the first task that cannot
    run anywhere because of its profile."""
    if tasks.mig_profile is None or not (tasks.mig_profile >= 0).any():
        return tasks
    models = nodes.model_names
    having = {name: models_with(name, models) for name in tasks.mig_profiles}
    allowed = list(tasks.allowed_models)
    narrowed: dict[tuple[int, tuple[str, ...] | None], tuple[str, ...]] = {}
    for i in np.flatnonzero(tasks.mig_profile >= 0).tolist():
        key = (int(tasks.mig_profile[i]), tasks.allowed_models[i])
        if key not in narrowed:
            narrowed[key] = _allowed(tasks.mig_profiles[key[0]], having, key[1], models, tasks, i)
        allowed[i] = narrowed[key]
    return replace(tasks, allowed_models=tuple(allowed))


def _allowed(
    profile: str,
    having: dict[str, tuple[str, ...]],
    own: tuple[str, ...] | None,
    models: tuple[str, ...],
    tasks: TaskTable,
    i: int,
) -> tuple[str, ...]:
    """The models task ``i`` may use for ``profile``; InputError naming the task when there are none."""
    file, row = tasks.source or None, tasks.row_of(i)
    on = having[profile]
    if not on:
        mig_models = tuple(m for m in models if describe_profiles((m,)))
        if mig_models:
            what = f"its MIG-capable GPUs have {describe_profiles(mig_models)}"
        else:
            what = f"none of its GPUs ({', '.join(models) or 'none'}) is MIG-capable"
        reason = why_unknown(profile, mig_models)
        message = f"no GPU of the cluster has MIG profile {profile}: {what}" + (f"; {reason}" if reason else "")
        raise InputError(message, file=file, row=row, field="mig_profile")
    if own is None:
        return on
    both = tuple(m for m in on if m in own)
    if not both:
        raise InputError(
            f"MIG profile {profile} is on {', '.join(on)} of this cluster, which the task's allowed models "
            f"({'|'.join(own)}) leave out",
            file=file,
            row=row,
            field="mig_profile",
        )
    return both
