"""Slurm nodes from ``scontrol show node`` (text, one-line or multi-line, or ``--json``) and the cluster spec they make.

Problem: turn what Slurm says about its nodes into gpuweave's cluster spec (``hardware/cluster_spec.py``), and give
the Slurm executor the (node, GPU type) slots it may place work on. Complexity: O(size of the text).

Text: records start at ``NodeName=``; a record is ``Key=Value`` words, and a word without ``=`` continues the
previous value (``OS=Linux 6.1.0 #1 SMP``, ``Reason=maintenance [root@...]``). JSON: the ``nodes`` list of
``scontrol show node --json`` (Slurm 23.02 and later) or of slurmrestd's ``/nodes``: ``name``, ``gres``,
``state`` (a string or a list of flags), ``partitions``, ``reason``.

GRES: ``gpu:v100:4``, ``gpu:v100:4(S:0-1)``, ``gpu:4`` (no type), ``gpu:a100:2,mps:200``; only ``gpu`` entries
count. Slurm's GPU type names are turned into catalog names (``v100`` -> ``V100``); ``gpu_map`` maps others
(``a6000=A10``) and ``untyped`` names the model of GPUs with no type.

A gpuweave node has one GPU model, so a Slurm node with GPUs of several types becomes one gpuweave node per type,
named ``<node>-<type>`` (``gw0-v100``, ``gw0-k80``); a node with one GPU type keeps its Slurm name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gpuweave.checks import GPUS
from gpuweave.errors import InputError
from gpuweave.files import parse_json
from gpuweave.workload.traces._tables import read_text
from gpuweave.workload.traces.gpu_names import canonical_gpu_model

UNHEALTHY = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING", "INVAL", "POWERED_DOWN", "POWER_DOWN", "FUTURE")
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_:/.]*=")
_COUNT = re.compile(r"^([0-9]+)([KMGT]?)$")  # ASCII digits: \d also takes '٤', and 5,000 digits overflow int()
_SCALE = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


@dataclass(slots=True)
class SlurmNode:
    name: str
    gpus: dict[str, int]  # Slurm GPU type ("" = untyped) -> count, in the order Slurm lists them
    state: str = ""
    partitions: list[str] = field(default_factory=list)
    reason: str = ""
    line: int = 0  # where the record starts in the source (1-based), for messages
    addr: str = ""  # NodeAddr: where its slurmd (and a gang's ranks there) are reached

    @property
    def healthy(self) -> bool:
        return not any(flag in self.state.upper().replace("*", "").split("+") for flag in UNHEALTHY)


@dataclass(frozen=True, slots=True)
class GpuSlot:
    """One gpuweave node: the GPUs of one type on one Slurm node."""

    host: str
    slurm_type: str  # "" for untyped GPUs
    model: str  # catalog name
    count: int
    name: str  # the gpuweave node name


def parse_gres(text: str, *, where: str = "") -> dict[str, int]:
    """GPU type -> count of a ``Gres=`` value (non-GPU GRES ignored; ``(null)`` and empty give {})."""
    text = (text or "").strip()
    if text in ("", "(null)", "N/A"):
        return {}
    gpus: dict[str, int] = {}
    for entry in _split_outside_parens(text):
        entry = entry.split("(", 1)[0].strip()
        parts = entry.split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) == 2:
            kind, count = "", parts[1]
        elif len(parts) == 3:
            kind, count = parts[1], parts[2]
        else:
            raise InputError(f"cannot read the GRES entry {entry!r} (expected gpu:TYPE:COUNT or gpu:COUNT){where}")
        match = _COUNT.match(count)
        if match is None:
            raise InputError(f"cannot read the GPU count in the GRES entry {entry!r}{where}")
        digits, unit = match.groups()
        total = gpus.get(kind, 0) + int(digits) * _SCALE[unit] if len(digits) <= 9 else None
        if total is None or total > GPUS.hi:  # 10^23 GPUs: one line, not an int64 overflow later
            shown = entry if len(entry) <= 60 else entry[:57] + "..."
            raise InputError(f"the GPU count in the GRES entry {shown!r} is more than {GPUS.hi:,.0f} GPUs{where}")
        gpus[kind] = total
    return gpus


def _split_outside_parens(text: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [s for s in out if s.strip()]


def parse_scontrol_text(text: str, *, source: str = "scontrol show node") -> list[SlurmNode]:
    """Nodes of ``scontrol show node`` text output (``--oneliner`` or not); InputError naming the line."""
    records: list[tuple[int, dict[str, str]]] = []
    current: dict[str, str] | None = None
    last_key = ""
    for number, line in enumerate(text.splitlines(), start=1):
        for word in line.split():
            if word.startswith("NodeName="):
                current = {}
                records.append((number, current))
            if _KEY.match(word):
                last_key, _, value = word.partition("=")
                if current is None:
                    raise InputError(
                        f"expected a record starting with NodeName=, got {word!r}", file=source, row=number
                    )
                current[last_key] = value
            elif current is not None and last_key:
                current[last_key] += " " + word
            else:
                raise InputError(
                    f"expected Key=Value words of scontrol show node, got {word!r}", file=source, row=number
                )
    nodes = []
    for number, rec in records:
        where = f" ({source}, line {number})"
        nodes.append(
            SlurmNode(
                name=rec["NodeName"],
                gpus=parse_gres(rec.get("Gres", ""), where=where),
                state=rec.get("State", ""),
                partitions=[p for p in rec.get("Partitions", "").split(",") if p and p != "(null)"],
                reason=rec.get("Reason", ""),
                line=number,
                addr=rec.get("NodeAddr", ""),
            )
        )
    return nodes


def parse_scontrol_json(text: str, *, source: str = "scontrol show node --json") -> list[SlurmNode]:
    """Nodes of ``scontrol show node --json`` or slurmrestd's ``/nodes`` answer; InputError naming the node."""
    try:
        data = parse_json(text, source=source, what="scontrol JSON")
    except InputError as exc:
        if not exc.message.startswith("not valid JSON"):
            raise
        raise InputError(
            f"neither `scontrol show node` text nor its --json output ({exc.message})", file=source, row=exc.row
        ) from None
    items = data.get("nodes") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InputError("expected an object with a 'nodes' list (scontrol show node --json)", file=source)
    nodes = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise InputError("expected a node object with a 'name'", file=source, row=index, field="name")
        state = item.get("state", "")
        state = "+".join(str(s) for s in state) if isinstance(state, list) else str(state)
        parts = item.get("partitions") or []
        parts = (
            parts.split(",") if isinstance(parts, str) else [str(p) for p in parts] if isinstance(parts, list) else []
        )
        where = f" ({source}, node {index})"
        nodes.append(
            SlurmNode(
                item["name"],
                parse_gres(str(item.get("gres") or ""), where=where),
                state.upper(),
                parts,
                str(item.get("reason") or ""),
                index,
                str(item.get("address") or ""),
            )
        )
    return nodes


