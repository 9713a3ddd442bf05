"""MIG profiles by NVIDIA's names: what a job means by ``mig: 3g.20gb``, and which GPU models have it.

Problem: a job may ask for a MIG instance by the name NVIDIA gives it, ``<compute slices>g.<memory GB>gb``. The
name fixes the instance's compute slices (``3g``: 3 slices) and its memory, which depends on the GPU model
(``3g.20gb`` is half an A100-40GB's memory, ``3g.40gb`` half an A100-80GB's or H100-80GB's). This module reads the
names per catalog model from ``mig_profiles.toml`` (NVIDIA's MIG User Guide, source beside each model), checks them
against the catalog's geometries (one modelled profile per instance size, the full-GPU profile's memory the model's
memory) and answers three questions: is a string a profile name at all (:func:`parse_mig_profile`), which models
have a profile (:func:`models_with`, :func:`profiles_of`), and what share of a GPU it is (:func:`share_milli`:
slices over the geometry's slices, in milli-GPUs, rounded down: ``3g`` of 7 slices is 428, so that what tasks ask
never exceeds what their instances hold, which :mod:`gpuweave.cluster.sharing.state` counts per GPU rounded to
nearest: two ``3g`` instances hold 857).

Not modelled, and refused by name: media-extension profiles (``+me``, ``-me``, ``+gfx``, ``.all``: an instance that
also holds the GPU's decoders) and 1-slice instances with two memory slices (``1g.10gb`` on A100-40GB, ``1g.20gb``
on the 80-GB parts): the catalog's geometry has one instance per size and no memory-slice layout of its own.
A profile name means the same share on every model that has it (checked when the file is read).

Accepted spellings: ``3g.20gb`` as NVIDIA writes it, case and surrounding blanks aside, also with the prefixes
``MIG `` (nvidia-smi's listing), ``mig-`` and ``nvidia.com/mig-`` (the Kubernetes device plugin's resource name).
Numbers are ASCII digits without leading zeros: ``٣g.20gb`` or ``03g.20gb`` is malformed, not another profile.
Complexity: the file is read and checked once (cached); each lookup is a dict access.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gpuweave.errors import InputError
from gpuweave.hardware.catalog import all_gpus, get_gpu

PROFILE_FILE = Path(__file__).with_name("mig_profiles.toml")
FULL_GPU_MILLI = 1000
#: NVIDIA's spelling: ASCII digits without leading zeros (``\d`` also matched "٣", and ``03g.020gb`` became a name no
#: catalog model has); ``0g`` still parses, to be refused as below 1 by name
_NAME = re.compile(r"(0|[1-9][0-9]?)g\.(0|[1-9][0-9]{0,3})gb((?:[+-](?:me|gfx)(?:\.all)?)*)", re.ASCII)
_PREFIXES = ("nvidia.com/mig-", "mig-", "mig ")


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One profile: its canonical name, compute slices and memory in GB (as the name states them)."""

    name: str
    slices: int
    memory_gb: int


@dataclass(frozen=True, slots=True)
class _Profiles:
    by_model: dict[str, tuple[MigProfile, ...]]  # catalog model -> its modelled profiles, by slices
    unmodelled: dict[str, tuple[str, ...]]  # catalog model -> NVIDIA profiles the geometry does not model
    share: dict[str, int]  # profile name -> its share of the GPU in milli-GPUs (the same on every model)


def _split(text: str) -> tuple[str, re.Match[str] | None]:
    name = " ".join(str(text).split()).lower()
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :].strip()
            break
    return name, _NAME.fullmatch(name)


def parse_mig_profile(
    text: str, *, file: str | Path | None = None, row: int | None = None, field: str = "mig_profile"
) -> MigProfile:
    """The profile a cell names, in canonical spelling (module docstring). InputError (with ``file``, ``row``,
    ``field``) for a string that is not a profile name, or one with media extensions, which are not modelled. The
    name is not looked up in the catalog here (see :func:`models_with`)."""
    name, match = _split(text)
    if match is None:
        raise InputError(
            f"malformed MIG profile {str(text).strip()[:40]!r}: expected NVIDIA's <slices>g.<memory>gb, e.g. 3g.20gb",
            file=file,
            row=row,
            field=field,
        )
    slices, memory, extension = int(match.group(1)), int(match.group(2)), match.group(3)
    if extension:
        base = f"{slices}g.{memory}gb"
        raise InputError(
            f"MIG profile {name} has media extensions ({extension}), which gpuweave's MIG geometry does not model; "
            f"ask for {base}",
            file=file,
            row=row,
            field=field,
        )
    if slices < 1 or memory < 1:
        raise InputError(
            f"malformed MIG profile {name!r}: slices and memory must be >= 1", file=file, row=row, field=field
        )
    return MigProfile(name, slices, memory)


