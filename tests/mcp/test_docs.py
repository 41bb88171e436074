"""docs/mcp.md's tool table and README's tool count are the registry's
(``./engram manage mcp_docs --write`` makes them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from core.mcp import docs
from core.mcp.registry import tools


def _rows(text: str) -> dict[str, str]:
    """The docs' table rows by tool name: the first row of each tool holds its description."""
    block = text[text.index(docs.START) : text.index(docs.END)]
    found: dict[str, str] = {}
    for line in block.splitlines():
        match = re.match(r"^\| `([a-z_]+)` \|", line)
        if match:
            found[match.group(1)] = line
    return found


def test_the_docs_table_names_and_describes_every_tool_and_nothing_else() -> None:
    text = docs.docs_path().read_text()
    rows = _rows(text)
    assert set(rows) == set(tools())
    for name, tool in tools().items():
        assert rows[name].rstrip(" |").endswith(tool.description.replace("|", "\\|")), name
        for job in tool.jobs:
            assert f"`{job.rest}`" in text, (name, job.value)
    assert f"{len(tools())} tools." in text


def test_the_generated_files_are_up_to_date() -> None:
    assert docs.rendered_docs(docs.docs_path().read_text()) == docs.docs_path().read_text()
    readme = docs.readme_path().read_text()
    assert docs.rendered_readme(readme) == readme
    counts = re.findall(r"<!-- mcp-count -->(\d+)<!-- /mcp-count -->", readme)
    assert counts == [str(len(tools()))]
    call_command("mcp_docs", "--check")


def test_a_docs_file_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="markers"):
        docs.rendered_docs("# MCP\n")
    with pytest.raises(ValueError, match="mcp-count"):
        docs.rendered_readme("# Engram\n")


def test_check_fails_on_a_stale_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "mcp.md"
    stale.write_text(f"x\n{docs.START}\nold\n{docs.END}\n")
    monkeypatch.setattr(docs, "docs_path", lambda: stale)
    with pytest.raises(CommandError, match=r"Out of date: mcp\.md"):
        call_command("mcp_docs", "--check")