def parse_nodes(text: str, *, source: str = "scontrol show node") -> list[SlurmNode]:
    """Text or JSON, told apart by the first character."""
    stripped = text.lstrip()
    if not stripped:
        raise InputError("no nodes: the scontrol output is empty", file=source)
    if stripped[0] in "{[":
        return parse_scontrol_json(text, source=source)
    return parse_scontrol_text(text, source=source)


def gpu_slots(
    nodes: list[SlurmNode],
    *,
    gpu_map: dict[str, str] | None = None,
    untyped: str | None = None,
    skip_unknown: bool = False,
    source: str = "scontrol show node",
) -> tuple[list[GpuSlot], list[str]]:
    """The (node, GPU type) slots of the nodes with GPUs, and notes on what was left out.

    An unknown GPU type is an InputError naming the node unless ``gpu_map`` maps it or ``skip_unknown`` is set."""
    mapping = {k.lower(): v for k, v in (gpu_map or {}).items()}
    slots, notes, unknown = [], [], []
    made: dict[str, SlurmNode] = {}  # gpuweave node name -> the Slurm node that made it
    for node in nodes:
        for kind, count in node.gpus.items():
            if count <= 0:
                continue
            model = _model(kind, mapping, untyped)
            if model is None:
                if not skip_unknown:
                    hint = "pass --untyped-gpu MODEL" if not kind else f"map it with --gpu-map {kind}=MODEL"
                    what = "GPUs without a type" if not kind else f"unknown GPU type {kind!r}"
                    raise InputError(f"node {node.name} has {what}: {hint}", file=source, row=node.line)
                unknown.append(f"{node.name} ({kind or 'untyped'} x{count})")
                continue
            several = sum(1 for c in node.gpus.values() if c > 0) > 1
            name = f"{node.name}-{kind or 'gpu'}" if several else node.name
            other = made.setdefault(name, node)
            if other is not node:  # a name twice: the cluster spec would not load, the executor would mix them up
                again = "is listed twice" if other.name == node.name else f"and node {other.name} both make it"
                raise InputError(
                    f"the gpuweave node name {name!r} would be used twice: node {node.name} {again} "
                    f"(records at {other.line} and {node.line})",
                    file=source,
                    row=node.line,
                    field="name",
                )
            slots.append(GpuSlot(node.name, kind, model, count, name))
    if unknown:
        notes.append(f"left out GPUs of unknown type: {', '.join(unknown)}")
    without = [n.name for n in nodes if not any(c > 0 for c in n.gpus.values())]
    if without:
        notes.append(f"{len(without)} node(s) without GPU GRES left out: {_short_list(without)}")
    if not slots:
        raise InputError("no node has GPU GRES (Gres=gpu:TYPE:COUNT); nothing to place GPU jobs on", file=source)
    return slots, notes


