"""rag owns the knowledge graph's tables: no module outside rag (its migrations aside) writes SQL
over them, and the relation types other apps give their edges are named once, in
``rag.graph.relations``. The graph walks other apps need are ``rag.graph`` functions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Not the product: the tests, the benchmarks (which build graphs with COPY) and the tooling.
SKIPPED = {"rag", "tests", "bench", ".venv", ".engram", ".git", "node_modules"}
# rag_graphnode, rag_graphedge... in any case; settings such as RAG_GRAPH_EXTRACTION are not tables.
GRAPH_TABLE = re.compile(r"rag_graph(?!_)", re.IGNORECASE)
RELATIONS = ROOT / "rag" / "graph" / "relations.py"


def _modules() -> list[Path]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] in SKIPPED or "migrations" in parts:
            continue
        found.append(path)
    return found


def test_no_module_outside_rag_names_the_graph_tables() -> None:
    modules = _modules()
    assert any(p.relative_to(ROOT).parts[0] == "skills" for p in modules)  # the scan scans
    offending = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in modules
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if GRAPH_TABLE.search(line)
    ]
    assert offending == [], "SQL over rag's graph tables outside rag:\n" + "\n".join(offending)


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def test_relation_types_are_named_once() -> None:
    """The relation types in ``rag.graph.relations`` appear as a string in no other module of
    the product (rag's included): everyone imports the name."""
    from rag.graph import relations

    names = {
        value
        for key, value in vars(relations).items()
        if key.isupper() and isinstance(value, str) and key not in {"OUT", "IN", "BOTH"}
    }
    assert {"depends_on", "references"} <= names
    offending = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if path == RELATIONS or parts[0] in SKIPPED - {"rag"} or "migrations" in parts:
            continue
        repeated = names & _string_constants(path)
        if repeated:
            offending.append(f"{path.relative_to(ROOT)}: {sorted(repeated)}")
    assert offending == [], "relation types spelt out again:\n" + "\n".join(offending)
