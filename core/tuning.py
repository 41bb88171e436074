"""Tunables: the numbers chosen by measurement that trade ranking quality, recall or cost, in one
home per app (docs/tuning.md).

Each app keeps ONE module of them, ``<app>/tuning.py``: frozen dataclasses, one per area, each
field declared with :func:`tunable` (its default, what it means, the benchmark that chose it),
gathered in one root instance registered under the app's name::

    @dataclass(frozen=True)
    class Fusion:
        rrf_k: int = tunable(60, meaning="...", bench="...")

    @dataclass(frozen=True)
    class RagTuning:
        fusion: Fusion = Fusion()

    TUNING = register("rag", RagTuning())

Code reads ``TUNING.fusion.rrf_k`` at call time. ``TUNING`` is a live view of the registry: an
override (below) replaces the registered root with ``dataclasses.replace`` and every reader sees
the new value; nothing else ever changes a tunable. The registry finds the apps' tuning modules
by name (``<app>.tuning`` for each app of ``core.jobs.ENGRAM_APPS``), as the job and MCP
registries do, so an app adds its tunables by adding the module; core imports no app.

bench/ sets tunables through :func:`override` (a context manager) or :func:`tuning_set`, by
their dotted names (``rag.fusion.rrf_k``): an unknown name, a value of the wrong type, or a
field the code reads once at import (``import_time=True``: an API bound or a serializer's
default) is refused with a clear error. Numbers that are not tunables stay where they are:
protocol and API bounds, batch sizes, schema sizes, settings from the environment.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

T = TypeVar("T")

# What a tunable's metadata holds (docs/tuning.md is checked against the registry).
MEANING, BENCH, IMPORT_TIME = "meaning", "bench", "import_time"

_ROOTS: dict[str, Any] = {}
_DEFAULTS: dict[str, Any] = {}


class TuningError(ValueError):
    """An unknown tunable, a value of the wrong type, or one that cannot change at run time."""


def tunable(default: T, *, meaning: str, bench: str, import_time: bool = False) -> T:
    """A dataclass field holding a tunable: ``default`` with what it means and the benchmark (the
    bench/ script or evaluation, and where its figures are recorded) that chose it.
    ``import_time``: the code reads it once at import (an API bound, a serializer's default,
    a function's default argument), so it cannot be overridden at run time."""
    metadata = {MEANING: meaning, BENCH: bench, IMPORT_TIME: import_time}
    return dataclasses.field(default=default, metadata=metadata)


class _Live:
    """The registered root of one app, read at each attribute access (``TUNING.fusion``)."""

    __slots__ = ("_app",)

    def __init__(self, app: str) -> None:
        self._app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(_ROOTS[self._app], name)

    def __repr__(self) -> str:
        return f"<tuning of {self._app}: {_ROOTS[self._app]!r}>"


def register(app: str, root: T) -> T:
    """Register ``app``'s root instance of tunables; returns the live view its code reads
    (typed as the root, so attribute access is checked)."""
    if not dataclasses.is_dataclass(root) or isinstance(root, type):
        raise TypeError(f"{app}'s tunables must be a dataclass instance")
    if app in _DEFAULTS and _DEFAULTS[app] != root:
        raise TuningError(f"{app}'s tunables are registered already")
    _ROOTS[app] = root
    _DEFAULTS[app] = root
    return cast(T, _Live(app))


def _load() -> None:
    from core.jobs import ENGRAM_APPS

    for app in ENGRAM_APPS:
        try:
            importlib.import_module(f"{app}.tuning")
        except ModuleNotFoundError as error:
            if error.name != f"{app}.tuning":
                raise


@dataclass(frozen=True)
class Tunable:
    """One tunable as docs/tuning.md lists it."""

    name: str
    default: Any
    current: Any
    meaning: str
    bench: str
    import_time: bool


def tunables() -> list[Tunable]:
    """Every registered tunable, by name (each app's tuning module imported first)."""
    _load()
    found: list[Tunable] = []
    for app in sorted(_ROOTS):
        _collect(app, _DEFAULTS[app], _ROOTS[app], found)
    return found


def _collect(prefix: str, default: Any, current: Any, found: list[Tunable]) -> None:
    for field in dataclasses.fields(default):
        name = f"{prefix}.{field.name}"
        value = getattr(default, field.name)
        if MEANING in field.metadata:
            found.append(
                Tunable(
                    name=name,
                    default=value,
                    current=getattr(current, field.name),
                    meaning=field.metadata[MEANING],
                    bench=field.metadata[BENCH],
                    import_time=field.metadata[IMPORT_TIME],
                )
            )
        elif dataclasses.is_dataclass(value):
            _collect(name, value, getattr(current, field.name), found)
        else:
            raise TuningError(f"{name} is neither a tunable() nor a group of them")


def _field(name: str) -> tuple[str, list[str], dataclasses.Field[Any]]:
    """The app, the attribute path and the field of the tunable ``name``."""
    _load()
    app, _, rest = name.partition(".")
    if app not in _ROOTS or not rest:
        raise TuningError(f"unknown tunable {name!r} (apps with tunables: {sorted(_ROOTS)})")
    path = rest.split(".")
    owner = _ROOTS[app]
    for depth, part in enumerate(path):
        fields = {f.name: f for f in dataclasses.fields(owner)}
        if part not in fields:
            raise TuningError(
                f"unknown tunable {name!r}: {'.'.join([app, *path[:depth]])} has no {part!r}"
                f" (it has {sorted(fields)})"
            )
        if depth == len(path) - 1:
            if MEANING not in fields[part].metadata:
                raise TuningError(f"{name!r} is a group of tunables, not one")
            return app, path, fields[part]
        owner = getattr(owner, part)
    raise AssertionError("unreachable")


def group(name: str) -> Any:
    """The current frozen instance of the group of tunables ``name`` (``rag.spaces.chunks``)."""
    _load()
    app, _, rest = name.partition(".")
    if app not in _ROOTS:
        raise TuningError(f"unknown group of tunables {name!r}")
    value = _ROOTS[app]
    for part in rest.split(".") if rest else []:
        if not dataclasses.is_dataclass(value) or part not in {
            f.name for f in dataclasses.fields(value)
        }:
            raise TuningError(f"unknown group of tunables {name!r}")
        value = getattr(value, part)
    if not dataclasses.is_dataclass(value):
        raise TuningError(f"{name!r} is one tunable, not a group")
    return value


def get(name: str) -> Any:
    """The current value of the tunable ``name`` (``rag.fusion.rrf_k``)."""
    app, path, _ = _field(name)
    value = _ROOTS[app]
    for part in path:
        value = getattr(value, part)
    return value


def _checked(name: str, field: dataclasses.Field[Any], owner: Any, value: Any) -> Any:
    """``value`` if it fits the field's declared type (an int is accepted for a float)."""
    hints = typing.get_type_hints(type(owner))
    expected = hints[field.name]
    if _fits(expected, value):
        return float(value) if _is_float_only(expected) and type(value) is int else value
    raise TuningError(f"{name} takes {_type_name(expected)}, not {value!r}")


def _fits(expected: Any, value: Any) -> bool:
    origin = typing.get_origin(expected)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(arg, value) for arg in typing.get_args(expected))
    if origin is typing.Literal:
        return value in typing.get_args(expected)
    if expected is type(None):
        return value is None
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is tuple:
        args = typing.get_args(expected)
        if not isinstance(value, tuple | list):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(args[0], item) for item in value)
        return len(args) == len(value) and all(map(_fits, args, value))
    if isinstance(expected, type):
        return isinstance(value, expected)
    return False