def _model(kind: str, mapping: dict[str, str], untyped: str | None) -> str | None:
    target = mapping.get(kind.lower()) if kind else untyped
    try:
        return canonical_gpu_model(target if target else kind) if (target or kind) else None
    except InputError:
        if target:  # a model the user named must exist
            raise InputError(f"unknown GPU model {target!r} in the GPU mapping for {kind or 'untyped'} GPUs") from None
        return None


def _short_list(names: list[str], limit: int = 8) -> str:
    head = ", ".join(names[:limit])
    return head + (f" and {len(names) - limit} more" if len(names) > limit else "")


def cluster_from_slots(
    slots: list[GpuSlot], *, name: str, source: str, price_per_kwh: float = 0.0, pue: float = 1.0
) -> dict:
    """The cluster spec (a dict for YAML): one node group per GPU model and per-node count, names listed."""
    groups: dict[tuple[str, int], list[str]] = {}
    for slot in slots:
        groups.setdefault((slot.model, slot.count), []).append(slot.name)
    by_model: dict[str, int] = {}
    for slot in slots:
        by_model[slot.model] = by_model.get(slot.model, 0) + slot.count
    summary = ", ".join(f"{n} {m}" for m, n in by_model.items())
    hosts = len({s.host for s in slots})
    return {
        "name": name,
        "description": f"{hosts} Slurm node(s) with {sum(by_model.values())} GPUs ({summary}), from {source}.",
        "source": f"imported from {source} by gpuweave cluster import-slurm",
        "price_per_kwh": price_per_kwh,
        "pue": pue,
        "nodes": [
            {"count": len(names), "gpu": model, "gpus_per_node": count, "names": names}
            for (model, count), names in groups.items()
        ],
    }


def read_nodes_file(path: str | Path) -> list[SlurmNode]:
    return parse_nodes(read_text(path), source=str(path))


