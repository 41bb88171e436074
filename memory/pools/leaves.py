"""What a pool's data is searched by: its *leaves*, the values a client reads by dot path.

A leaf is a value at a dot path that is not an object with keys: a string, a number, a boolean,
null, a list, or an empty object. Its indexed text is its path's words, then the value (a
string as it is, anything else as compact JSON), so ``"customer.email_domain": "acme.com"`` is
found by "customer email domain" and by "acme". An object holding a key that a dot path cannot
name (``memory.names.PATH_SEGMENT``) is one leaf itself: that is as deep as a client can read.

Writes change the leaves under the path written and the path's ancestors only: ``region``
reads exactly those, before and after a write, and ``region_changes`` compares them, so a write
to one key of a large pool re-indexes only what changed. Pure functions: the services store
leaves and postings (``memory/tier_index.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from memory import names

# Indexed text of one leaf: long values are cut (the index is for finding, the value is read
# from the pool).
MAX_LEAF_TEXT = 20_000
_SEGMENT = re.compile(names.PATH_SEGMENT)
_WORDS = re.compile(r"[_\-.]+")


def _branch(value: Any, depth: int) -> bool:
    """Whether ``value`` is walked into rather than indexed whole."""
    return (
        isinstance(value, dict)
        and bool(value)
        and depth < names.MAX_PATH_DEPTH
        and all(isinstance(k, str) and _SEGMENT.fullmatch(k) for k in value)
    )


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) of every leaf of ``value`` found at ``prefix``, depth first."""
    depth = len(prefix.split(".")) if prefix else 0
    if not _branch(value, depth):
        yield prefix, value
        return
    for key in sorted(value):
        yield from leaves(value[key], _join(prefix, key))


def leaf_text(path: str, value: Any) -> str:
    """The text a leaf is indexed by: its path's words, then its value."""
    if isinstance(value, str):
        shown = value
    else:
        shown = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f"{_WORDS.sub(' ', path)}\n{shown}"[:MAX_LEAF_TEXT]


def region(data: Any, path: str) -> dict[str, str]:
    """The leaves a write at ``path`` may change, with their texts: an ancestor of the path
    that is a leaf (a scalar, an empty object, an object a dot path cannot enter), or else
    every leaf at or under the path. Other leaves are untouched by such a write. Read it
    before and after the write, and compare (``region_changes``)."""
    segments = list(names.parse_path(path)) if path else []
    node = data
    for depth in range(len(segments) + 1):
        if not _branch(node, depth):
            leaf = ".".join(segments[:depth])
            return {} if leaf == "" and node == {} else {leaf: leaf_text(leaf, node)}
        if depth == len(segments):
            break
        if segments[depth] not in node:
            return {}
        node = node[segments[depth]]
    prefix = ".".join(segments)
    return {leaf: leaf_text(leaf, value) for leaf, value in leaves(node, prefix)}


def region_changes(
    before: Mapping[str, str], after: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """(removed, added) between a region before and after a write: the paths whose leaf went
    away or changed, and the leaves made or changed (path -> new text)."""
    removed = sorted(p for p, text in before.items() if after.get(p) != text)
    added = {p: text for p, text in after.items() if before.get(p) != text}
    return removed, added


def all_leaves(data: Any) -> dict[str, str]:
    """Every leaf of a pool's data with its text (a new pool, a rebuild)."""
    return region(data, "")
