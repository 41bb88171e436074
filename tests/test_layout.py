"""The layout rules of docs/architecture.md, checked on the source (no database): each package's
anatomy (layers, sub-domain packages, algorithm modules its docstring names), selectors never
import services, imports only go down between the apps, and nobody but ``rag`` writes SQL over
rag's graph tables."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "rag", "memory", "skills", "content", "config")
APPS = {"rag", "memory", "skills", "content"}
# What each top-level package may not import (imports only go down: memory; skills, content; rag;
# core). config assembles the project and may import anything.
FORBIDDEN = {
    "core": APPS | {"config"},
    "rag": {"memory", "skills", "content"},
    "content": {"skills", "memory"},
    "skills": {"content", "memory"},
}
GRAPH_TABLE = re.compile(r"\brag_graph", re.IGNORECASE)


@cache
def _modules() -> tuple[Path, ...]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.relative_to(ROOT).parts:
                found.append(path)
    return tuple(found)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _module_name(path: Path) -> list[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, as absolute dotted names with their line: ``from x import
    y`` counts as ``x`` and ``x.y`` (``y`` may be a submodule), relative imports are resolved."""
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def _offending(paths: Iterable[Path], bad: Callable[[Path, str], bool]) -> list[str]:
    """``file:line: imports module`` for each import statement of ``paths`` that imports a
    module ``bad`` refuses (once per statement)."""
    found: dict[tuple[str, int], str] = {}
    for path in paths:
        for line, module in _imports(path):
            if bad(path, module):
                found.setdefault((_name(path), line), module)
    return [f"{name}:{line}: imports {module}" for (name, line), module in found.items()]


def test_the_scan_sees_the_code() -> None:
    names = {_name(path) for path in _modules()}
    assert {"core/actors.py", "rag/search.py", "memory/tasks.py", "config/settings.py"} <= names
    assert not any("/migrations/" in name for name in names)


# --- anatomy -------------------------------------------------------------------------------
# A package of an app (the app itself, or a sub-domain package such as rag/graph/) holds:
# - its layers, each a module or a package of that name (LAYERS); a layer split in modules keeps
#   its name as a prefix or suffix (``admin_review.py``, ``search_apis.py``, ``knowledge_urls``);
# - sub-domain packages: packages holding layers of their own, checked the same way;
# - algorithm modules (and packages of them: ``rag/chunking/``), each named in the package's
#   docstring (``__init__.py``) as ``name``: the documented place where they are listed with
#   what they do. Nothing else: a module is never split off only to stay under a line count.
LAYERS = frozenset(
    {
        "__init__",
        "apps",
        "models",
        "querysets",
        "services",
        "selectors",
        "apis",
        "admin",
        "mcp",
        "urls",
        "tasks",
        "tuning",
        "spaces",
        "roles",
        "management",
        "migrations",
    }
)
ANATOMY_ROOTS = ("core", "rag", "content", "skills", "memory")


def _is_layer(name: str) -> bool:
    return name in LAYERS or any(
        name.startswith(f"{layer}_") or name.endswith(f"_{layer}") for layer in LAYERS
    )


def _children(package: Path) -> dict[str, Path]:
    found = {path.stem: path for path in package.glob("*.py")}
    found.update(
        {path.name: path for path in package.iterdir() if (path / "__init__.py").is_file()}
    )
    return found


def _documented(package: Path) -> set[str]:
    docstring = ast.get_docstring(_tree(package / "__init__.py")) or ""
    return set(re.findall(r"``(\w+)``", docstring))


def _is_sub_domain(path: Path) -> bool:
    return path.is_dir() and any(
        _is_layer(child) and child != "__init__" for child in _children(path)
    )


def _anatomy_offences(package: Path) -> list[str]:
    """What in ``package`` is neither a layer, a sub-domain package (checked in turn) nor an
    algorithm module its docstring names."""
    offences = []
    documented = _documented(package)
    for name, path in sorted(_children(package).items()):
        if _is_layer(name):
            continue
        if _is_sub_domain(path):
            offences.extend(_anatomy_offences(path))
        elif name not in documented:
            offences.append(f"{_name(path)}: not a layer, and {_name(package)} does not name it")
    return offences


def test_each_package_has_the_anatomy_of_a_sub_domain() -> None:
    offences = [offence for root in ANATOMY_ROOTS for offence in _anatomy_offences(ROOT / root)]
    assert offences == [], (
        "modules outside the anatomy of docs/architecture.md (a layer, a sub-domain package, or "
        "an algorithm module its package's docstring names):\n" + "\n".join(offences)
    )


def test_the_anatomy_check_sees_the_sub_domains() -> None:
    checked = {_name(ROOT / "rag" / "graph"), _name(ROOT / "rag" / "agentic")}
    checked |= {
        _name(ROOT / "memory" / name)
        for name in (
            "working", "short_term", "long_term", "pools", "conversations", "knowledge",
            "context", "maintenance",
        )
    }  # fmt: skip
    for name in checked:
        path = ROOT / name
        assert any(_is_layer(child) and child != "__init__" for child in _children(path)), name
    # The graph's algorithm modules are listed where the check reads them.
    assert {"walks", "retrieval", "node_types", "owned"} <= _documented(ROOT / "rag" / "graph")
    assert not (ROOT / "rag" / "graph_apis.py").exists()


def _is_selector(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return "selectors" in parts[:-1] or path.name == "selectors.py"


def test_selectors_never_import_services() -> None:
    selectors = [path for path in _modules() if _is_selector(path)]
    assert any(_name(path) == "rag/selectors.py" for path in selectors)
    assert any(_name(path).startswith("memory/maintenance/selectors/") for path in selectors)
    offending = _offending(selectors, lambda path, module: "services" in module.split("."))
    assert offending == [], "selectors importing services:\n" + "\n".join(offending)


def test_imports_only_go_down() -> None:
    def against(path: Path, module: str) -> bool:
        return module.split(".")[0] in FORBIDDEN.get(path.relative_to(ROOT).parts[0], set())

    offending = _offending(_modules(), against)
    assert offending == [], "imports against the dependency direction:\n" + "\n".join(offending)


def _string_literals(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
    return found


def test_no_sql_over_the_graph_tables_outside_rag() -> None:
    outside = [path for path in _modules() if path.relative_to(ROOT).parts[0] != "rag"]
    offending = [
        f"{_name(path)}:{line}: {value.strip()[:80]!r}"
        for path in outside
        for line, value in _string_literals(path)
        if GRAPH_TABLE.search(value)
    ]
    assert offending == [], "strings naming rag's graph tables outside rag:\n" + "\n".join(
        offending
    )