def _is_float_only(expected: Any) -> bool:
    return expected is float or (
        typing.get_origin(expected) in (typing.Union, types.UnionType)
        and float in typing.get_args(expected)
        and int not in typing.get_args(expected)
    )


def _type_name(expected: Any) -> str:
    if typing.get_origin(expected) is typing.Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(expected)))
    return getattr(expected, "__name__", None) or str(expected)


def tuning_set(name: str, value: Any) -> Any:
    """Set the tunable ``name`` to ``value`` (type-checked) by replacing the frozen instances on
    its path in the registry; returns the value it had. Prefer :func:`override`, which puts the
    old value back."""
    app, path, field = _field(name)
    if field.metadata[IMPORT_TIME]:
        raise TuningError(
            f"{name} is read once at import (an API bound or default): it cannot be overridden"
        )
    chain = [_ROOTS[app]]
    for part in path[:-1]:
        chain.append(getattr(chain[-1], part))
    value = _checked(name, field, chain[-1], value)
    if isinstance(value, list):
        value = tuple(value)
    old = getattr(chain[-1], path[-1])
    replaced = dataclasses.replace(chain[-1], **{path[-1]: value})
    for owner, part in zip(reversed(chain[:-1]), reversed(path[:-1]), strict=True):
        replaced = dataclasses.replace(owner, **{part: replaced})
    _ROOTS[app] = replaced
    return old


@contextmanager
def override(name_or_values: str | Mapping[str, Any], value: Any = None) -> Iterator[None]:
    """Set tunables for the block and put them back after it: ``override("rag.fusion.rrf_k",
    30)`` or ``override({"rag.fusion.rrf_k": 30, ...})``. Every name is checked before any is
    set."""
    values = {name_or_values: value} if isinstance(name_or_values, str) else dict(name_or_values)
    saved = {app: root for app, root in _ROOTS.items()}
    try:
        for name, new in values.items():
            tuning_set(name, new)
        yield
    finally:
        _ROOTS.update(saved)


def reset() -> None:
    """Every tunable back to its default (tests)."""
    _ROOTS.update(_DEFAULTS)


# --- docs/tuning.md --------------------------------------------------------------------------
DOCS_BEGIN = "<!-- tunables: made by ./engram manage tuning_docs --write; do not edit by hand -->"
DOCS_END = "<!-- /tunables -->"


def docs_table() -> str:
    """Every tunable as docs/tuning.md lists it: one table per app, by name."""
    rows: dict[str, list[str]] = {}
    for item in tunables():
        app = item.name.split(".", 1)[0]
        fixed = " Read at import: not overridable." if item.import_time else ""
        rows.setdefault(app, []).append(
            f"| `{item.name}` | `{item.default!r}` | {_cell(item.meaning)}{fixed} |"
            f" {_cell(item.bench)} |"
        )
    header = "| name | default | meaning | chosen by |\n|---|---|---|---|"
    return "\n\n".join(f"### {app}\n\n{header}\n" + "\n".join(lines) for app, lines in rows.items())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rendered_docs(text: str) -> str:
    """``text`` (docs/tuning.md) with the table between its markers made anew."""
    if DOCS_BEGIN not in text or DOCS_END not in text:
        raise ValueError("docs/tuning.md has lost its tunables markers")
    head, rest = text.split(DOCS_BEGIN, 1)
    _, tail = rest.split(DOCS_END, 1)
    return f"{head}{DOCS_BEGIN}\n{docs_table()}\n{DOCS_END}{tail}"
