"""A rescheduling snapshot as JSON (what ``gpuweave plan andreas STATE.json`` reads), validated.

Format::

    {"now": 1200, "period": 300,
     "nodes": [{"name": "armida-05", "gpu": "TESLA", "gpus": 1}, ...],
     "jobs": [{"id": "J6", "application": "efficientNet", "epochs": 80, "remaining_epochs": 50.9,
               "submission": 0, "due": 3600, "due_relative": false, "weight": 4,
               "running": {"node": "armida-06", "gpus": 2}}, ...]}

* ``period`` (optional): the rescheduling period H; the postponement term then looks H ahead (H_wc = H);
  absent = event-driven (H_wc = 0).
* ``remaining_epochs`` defaults to ``epochs``; remaining time on k = remaining epochs x per-epoch time.
* ``due`` is absolute unless ``due_relative`` is true (then d_abs = submission + due; spec A18 for Table V).
* Per-epoch times and costs are the bundled ANDREAS tables unless ``profiles`` / ``costs`` name CSV files.

Bad input raises :class:`~gpuweave.errors.InputError` with one line naming the file and the field: unknown
GPU types, nodes with zero GPUs, negative epochs, due dates before submission, unknown applications, and
profiles missing a configuration a node offers (every node offers its GPU type with 1 GPU, so every
application must be profiled on 1 GPU of every GPU type in the cluster).
"""

from __future__ import annotations

from pathlib import Path

from gpuweave.andreas.catalog import config_label, gpu_type, load_costs, load_profile_table
from gpuweave.andreas.model import Instance, NodeSpec, QueueJob, build_instance
from gpuweave.checks import EPOCHS, GPUS, SECONDS, WEIGHT, Range, number
from gpuweave.errors import InputError
from gpuweave.files import load_json
from gpuweave.limits import check_limit


def _num(
    obj: dict,
    key: str,
    where: str,
    file: str,
    *,
    default=None,
    minimum: float | None = None,
    integer: bool = False,
    rng: Range = SECONDS,
):
    """``obj[key]`` checked against ``rng`` (seconds by default; ``integer``: GPUs), ``minimum`` raising its floor."""
    if key not in obj:
        if default is not None:
            return default
        raise InputError(f"{where}: missing '{key}'", file=file, field=key)
    if integer:
        rng = GPUS
    if minimum is not None:
        rng = rng.with_low(minimum)
    return number(obj[key], rng, file=file, field=key, what=where)


def parse_snapshot(data: object, file: str = "<snapshot>") -> Instance:
    """A rescheduling point from its JSON form (now, period, nodes, jobs, optional costs and profiles).

    Every malformed field raises InputError naming the file and the field.
    """
    if not isinstance(data, dict):
        raise InputError("a snapshot must be a JSON object with now, nodes and jobs", file=file)
    costs = load_costs(data.get("costs"))
    profiles = load_profile_table(data.get("profiles"))
    now = _num(data, "now", "snapshot", file, minimum=0)
    period = data.get("period")
    h_wc = 0.0 if period is None else _num(data, "period", "snapshot", file, minimum=0)
    nodes = _parse_nodes(data.get("nodes"), costs, file)
    raw_jobs = data.get("jobs")
    if not isinstance(raw_jobs, list):
        raise InputError("'jobs' must be a list", file=file, field="jobs")
    check_limit("andreas_jobs", len(raw_jobs), "jobs in the snapshot", file=file, field="jobs")
    jobs = [_parse_job(i, jb, now, nodes, profiles, file) for i, jb in enumerate(raw_jobs)]
    return build_instance(now, nodes, jobs, costs, h_wc=h_wc)


def _parse_nodes(raw_nodes: object, costs, file: str) -> list[NodeSpec]:
    """The snapshot's ``nodes``: a non-empty list of {name, gpu (a priced type), gpus >= 1}."""
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise InputError("'nodes' must be a non-empty list", file=file, field="nodes")
    nodes: list[NodeSpec] = []
    for i, nd in enumerate(raw_nodes):
        if not isinstance(nd, dict):
            raise InputError(f"nodes[{i}] must be an object", file=file, field=f"nodes[{i}]")
        name = str(nd.get("name", f"node-{i}"))
        t = gpu_type(nd.get("gpu", ""), file=file, field_name=f"nodes[{i}].gpu")
        if t not in costs.types():
            raise InputError(
                f"node {name}: no energy cost for GPU type {nd.get('gpu')!r} (priced: {', '.join(costs.types())})",
                file=file,
                field=f"nodes[{i}].gpu",
            )
        g = _num(nd, "gpus", f"node {name}", file, integer=True)
        if g < 1:
            raise InputError(
                f"node {name} has {g} GPUs; every node needs at least 1", file=file, field=f"nodes[{i}].gpus"
            )
        nodes.append(NodeSpec(name, t, g))
    return nodes


