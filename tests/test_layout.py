"""The layout rules of docs/architecture.md, checked on the source (no database): modules stay
under about 500 lines, selectors never import services, imports only go down between the apps,
and nobody but ``rag`` writes SQL over rag's graph tables."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "rag", "memory", "skills", "content", "config")
MAX_LINES = 500
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


def test_no_module_passes_500_lines() -> None:
    offending = [
        f"{_name(path)}: {count} lines"
        for path in _modules()
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert offending == [], (
        f"modules over {MAX_LINES} lines (split them into a package by concern):\n"
        + "\n".join(offending)
    )


def _is_selector(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return "selectors" in parts[:-1] or path.name == "selectors.py"


def test_selectors_never_import_services() -> None:
    selectors = [path for path in _modules() if _is_selector(path)]
    assert any(_name(path) == "rag/selectors.py" for path in selectors)
    assert any(_name(path).startswith("memory/selectors/") for path in selectors)
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
