"""The one bound on caller-given ``metadata`` (docs/api.md, "Input rules"): messages, long-term
entries, knowledge items, documents, memory contexts, conversations, graph nodes and edges,
agents, and skills' execution contexts. Metadata is echoed back (a context's items, searches,
listings), so an unbounded value would make every answer that shows it unbounded too.

A value is at most ``METADATA_MAX_BYTES`` bytes as compact JSON in UTF-8 (``{"a":1}`` is 7
bytes: no spaces, non-ASCII characters as themselves), nests at most ``METADATA_MAX_DEPTH``
levels (the object itself is level 1) and has at most ``METADATA_MAX_PROPERTIES`` keys at its
top level. Over any: 400 ``metadata_too_large`` with the limits in ``details.limit``. Only what
a caller sends is checked, at the doors (``MetadataField`` in every input serializer, the
admin's forms): rows stored before the bound existed stay readable and writable, and metadata
Engram writes itself (summaries, merges) is not refused.

What a context's items echo of their metadata (``echo``, counted in the context's tokens) and
the bound of a context's body (``BODY_BYTES_PER_TOKEN``, ``BODY_FIXED_BYTES``) are here too:
context assembly (``memory.context.assembly``) and graph RAG (``rag.graph.graph_rag``) share them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.errors import ValidationFailed

# 16 KiB: a client's ids, labels and small structures fit many times over (a LoCoMo turn's
# ``{"dia_id":"D1:3"}`` is 17 bytes); a document or a transcript does not belong here.
METADATA_MAX_BYTES = 16_384
# Deeper than any record a client keeps as metadata; well inside the body's own 64 levels.
METADATA_MAX_DEPTH = 16
# Labels, ids and flags by name: a client's metadata has a handful. The schema states it as
# ``maxProperties``, which a client's own validation reads before the bytes.
METADATA_MAX_PROPERTIES = 128
LIMIT = {
    "bytes": METADATA_MAX_BYTES,
    "depth": METADATA_MAX_DEPTH,
    "properties": METADATA_MAX_PROPERTIES,
}

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def metadata_size(value: Any, *, stop_after: int | None = None) -> int:
    """``value``'s size in bytes as compact UTF-8 JSON; when ``stop_after`` is given, counting
    stops as soon as the size passes it (a 20 MB value is not encoded whole to be refused)."""
    size = 0
    for piece in _ENCODER.iterencode(value):
        size += len(piece.encode("utf-8"))
        if stop_after is not None and size > stop_after:
            break
    return size


def metadata_depth(value: Any, *, stop_after: int) -> int:
    """How many levels ``value`` nests (a scalar 0, ``{}`` 1), walked without recursion and
    stopping once it passes ``stop_after``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop_after:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def metadata_check(value: Any, *, field: str = "metadata", stored_as: str = "") -> Any:
    """``value`` when it is within the bound, else 400 ``metadata_too_large`` (``details``: the
    ``limit`` and the ``field``). ``stored_as``: the value is stored as ``{stored_as: value}``,
    whose size and depth are what is bound."""
    if isinstance(value, Mapping) and len(value) > METADATA_MAX_PROPERTIES:
        raise ValidationFailed(
            f"{field} has more than {METADATA_MAX_PROPERTIES} keys.",
            code="metadata_too_large",
            details={"limit": dict(LIMIT), "field": field},
        )
    stored = {stored_as: value} if stored_as else value
    depth = metadata_depth(stored, stop_after=METADATA_MAX_DEPTH)
    if depth > METADATA_MAX_DEPTH:
        raise ValidationFailed(
            f"{field} nests deeper than {METADATA_MAX_DEPTH} levels.",
            code="metadata_too_large",
            details={"limit": dict(LIMIT), "field": field},
        )
    try:
        size = metadata_size(stored, stop_after=METADATA_MAX_BYTES)
    except (TypeError, ValueError):
        return value  # not JSON (NaN, a non-JSON type): the field's own validation says so
    if size > METADATA_MAX_BYTES:
        raise ValidationFailed(
            f"{field} is limited to {METADATA_MAX_BYTES} bytes as compact JSON.",
            code="metadata_too_large",
            details={"limit": dict(LIMIT), "field": field},
        )
    return value


# --- what an answer echoes of metadata, and what it weighs --------------------------------------

# A context's item (``memory.context.assembly``, ``rag.graph.graph_rag``) echoes its metadata (a
# message's as stored, a memory's, a summary's key points...) cut to at most this many bytes of
# compact JSON: its leading top-level keys that fit whole. The echo's tokens count against the
# budget like the item's line.
ECHO_MAX_BYTES = 256
# A context's body is bounded by BODY_BYTES_PER_TOKEN x token_budget + BODY_FIXED_BYTES
# (docs/memory/context.md, "The budget"; docs/rag.md, "Graph RAG"): every item's bytes (its line in
# ``context`` and its JSON in ``sections``) come out of BODY_BYTES_PER_TOKEN x token_budget, and
# an item that does not fit in what is left is left out, as one that does not fit the tokens
# left. Text that costs few
# tokens for its bytes (runs of spaces, characters the tokenizer drops, words past 100
# characters that count one token) cannot make the answer large. The fixed part holds the query
# (at most 4,000 characters, each at most 6 bytes as JSON), the section headings, the timings
# and the answer's other fields. A LoCoMo context's answer weighs 12-15 bytes per token of it
# (docs/benchmarks-log.md), so the allowance does not bind on ordinary text.
BODY_BYTES_PER_TOKEN = 64
BODY_FIXED_BYTES = 32_768


def json_bytes(value: Any) -> int:
    """``value``'s bytes as the API renders it (DRF's JSONRenderer: compact, UTF-8, U+2028 and
    U+2029 escaped)."""
    text = _ENCODER.encode(value)
    return len(text.encode("utf-8")) + 3 * (text.count("\u2028") + text.count("\u2029"))


def echo(metadata: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """What an item shows of its ``metadata``: the whole object when its compact JSON is at most
    ``ECHO_MAX_BYTES``, else its leading top-level keys that fit whole (later, smaller ones
    too), with True: cut."""
    if not metadata:
        return {}, False
    # Stored metadata is JSON: the C encoder, whole (a row of 20 MB written before the bound
    # takes tens of milliseconds; everything newer is at most METADATA_MAX_BYTES).
    if _size(metadata) <= ECHO_MAX_BYTES:
        return dict(metadata), False
    kept: dict[str, Any] = {}
    used = 2  # {}
    for key, value in metadata.items():
        size = _size({key: value}) - 2 + (1 if kept else 0)
        if used + size <= ECHO_MAX_BYTES:
            kept[key] = value
            used += size
    return kept, True


def _size(value: Any) -> int:
    text = _ENCODER.encode(value)
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def echo_text(shown: Mapping[str, Any]) -> str:
    """The echo as the tokenizer counts it: its compact JSON ("" for none)."""
    return _ENCODER.encode(shown) if shown else ""
