"""The names agents choose for their memories: session ids, keys, pool ids, workflow run ids and
dot paths. One definition each, shared by the URL converters (memory/converters.py), the
services and the OpenAPI schema.

Session ids, keys and pool ids start with a letter or a digit: names starting with ``_`` are
the working-memory API's own operations (``/working/{session_id}/_persist``, ``/working/_inbox``),
so a key can never shadow one. Session ids never contain ``:``, which separates the parts of
working memory's Redis keys.
"""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from typing import Any

from core.errors import ValidationFailed

MAX_SESSION_ID_CHARS = 128
MAX_KEY_CHARS = 200
MAX_POOL_ID_CHARS = 100
MAX_RUN_ID_CHARS = 128
MAX_SEGMENT_CHARS = 100
MAX_PATH_DEPTH = 32
# The longest dot path: MAX_PATH_DEPTH segments of MAX_SEGMENT_CHARS, with the dots between.
MAX_PATH_CHARS = MAX_PATH_DEPTH * (MAX_SEGMENT_CHARS + 1) - 1

SESSION_ID = rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_SESSION_ID_CHARS - 1}}}"
KEY = rf"[A-Za-z0-9][A-Za-z0-9._:-]{{0,{MAX_KEY_CHARS - 1}}}"
POOL_ID = rf"[A-Za-z0-9][A-Za-z0-9_-]{{0,{MAX_POOL_ID_CHARS - 1}}}"
RUN_ID = rf"[A-Za-z0-9][A-Za-z0-9._:-]{{0,{MAX_RUN_ID_CHARS - 1}}}"
# A dot path names nested keys of a pool's JSON object: ``agent_bulletin.market_regime``.
PATH_SEGMENT = rf"[A-Za-z0-9_-]{{1,{MAX_SEGMENT_CHARS}}}"
# A whole dot path, as ``parse_path`` reads it (the schema of a path parameter states it).
DOT_PATH = rf"{PATH_SEGMENT}(?:\.{PATH_SEGMENT}){{0,{MAX_PATH_DEPTH - 1}}}"

_SESSION = re.compile(SESSION_ID)
_KEY = re.compile(KEY)
_POOL_ID = re.compile(POOL_ID)
_RUN_ID = re.compile(RUN_ID)
_SEGMENT = re.compile(PATH_SEGMENT)


def _check(pattern: re.Pattern[str], value: str, what: str, code: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ValidationFailed(
            f"Invalid {what}: it must match {pattern.pattern}.",
            code=code,
            details={"pattern": pattern.pattern},
        )
    return value


def check_session_id(value: str) -> str:
    return _check(_SESSION, value, "session id", "invalid_session_id")


def check_key(value: str) -> str:
    return _check(_KEY, value, "key", "invalid_key")


def check_pool_id(value: str) -> str:
    return _check(_POOL_ID, value, "pool id", "invalid_pool_id")


def check_run_id(value: str) -> str:
    return _check(_RUN_ID, value, "workflow run id", "invalid_run_id")


def parse_path(path: str) -> tuple[str, ...]:
    """``"a.b.c"`` as ``("a", "b", "c")``; ``""`` is the root. 400 ``invalid_path`` for an empty
    segment (``a..b``, a leading or trailing dot), a character outside ``[A-Za-z0-9_-]`` or more
    than ``MAX_PATH_DEPTH`` segments."""
    if path == "":
        return ()
    segments = tuple(path.split("."))
    if len(segments) > MAX_PATH_DEPTH or not all(_SEGMENT.fullmatch(s) for s in segments):
        raise ValidationFailed(
            "Invalid path: dot-separated keys of letters, digits, _ and -, "
            f"at most {MAX_PATH_DEPTH} deep (e.g. agent_bulletin.market_regime).",
            code="invalid_path",
            details={"path": path[:300], "segment_pattern": PATH_SEGMENT},
        )
    return segments


def json_text(value: Any, **options: Any) -> str:
    """``value`` as JSON text; NaN or an infinity (JSON has neither; the API's parser refuses
    them, a form in the admin may not) is 400 ``invalid_json``."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:
        raise ValidationFailed(
            "JSON has no NaN or Infinity.", code="invalid_json", details={"reason": str(exc)}
        ) from exc


# Long-term memory contexts named ``agent:<id>`` are agents' own memories, made by Engram; nobody
# may give a context such a name, so no one can squat another agent's own memory.
AGENT_MEMORY_PREFIX = "agent:"


def agent_memory_name(agent_id: int) -> str:
    return f"{AGENT_MEMORY_PREFIX}{agent_id}"


# Contexts named ``conversation:<random>`` back conversations (``memory.conversations.models``).
CONVERSATION_PREFIX = "conversation:"


def conversation_context_name() -> str:
    return f"{CONVERSATION_PREFIX}{uuid.uuid4().hex}"


# Code points that draw nothing but are not of category Cf (Unicode's Default_Ignorable_Code_Point
# beyond Cf): the combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian
# free variation selectors and variation selectors.
_IGNORABLE = frozenset(
    [
        0x034F,
        0x115F,
        0x1160,
        0x17B4,
        0x17B5,
        0x3164,
        0xFFA0,
        *range(0x180B, 0x1810),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    ]
)


def _visible(text: str) -> str:
    return "".join(
        ch for ch in text if unicodedata.category(ch) != "Cf" and ord(ch) not in _IGNORABLE
    )


def context_name_normalise(value: str) -> str:
    """A context name as stored and compared: NFKC (full-width and compatibility forms become
    their plain letters: ``agent\\uff1a3`` is ``agent:3``), without format characters (category Cf:
    zero-width spaces and joiners, direction marks, ...) or other code points that draw
    nothing, and without surrounding white space. Two names that look alike are one name."""
    return _visible(unicodedata.normalize("NFKC", _visible(value))).strip()


def check_context_name(value: str) -> str:
    """A context name people and agents may choose, normalised (``context_name_normalise``):
    not in the reserved ``agent:`` and ``conversation:`` namespaces, whatever characters make it
    look so (400 ``context_name_reserved``), and not empty once normalised (400
    ``invalid_context_name``)."""
    name = context_name_normalise(value)
    if not name:
        raise ValidationFailed(
            "A context name needs at least one visible character.", code="invalid_context_name"
        )
    folded = name.casefold()
    for prefix, what in (
        (AGENT_MEMORY_PREFIX, "agents' own memories"),
        (CONVERSATION_PREFIX, "conversations"),
    ):
        if folded.startswith(prefix):
            raise ValidationFailed(
                f"Context names starting with {prefix!r} are reserved for {what}.",
                code="context_name_reserved",
                details={"prefix": prefix},
            )
    return name