def _parse_job(i: int, jb: object, now: float, nodes: list[NodeSpec], profiles, file: str) -> QueueJob:
    """``jobs[i]``: a profiled application runnable on every node type, epochs, submission, due, weight, running."""
    if not isinstance(jb, dict):
        raise InputError(f"jobs[{i}] must be an object", file=file, field=f"jobs[{i}]")
    jid = str(jb.get("id", f"job-{i}"))
    where = f"job {jid}"
    app = jb.get("application")
    if app not in profiles.apps():
        raise InputError(
            f"{where}: unknown application {app!r} (profiled: {', '.join(profiles.apps())})",
            file=file,
            field=f"jobs[{i}].application",
        )
    table = profiles.configs(app)
    for t in sorted({nd.gpu_type for nd in nodes}):
        if (t, 1) not in table:
            node = next(nd.name for nd in nodes if nd.gpu_type == t)
            raise InputError(
                f"{where}: the profiles have no per-epoch time of {app} on {config_label(t, 1)}, "
                f"which node {node} offers",
                file=file,
                field=f"jobs[{i}].application",
            )
    epochs = _num(jb, "epochs", where, file, rng=EPOCHS)
    if epochs <= 0:
        raise InputError(f"{where}: epochs must be > 0, got {epochs:g}", file=file, field=f"jobs[{i}].epochs")
    remaining = _num(jb, "remaining_epochs", where, file, default=epochs, rng=EPOCHS)
    if remaining < 0 or remaining > epochs:
        raise InputError(
            f"{where}: remaining_epochs must be in [0, {epochs:g}], got {remaining:g}",
            file=file,
            field=f"jobs[{i}].remaining_epochs",
        )
    submission = _num(jb, "submission", where, file, minimum=0)
    if submission > now:
        raise InputError(
            f"{where}: submitted at {submission:g}, after now = {now:g}", file=file, field=f"jobs[{i}].submission"
        )
    due = _parse_due(i, jb, where, submission, file)
    weight = _num(jb, "weight", where, file, minimum=0, rng=WEIGHT)
    running = None if jb.get("running") is None else _parse_running(i, jb["running"], where, nodes, table, file)
    times = {k: remaining * s for k, s in table.items()}
    return QueueJob(jid, submission, due, weight, times, running)


def _parse_due(i: int, jb: dict, where: str, submission: float, file: str) -> float:
    """The absolute due date: ``due``, or submission + ``due`` when ``due_relative`` is true."""
    due = _num(jb, "due", where, file, minimum=-SECONDS.hi)
    if jb.get("due_relative", False):
        if due < 0:
            raise InputError(
                f"{where}: a relative due date must be >= 0, got {due:g}", file=file, field=f"jobs[{i}].due"
            )
        return submission + due
    if due < submission:
        raise InputError(
            f'{where}: due date {due:g} is before its submission {submission:g}; set "due_relative": true if it is '
            f"relative to the submission (as in the paper's Table V)",
            file=file,
            field=f"jobs[{i}].due",
        )
    return due


def _parse_running(
    i: int, run: object, where: str, nodes: list[NodeSpec], table: dict, file: str
) -> tuple[int, tuple[str, int]]:
    """``running``: {node, gpus} naming a node of the snapshot and a profiled configuration it offers."""
    index = {nd.name: n for n, nd in enumerate(nodes)}
    if not isinstance(run, dict) or not isinstance(run.get("node"), str) or run["node"] not in index:
        raise InputError(
            f"{where}: 'running' must name a node of the snapshot, got {run!r}",
            file=file,
            field=f"jobs[{i}].running",
        )
    n_idx = index[run["node"]]
    g = _num(run, "gpus", where, file, integer=True, minimum=1)
    k = (nodes[n_idx].gpu_type, g)
    if k not in table or g > nodes[n_idx].num_gpus:
        raise InputError(
            f"{where}: runs on {config_label(*k)} of {run['node']}, which is not a profiled configuration of that node",
            file=file,
            field=f"jobs[{i}].running",
        )
    return n_idx, k


def load_snapshot(path: str | Path) -> Instance:
    p = Path(path)
    data = load_json(p, what="snapshot file")
    try:
        return parse_snapshot(data, str(p))
    except InputError as exc:
        if exc.file is None:
            raise InputError(exc.message, file=p, field=exc.field) from None
        raise
