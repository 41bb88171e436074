"""Reading the user docs in tests: their fenced code blocks, the paths they name (checked against
the URLconf) and the client-library calls their examples make (checked against the client)."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

from django.urls import Resolver404, resolve

ROOT = Path(__file__).resolve().parents[2]
CLIENT_SRC = ROOT / "clients" / "python" / "src"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
# A path a page names: in a URL, a curl command, a table cell or the text.
PATH = re.compile(
    r"(?:(?<=[\s`(\"'])|(?<=\$ENGRAM_URL)|(?<=:8000))"
    r"(/(?:api|admin|mcp|readyz|healthz)[^\s`\"')?]*)"
)
PLACEHOLDER = re.compile(r"\{[^}/]+\}|<[^>/]+>")


def blocks(page: Path, language: str) -> list[tuple[int, str]]:
    """The page's fenced blocks of ``language``: (line number of the fence, code)."""
    text = page.read_text()
    return [
        (text.count("\n", 0, match.start()) + 1, match.group(2))
        for match in FENCE.finditer(text)
        if match.group(1) == language
    ]


def paths(text: str) -> set[str]:
    return {path.rstrip(".,;:>") for path in PATH.findall(text)}


def unrouted(named: set[str]) -> list[str]:
    """The paths of ``named`` that no route serves (placeholders such as ``{id}`` read as 1)."""
    missing = []
    for path in sorted(named):
        try:
            match = resolve(PLACEHOLDER.sub("1", path))
        except Resolver404:
            missing.append(path)
            continue
        if match.url_name is None:  # the admin's catch-all answers any path under /admin/
            missing.append(path)
    return missing


def client_calls(code: str) -> list[tuple[str, list[str], list[str]]]:
    """The ``client.a.b(...)`` calls of a Python example: (dotted name, attribute chain, the
    keyword arguments given)."""
    calls = []
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        chain: list[str] = []
        target: Any = node.func
        while isinstance(target, ast.Attribute):
            chain.insert(0, target.attr)
            target = target.value
        if isinstance(target, ast.Name) and target.id == "client":
            keywords = [k.arg for k in node.keywords if k.arg is not None]
            calls.append(("client." + ".".join(chain), chain, keywords))
    return calls


def call_problems(client: Any, code: str) -> list[str]:
    """What in ``code``'s client calls the client does not have: a resource or method, or a
    keyword argument the method does not take."""
    problems = []
    for name, chain, keywords in client_calls(code):
        target = client
        for attribute in chain:
            if not hasattr(target, attribute):
                problems.append(f"{name}: no attribute {attribute!r}")
                break
            target = getattr(target, attribute)
        else:
            parameters = inspect.signature(target).parameters
            problems += [f"{name}: no parameter {k!r}" for k in keywords if k not in parameters]
    return problems