def parse_gpu_map(pairs: list[str]) -> dict[str, str]:
    """``--gpu-map TYPE=MODEL`` pairs as a dict; InputError on a pair without ``=``, and on a type (compared
    case-insensitively, as every reader of the map does) mapped to two different models: the readers kept one of
    the two silently. The same pair given twice is one entry. O(pairs)."""
    mapping: dict[str, str] = {}
    first: dict[str, str] = {}  # lower-case type -> the pair that mapped it
    for pair in pairs:
        kind, sep, model = pair.partition("=")
        if not sep or not kind.strip() or not model.strip():
            raise InputError(f"expected TYPE=MODEL (e.g. a6000=A10), got {pair!r}", field="gpu-map")
        kind, model = kind.strip(), model.strip()
        earlier = first.get(kind.lower())
        if earlier is not None:
            if _same_model(earlier.partition("=")[2].strip(), model):
                continue
            raise InputError(
                f"--gpu-map {earlier} and --gpu-map {pair} map the GPU type {kind!r} to two models; give one",
                field="gpu-map",
            )
        first[kind.lower()] = pair
        mapping[kind] = model
    return mapping


def _same_model(a: str, b: str) -> bool:
    """Whether two model names name one catalog model (case-insensitive, aliases resolved when the catalog knows
    them)."""

    def key(name: str) -> str:
        try:
            return canonical_gpu_model(name)
        except InputError:
            return name.lower()

    return key(a) == key(b)


def import_cluster(
    nodes: list[SlurmNode],
    *,
    name: str,
    source: str,
    partition: str | None = None,
    gpu_map: dict[str, str] | None = None,
    untyped: str | None = None,
    skip_unknown: bool = False,
    price_per_kwh: float = 0.0,
    pue: float = 1.0,
) -> tuple[dict, list[str]]:
    """The cluster spec of Slurm's nodes (checked by the cluster-spec loader) and notes on what was left out."""
    # imported here: importing gpuweave.workload.traces.slurm_nodes does without pydantic
    from gpuweave.hardware.cluster_spec import cluster_from_document

    if partition:
        nodes = [n for n in nodes if partition in n.partitions]
        if not nodes:
            raise InputError(f"no node is in partition {partition!r}", file=source, field="partition")
    slots, notes = gpu_slots(nodes, gpu_map=gpu_map, untyped=untyped, skip_unknown=skip_unknown, source=source)
    unhealthy = sorted({f"{n.name} ({n.state})" for n in nodes if not n.healthy and any(n.gpus.values())})
    if unhealthy:
        notes.append(f"kept nodes Slurm marks unavailable now: {_short_list(unhealthy)}")
    spec = cluster_from_slots(slots, name=name, source=source, price_per_kwh=price_per_kwh, pue=pue)
    cluster_from_document(spec, file=source)  # the loader's checks, node names distinct among them
    return spec, notes


def expand_hostlist(text: str) -> list[str]:
    """The node names of a Slurm host list (``gw[0-2,5],login1`` -> gw0, gw1, gw2, gw5, login1), as
    ``scontrol show hostnames`` prints them: ranges keep their zero padding (``n[08-10]``), several bracket groups
    in one name expand as a product (``r[1-2]n[1-2]``). O(names). ValueError on an unbalanced or malformed range."""
    names: list[str] = []
    for part in _split_outside_brackets(text.strip()):
        names.extend(_expand_name(part))
    return names


def _split_outside_brackets(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if depth < 0 or depth > 1:
            raise ValueError(f"unbalanced brackets in host list {text!r}")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"unbalanced brackets in host list {text!r}")
    parts.append(text[start:])
    return [p for p in parts if p]


def _expand_name(name: str) -> list[str]:
    open_at = name.find("[")
    if open_at < 0:
        return [name]
    close_at = name.index("]", open_at)
    head, body, tail = name[:open_at], name[open_at + 1 : close_at], name[close_at + 1 :]
    values: list[str] = []
    for item in body.split(","):
        lo, dash, hi = item.partition("-")
        if not lo.isascii() or not lo.isdigit() or (dash and (not hi.isascii() or not hi.isdigit())):
            raise ValueError(f"bad range {item!r} in host list {name!r}")
        if not dash:
            values.append(lo)
            continue
        width = len(lo) if lo.startswith("0") else 0
        values.extend(str(k).zfill(width) for k in range(int(lo), int(hi) + 1))
    return [head + v + rest for v in values for rest in _expand_name(tail)]
