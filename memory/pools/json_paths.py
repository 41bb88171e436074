"""Reading and changing nested JSON objects by dot path (``agent_bulletin.market_regime`` is
``data["agent_bulletin"]["market_regime"]``). Paths index objects only; the root is ``()``."""

from __future__ import annotations

from typing import Any

from core.errors import Conflict, NotFound
from memory.names import json_text

_MISSING = object()


def same(a: Any, b: Any) -> bool:
    """Equal as JSON (``1``, ``1.0`` and ``true`` are three different values here)."""

    def canonical(value: Any) -> str:
        return json_text(value, sort_keys=True, separators=(",", ":"))

    return a is b or canonical(a) == canonical(b)


def _path_text(segments: tuple[str, ...]) -> str:
    return ".".join(segments)


def _not_found(segments: tuple[str, ...]) -> NotFound:
    return NotFound(
        "Nothing at this path.", code="path_not_found", details={"path": _path_text(segments)}
    )


def get(data: Any, segments: tuple[str, ...]) -> Any:
    """The value at the path, or ``_MISSING``."""
    node = data
    for segment in segments:
        if not isinstance(node, dict) or segment not in node:
            return _MISSING
        node = node[segment]
    return node


def exists(value: Any) -> bool:
    return value is not _MISSING


def _parent(data: dict[str, Any], segments: tuple[str, ...], create: bool) -> dict[str, Any]:
    """The object holding the path's last key; with ``create``, missing objects on the way are
    made. A value on the way that is not an object: 409 ``path_conflict``."""
    node = data
    for depth, segment in enumerate(segments[:-1]):
        child = node.get(segment, _MISSING)
        if child is _MISSING:
            if not create:
                raise _not_found(segments)
            child = node[segment] = {}
        elif not isinstance(child, dict):
            raise Conflict(
                "A value on this path is not an object, so it has no keys.",
                code="path_conflict",
                details={"path": _path_text(segments), "at": _path_text(segments[: depth + 1])},
            )
        node = child
    return node


def put(data: dict[str, Any], segments: tuple[str, ...], value: Any) -> bool:
    """Set the value at a (non-root) path, making objects on the way. Whether anything changed."""
    parent = _parent(data, segments, create=True)
    key = segments[-1]
    if key in parent and same(parent[key], value):
        return False
    parent[key] = value
    return True


def merge_patch(target: Any, patch: dict[str, Any]) -> Any:
    """RFC 7396 JSON Merge Patch: objects merge key by key, recursively; ``null`` removes a key;
    anything else replaces. A target that is not an object starts as ``{}``."""
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch(result.get(key), value)
        else:
            result[key] = value
    return result


def delete(data: dict[str, Any], segments: tuple[str, ...]) -> None:
    """Remove the (non-root) path's key: 404 ``path_not_found`` when it is not there."""
    parent = _parent(data, segments, create=False)
    if segments[-1] not in parent:
        raise _not_found(segments)
    del parent[segments[-1]]