def share_of(slices: int, num_slices: int) -> int:
    """``slices`` of a GPU of ``num_slices`` in milli-GPUs, rounded down (module docstring)."""
    return slices * FULL_GPU_MILLI // num_slices


@cache
def _profiles(path: Path = PROFILE_FILE) -> _Profiles:
    """Read and check the profile file (module docstring); InputError naming the file and the model otherwise."""
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    gpus = all_gpus()
    by_model: dict[str, tuple[MigProfile, ...]] = {}
    unmodelled: dict[str, tuple[str, ...]] = {}
    share: dict[str, int] = {}
    for model, gpu in gpus.items():
        if gpu.mig is None:
            continue
        entry = data.get(model)
        if not isinstance(entry, dict) or not str(entry.get("source", "")).strip():
            raise InputError(f"MIG-capable {model} needs profiles and a source", file=path, field=model)
        parsed = (parse_mig_profile(n, file=path, field=model) for n in entry["profiles"])
        profiles = tuple(sorted(parsed, key=lambda p: p.slices))
        sizes = tuple(p.slices for p in profiles)
        if sizes != tuple(sorted(gpu.mig.sizes)) or profiles[-1].memory_gb != round(gpu.memory_gb):
            raise InputError(
                f"{model}: one profile per instance size {gpu.mig.sizes} and the full one of {gpu.memory_gb:g} GB "
                f"expected, got {', '.join(p.name for p in profiles)}",
                file=path,
                field=model,
            )
        for p in profiles:
            milli = share_of(p.slices, gpu.mig.num_slices)
            if share.setdefault(p.name, milli) != milli:
                raise InputError(f"{p.name} is a different share of a GPU on {model}", file=path, field=model)
        by_model[model] = profiles
        unmodelled[model] = tuple(str(n).strip().lower() for n in entry.get("unmodelled", ()))
    return _Profiles(by_model, unmodelled, share)


def _catalog_name(model: str) -> str | None:
    """The catalog's name of a node model (openb's own names, such as ``G2`` or ``V100M16``, are not in it)."""
    try:
        return get_gpu(model).name
    except InputError:
        return None


def profiles_of(model: str) -> tuple[MigProfile, ...]:
    """The modelled profiles of a GPU model (catalog name or alias), by slices; () for a model without MIG or one
    the catalog does not know."""
    name = _catalog_name(model)
    return _profiles().by_model.get(name, ()) if name is not None else ()


def unmodelled_of(model: str) -> tuple[str, ...]:
    """The NVIDIA profiles of a GPU model that gpuweave does not model (module docstring)."""
    name = _catalog_name(model)
    return _profiles().unmodelled.get(name, ()) if name is not None else ()


def models_with(profile: str, models: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Of ``models`` (spelled as given; the whole catalog when None), those that have ``profile`` modelled."""
    candidates = tuple(all_gpus()) if models is None else models
    return tuple(m for m in candidates if any(p.name == profile for p in profiles_of(m)))


def share_milli(profile: str) -> int | None:
    """The share of a GPU a modelled profile is, in milli-GPUs (None: no catalog model has it modelled)."""
    return _profiles().share.get(profile)


def describe_profiles(models: tuple[str, ...]) -> str:
    """``A30: 1g.6gb, 2g.12gb, 4g.24gb; A100-80GB, H100-80GB: 1g.10gb, ...`` for the models with MIG among
    ``models`` (models with the same profiles share one entry)."""
    groups: dict[str, list[str]] = {}
    for model in models:
        names = ", ".join(p.name for p in profiles_of(model))
        if names:
            groups.setdefault(names, []).append(model)
    return "; ".join(f"{', '.join(members)}: {names}" for names, members in groups.items())


def why_unknown(profile: str, models: tuple[str, ...] | None = None) -> str:
    """Why ``profile`` is on none of ``models`` (the catalog when None): the models that have it only as an
    unmodelled profile, or an empty string."""
    candidates = tuple(all_gpus()) if models is None else models
    listed = [m for m in candidates if profile in unmodelled_of(m)]
    if not listed:
        return ""
    return (
        f"MIG profile {profile} (on {', '.join(listed)}) is a 1-slice instance with two memory slices, which "
        "gpuweave's MIG geometry does not model"
    )
