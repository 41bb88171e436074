"""The tool table of docs/mcp.md and the tool count of README.md, made from the registry
(``./engram manage mcp_docs --write``; ``tests/mcp/test_docs.py`` checks they agree)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.conf import settings

from core.mcp.registry import Job, Tool, tools
from core.mcp.schemas import tool_schemas

START = "<!-- mcp-tools: made by ./engram manage mcp_docs --write; do not edit by hand -->"
END = "<!-- /mcp-tools -->"
COUNT = re.compile(r"<!-- mcp-count -->\d+<!-- /mcp-count -->")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _parameters(tool: Tool, job: Job, schema: dict[str, Any]) -> str:
    """The job's parameters, the required ones first and starred."""
    if tool.selector:
        branch = next(
            b for b in schema["oneOf"] if b["properties"][tool.selector]["const"] == job.value
        )
        properties = [p for p in branch["properties"] if p != tool.selector]
        required = set(branch.get("required", ()))
    else:
        properties, required = list(schema["properties"]), set(schema.get("required", ()))
    for alternative in schema.get("oneOf", ()) if not tool.selector else ():
        required |= set(alternative.get("required", ())) & set(properties) - required
    names = [f"`{p}`*" if p in required else f"`{p}`" for p in properties]
    return ", ".join(names) or "none"


def table() -> str:
    """The generated block: the count, then one row per tool and per further job."""
    schemas = tool_schemas()
    rows = [
        START,
        f"{len(tools())} tools. `*`: required (for `memory_write` and `add_document`, within "
        "the mode chosen).",
        "",
        "| tool | job | scope | REST operation | parameters | what it does |",
        "|---|---|---|---|---|---|",
    ]
    for tool in tools().values():
        for job in tool.jobs:
            first = job is tool.jobs[0]
            what = tool.description if first else job.description
            picked = f"`{tool.selector}: {job.value}`" if tool.selector else ""
            if tool.selector and first:
                picked += " (default)"
            rows.append(
                f"| {'`' + tool.name + '`' if first else ''} | {picked} | {job.scope} | "
                f"`{job.rest}` | {_cell(_parameters(tool, job, schemas[tool.name][0]))} | "
                f"{_cell(what)} |"
            )
    rows.append(END)
    return "\n".join(rows)


def docs_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "mcp.md"


def readme_path() -> Path:
    return Path(settings.BASE_DIR) / "README.md"


def rendered_docs(text: str) -> str:
    """docs/mcp.md with its generated block (between START and END) made anew."""
    begin, end = text.find(START), text.find(END)
    if begin < 0 or end < 0:
        raise ValueError(f"docs/mcp.md lacks the generated block's markers ({START} ... {END})")
    made = text[:begin] + table() + text[end + len(END) :]
    return COUNT.sub(f"<!-- mcp-count -->{len(tools())}<!-- /mcp-count -->", made)


def rendered_readme(text: str) -> str:
    if not COUNT.search(text):
        raise ValueError("README.md lacks the tool count's marker <!-- mcp-count -->")
    return COUNT.sub(f"<!-- mcp-count -->{len(tools())}<!-- /mcp-count -->", text)
