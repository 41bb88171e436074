"""The user docs name behaviours, not the reference specifications they came from: a reader
cannot look up "seed 003". Only the dated benchmark history keeps such names (it records how a
figure was chosen). Nor do they name MCP tools that are gone: docs/mcp.md's table of changes
lists the old names, and only that table may."""

from __future__ import annotations

import re
from pathlib import Path

from core.mcp.registry import tools

ROOT = Path(__file__).resolve().parents[1]
HISTORY = {"benchmarks-log.md"}
SEED = re.compile(r"\bseeds? 0\d\d\b", re.IGNORECASE)


def _user_docs() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "clients" / "python" / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]


def _retired_tools() -> set[str]:
    """The old names in docs/mcp.md's table of changes (``| `old` | now |``), less those kept."""
    text = (ROOT / "docs" / "mcp.md").read_text()
    table = text[text.index("| old tool | now |") :].split("\n\n", 1)[0]
    return {
        name
        for name, now in re.findall(r"^\| `(\w+)` \| (.+) \|$", table, re.MULTILINE)
        if now.strip() != "unchanged"
    }


def test_user_docs_never_name_a_seed() -> None:
    pages = _user_docs()
    assert len(pages) > 5
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for page in pages
        if page.name not in HISTORY
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        if SEED.search(line)
    ]
    assert found == [], "\n".join(found)


def test_user_docs_name_no_retired_mcp_tool() -> None:
    retired = _retired_tools()
    assert {"knowledge_query", "write_memory", "graph_rag_context"} <= retired
    assert not retired & set(tools())
    found = [
        f"{page.relative_to(ROOT)}:{number}: `{name}`"
        for page in _user_docs()
        if page.name != "mcp.md" and page.name not in HISTORY
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        for name in re.findall(r"`(\w+)`", line)
        if name in retired
    ]
    assert found == [], "\n".join(found)
