"""One registry for every pluggable part: cluster policies, MIG planners, packs algorithms, kernel arbitration
modes, reproductions and demo sections.

A :class:`Registry` maps a name to an implementation (a class or a function) with a one-line help, its options
(name, type, default, help) and free-form facts (``meta``, e.g. a policy's trigger). Implementations register
themselves with ``@REGISTRY.register("name", help=...)``; the modules that hold them are listed on the registry
and imported on first lookup (a module that does not exist is skipped, an error inside one is raised: see
:mod:`gpuweave.plugins`). ``gpuweave <grain> policies|algos|modes --json`` print :meth:`Registry.listing`.

Options are read from the implementation's keyword parameters when not given: a class's ``__init__`` or a
function's signature, keyword-only or with a default, with the annotation as the type.
Lookup is O(1); listing is O(entries).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Iterable, TypeVar

from gpuweave.errors import InputError
from gpuweave.plugins import import_if_present

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Option:
    """One keyword option of an implementation."""

    name: str
    type: str
    default: Any
    help: str = ""

    def as_dict(self) -> dict[str, Any]:
        default = self.default if isinstance(self.default, (int, float, str, bool, type(None))) else repr(self.default)
        return {"name": self.name, "type": self.type, "default": default, "help": self.help}


@dataclass(frozen=True, slots=True)
class Entry(Generic[T]):
    """A registered implementation."""

    name: str
    impl: T
    help: str
    options: tuple[Option, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "help": self.help, "options": [o.as_dict() for o in self.options], **self.meta}


def options_of(impl: Any, skip: Iterable[str] = ()) -> tuple[Option, ...]:
    """The keyword options of a class's ``__init__`` or of a function, with their annotations and defaults."""
    target = impl.__init__ if inspect.isclass(impl) else impl
    skipped = set(skip) | {"self"}
    out = []
    for p in inspect.signature(target).parameters.values():
        if p.name in skipped or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is inspect.Parameter.empty and p.kind is not p.KEYWORD_ONLY:
            continue  # a positional input (the problem, the view), not an option
        annotation = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
        default = None if p.default is inspect.Parameter.empty else p.default
        out.append(Option(p.name, str(annotation or type(default).__name__), default))
    return tuple(out)


class Registry(Generic[T]):
    """Name -> implementation for one kind of part (``kind`` names it in errors, e.g. "cluster policy")."""

    def __init__(self, kind: str, modules: Iterable[str] = (), *, field: str | None = None) -> None:
        self.kind = kind
        self.modules = list(modules)
        self.field = field  # the input field an unknown name is reported against (e.g. "policy", "algo")
        self._entries: dict[str, Entry[T]] = {}
        self._loaded = False

    def register(
        self,
        name: str,
        *,
        help: str = "",
        options: Iterable[Option] | None = None,
        skip_options: Iterable[str] = (),
        **meta: Any,
    ) -> Callable[[T], T]:
        """Decorator. ``help`` defaults to the first line of the implementation's docstring; ``options`` default
        to :func:`options_of` the implementation (less ``skip_options``)."""

        def deco(impl: T) -> T:
            old = self._entries.get(name)
            if old is not None and old.impl is not impl:
                raise RuntimeError(f"{self.kind} {name!r} registered twice")
            text = help or first_line(getattr(impl, "__doc__", None))
            opts = tuple(options) if options is not None else options_of(impl, skip_options)
            self._entries[name] = Entry(name, impl, text, opts, dict(meta))
            return impl

        return deco

    def unregister(self, name: str) -> None:
        """Remove an entry (one a plugin or a test registered); an unknown name is ignored."""
        self._entries.pop(name, None)

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            for module in self.modules:
                import_if_present(module)

    def entries(self) -> dict[str, Entry[T]]:
        """Every entry, sorted by name."""
        self._load()
        return dict(sorted(self._entries.items()))

    def names(self) -> list[str]:
        return list(self.entries())

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._entries

    def get(self, name: str) -> Entry[T]:
        """The entry; an unknown name is an :class:`InputError` listing the known ones."""
        self._load()
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(sorted(self._entries)) or "none"
            raise InputError(f"unknown {self.kind} '{name}' (known: {known})", field=self.field)
        return entry

    def listing(self) -> list[dict[str, Any]]:
        """JSON-ready: one dict per entry with name, help, options and meta."""
        return [e.as_dict() for e in self.entries().values()]


def first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0].strip() if lines else ""
