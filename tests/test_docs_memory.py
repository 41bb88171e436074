"""docs/memory.md is an index of one page per capability (docs/memory/*.md): it links every page,
and each page opens with what it is for and a short example whose client calls exist in the
client library and whose paths are routes (no database)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.mcp.registry import tools
from tests.support import docs

INDEX = docs.ROOT / "docs" / "memory.md"
PAGES = sorted((docs.ROOT / "docs" / "memory").glob("*.md"))


def _engram() -> Any:
    """A client that is never called: its resources and methods are what the docs are checked
    against (imported from its source tree, as ``pip install ./clients/python`` would)."""
    sys.path.insert(0, str(docs.CLIENT_SRC))
    try:
        from engram_client import Engram
    finally:
        sys.path.remove(str(docs.CLIENT_SRC))
    return Engram(base_url="http://127.0.0.1:9", api_key="eng_docs_only")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with _engram() as engram:
        yield engram


def test_the_index_links_every_page_and_stays_short() -> None:
    index = INDEX.read_text()
    linked = set(re.findall(r"\]\(memory/([\w-]+\.md)\)", index))
    assert len(PAGES) >= 8
    assert linked == {page.name for page in PAGES}
    assert len(index.splitlines()) < 80


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_each_page_opens_with_what_it_is_for_and_an_example(page: Path) -> None:
    lines = page.read_text().splitlines()
    assert lines[0].startswith("# ") and not lines[1]
    opening = lines[2:]
    first_paragraph = opening[: opening.index("")]
    assert first_paragraph and not first_paragraph[0].startswith(("#", "|", "```", "-"))
    fence = next(n for n, line in enumerate(opening) if line.startswith("```"))
    assert fence <= len(first_paragraph) + 2, "the example follows the opening paragraph"
    assert opening[fence] in {"```sh", "```python"}
    assert not [line for line in opening[:fence] if line.startswith("#")]


@pytest.mark.parametrize("page", [INDEX, *PAGES], ids=lambda page: page.name)
def test_the_examples_call_what_the_client_has(page: Path, client: Any) -> None:
    problems = [
        f"{page.name}:{line}: {problem}"
        for line, code in docs.blocks(page, "python")
        for problem in docs.call_problems(client, code)
    ]
    assert problems == [], "\n".join(problems)


def test_the_client_calls_are_checked(client: Any) -> None:
    """The check above sees a call the client lacks (or it would pass on anything)."""
    code = 'client.memories.long_term.add(content="x", colour="red")\nclient.memories.nope()\n'
    assert docs.call_problems(client, code) == [
        "client.memories.long_term.add: no parameter 'colour'",
        "client.memories.nope: no attribute 'nope'",
    ]
    assert docs.call_problems(client, 'client.memories.long_term.add(content="x")') == []


def test_every_path_a_curl_names_is_a_route() -> None:
    curls = [
        line
        for page in [INDEX, *PAGES]
        for _, code in docs.blocks(page, "sh")
        for line in code.splitlines()
        if "curl " in line
    ]
    assert len(curls) >= 6
    named: set[str] = set()
    for line in curls:
        found = docs.paths(line)
        assert found, f"a curl without a path the test can check: {line}"
        named |= found
    assert docs.unrouted(named) == []


def test_the_openings_name_mcp_tools_and_jobs_that_exist() -> None:
    """ "Over MCP: ..." names tools of the registry and their jobs (``kind``, ``action``)."""
    known = set(tools()) | {job.value for tool in tools().values() for job in tool.jobs}
    known |= {tool.selector for tool in tools().values() if tool.selector}
    known |= {str(field) for tool in tools().values() for field in tool.input().fields}
    named: dict[str, set[str]] = {}
    for page in PAGES:
        opening = page.read_text().split("```", 1)[0]
        said = re.search(r"Over\s+MCP[,:]?\s(.*?)\.(?:\s|$)", opening, re.DOTALL)
        if said:
            named[page.name] = set(re.findall(r"`([a-z]+(?:_[a-z]+)*)`", said.group(1)))
    assert len(named) >= 6 and all(named.values()), named
    unknown = {page: names - known for page, names in named.items() if names - known}
    assert unknown == {}
