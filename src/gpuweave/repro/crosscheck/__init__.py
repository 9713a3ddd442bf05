"""Cross-checks against peers' own simulators: run our policies on a peer's traces and set our results beside
the peer's, one :class:`~gpuweave.repro.registry.ComparisonRow` per (peer policy, trace, metric), written to
``comparison.csv`` exactly as ``gpuweave repro`` writes it.

The registry is one line per peer: the module and function that compute its rows (``fn(data_dir, out_dir) ->
list[ComparisonRow]``) and the data directory used when ``--data`` is not given. A peer whose module is not part
of this build is listed as unavailable rather than failing the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuweave.checks import SEED, parse
from gpuweave.errors import InputError
from gpuweave.repro.registry import ComparisonRow, write_comparison
from gpuweave.staging import staged_directory

CrossCheck = Callable[..., list[ComparisonRow]]


@dataclass(frozen=True, slots=True)
class Peer:
    module: str
    function: str
    default_data: str  # relative to the working directory, as laid out in the project's shared data
    options: tuple[str, ...] = ()  # keyword options the cross-check takes (comma lists: workloads, seeds, ...)


PEERS: dict[str, Peer] = {
    "gavel": Peer("gpuweave.repro.crosscheck.gavel", "crosscheck_gavel", "../shared/data/gavel-reference"),
    "pollux": Peer(
        "gpuweave.repro.crosscheck.pollux",
        "crosscheck_pollux",
        "../shared/data/pollux",
        ("workloads", "policies", "seeds"),
    ),
    "sia": Peer(
        "gpuweave.repro.crosscheck.sia",
        "crosscheck_sia",
        "../shared/data/sia-reference",
        ("workloads", "policies", "progress"),
    ),
    "fgd": Peer(
        "gpuweave.repro.crosscheck.fgd",
        "crosscheck_fgd",
        "../shared/data/fgd",
        ("workloads", "policies", "seeds", "progress"),
    ),
}


def selected(
    given: str | None, known: list[str], what: str, where: str, aliases: dict[str, str] | None = None
) -> list[str]:
    """The names a ``--workloads``/``--policies`` comma list picks (all of ``known`` when not given), each one
    known (an alias: ``{ours: theirs}``, read as ours); InputError naming ``where`` the known ones are."""
    if not given:
        return known
    out = []
    for name in (part.strip() for part in given.split(",") if part.strip()):
        name = {v: k for k, v in (aliases or {}).items()}.get(name, name)
        if name not in known:
            raise InputError(f"{what} {name!r} is not in {where} (there: {', '.join(known)})", field=what)
        out.append(name)
    return out


def seed_set(given: str | None) -> set[int] | None:
    """The seeds of a ``--seeds`` comma list, each checked; None when not given."""
    return None if not given else {int(parse(s, SEED, field="seeds")) for s in given.split(",") if s.strip()}


def peer_function(name: str) -> CrossCheck:
    """The cross-check of peer ``name``; InputError for an unknown peer or one this build does not include."""
    peer = PEERS.get(name)
    if peer is None:
        raise InputError(f"unknown peer {name!r}; expected one of {', '.join(PEERS)}", field="peer")
    try:
        module = importlib.import_module(peer.module)
    except ModuleNotFoundError as exc:
        if exc.name != peer.module:
            raise
        raise InputError(f"the {name} cross-check is not part of this build", field="peer") from None
    return getattr(module, peer.function)


def run_crosscheck(
    name: str, data_dir: Path | None, out_dir: Path, options: dict[str, object] | None = None
) -> list[ComparisonRow]:
    """Run peer ``name``'s cross-check on ``data_dir`` (default: the peer's shared data) into ``out_dir``
    atomically: its files and ``comparison.csv`` appear only when every run succeeded. ``options`` (None values
    left out) must be ones the peer takes."""
    fn = peer_function(name)
    given = {key: value for key, value in (options or {}).items() if value is not None}
    for key in given:
        if key not in PEERS[name].options:
            takes = ", ".join(f"--{o}" for o in PEERS[name].options if o != "progress") or "no option"
            raise InputError(f"--{key} does not apply to the {name} cross-check (it takes {takes})", field=key)
    data = Path(data_dir) if data_dir is not None else Path(PEERS[name].default_data)
    if not data.is_dir():
        raise InputError("peer data directory not found; give it with --data", file=data, field="data")
    with staged_directory(out_dir) as staging:
        rows = fn(data, staging, **given)
        if not rows:
            raise InputError(f"the {name} data directory holds no trace and policy this cross-check knows", file=data)
        write_comparison(rows, staging / "comparison.csv")
    return rows
