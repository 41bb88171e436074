"""LangGraph's long-term memory store on Engram: ``EngramStore``, a
``langgraph.store.base.BaseStore`` (``pip install "engram-client[langgraph]"``).

from engram_client import Engram
from engram_client.langgraph import EngramStore

store = EngramStore(Engram())  # ENGRAM_URL, ENGRAM_API_KEY
store.put(("users", "ada"), "prefs", {"answers": "short, with examples"})
store.search(("users",), query="how does Ada like her answers?")
graph = builder.compile(store=store)  # nodes read and write it through ``store``

**Which Engram primitive, and why: long-term memory entries in one context.** LangGraph's store
is a namespaced key-value store whose items can be deleted and found by meaning. Of Engram's
candidates only long-term memory has all three: entries are versioned, deleted with every
version (``DELETE /memory/entries/{id}``), embedded and found by the hybrid (vector + BM25)
long-term search, and their current version is found by its ``key`` (the router's
``POST /memory/read``). Knowledge items have no delete (they are only ever invalidated, and by
the server alone); shared pools are found by their words only (BM25 over leaves, no
embedding); working and short-term memory expire.

**The mapping.** The store lives in one memory context (``context_id=``, or the context named
``context_name``, default ``langgraph-store``, created with ``scope`` on first use; ``agent``
by default, so only the calling agent reads it; ``account`` lets every agent of the account
read it). Tenancy comes from the API key: a context is its account's, another account's is
404, like a missing one. Each LangGraph item is one entry lineage of that context:

- ``data`` is an envelope ``{"langgraph": 1, "namespace": [...], "key", "value",
  "created_at", "updated_at"}``: the namespace and key are kept exactly as given (JSON
  strings), never squeezed into Engram's name rules, so the mapping is lossless; search hits
  carry ``data``, so they need no second request.
- ``metadata.key`` is ``lg.`` and a SHA-256 of (context id, namespace, key): a name Engram's
  key rules accept whatever the LangGraph key holds, that no other store's item shares. A get
  is ``memories.read(key=..., tier="long_term")`` and then the entry; the envelope is checked,
  so a hit from another context (or a collision) is never taken for the item.
- ``tags`` hold one tag per prefix of the namespace (``lg:`` and a digest of the prefix), so a
  search under ``namespace_prefix`` is narrowed by the server (``filters.tags_any``) before it
  ranks; the hits are checked against the envelope's namespace.
- ``content`` is the text Engram embeds and indexes: the value's JSON text, or the text at the
  ``index`` fields (LangGraph's JSON paths, the store's ``index_fields`` by default); with
  ``index=False``, the key only.

A put of an existing item changes its entry (a new version: Engram keeps the history under
``versions``); a put of ``None`` deletes the entry with every version. ``created_at`` is the
first put's, ``updated_at`` the last's (UTC, the client's clock).

**Search.** With ``query``: Engram's long-term search (hybrid: vector and keyword stages
fused) within the context and the namespace prefix; ``score`` is Engram's fused score, best
first. Without ``query``: the context's current entries, newest first. ``filter`` is applied
**in the client**, exactly on the values, with LangGraph's semantics (equality, nested
objects, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``): Engram's filters do not read
entries' JSON. So a query ranks at most Engram's ``top_k`` limit (100) candidates, and
``offset + limit`` beyond that finds nothing more; a list without ``query``, and
``list_namespaces``, read every entry of the context (as LangGraph's in-memory store does).

**Operations run in order**, each with its requests: a get after a put in one batch sees the
put. The async path (``abatch``) sends the same requests through an ``AsyncEngram`` when one is
given (``async_client=``), else runs the sync batch in a worker thread so the event loop is
never blocked. Errors are the client's: an ``APIError`` carrying the API's ``code``. Engram
has no TTL for long-term memory: ``supports_ttl`` is false, so LangGraph refuses a ``ttl``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as error:  # pragma: no cover - the extra is not installed
    raise ImportError(
        'engram_client.langgraph needs LangGraph: pip install "engram-client[langgraph]"'
    ) from error

from ._client import AsyncEngram, Engram
from ._errors import ConflictError, NotFoundError

__all__ = ["EngramStore"]

ENVELOPE_VERSION = 1
SEARCH_TOP_K = 100  # the long-term search's largest top_k
MAX_DEPTH = 100  # a namespace's prefixes are its entry's tags; an entry holds at most 100
PAGE_SIZE = 500
T = TypeVar("T")


@dataclass(frozen=True)
class _Call:
    """One request for a driver to send: the client method at ``path`` (``memories.read``)
    with ``kwargs``; ``listing`` collects every item of a paged answer."""

    path: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    listing: bool = False


# A store operation written once, for both clients: a generator that yields the requests it
# needs and receives their answers (or has the client's exception thrown into it).
Steps = Generator[_Call, Any, T]


def _resolve(client: Any, path: str) -> Any:
    target = client
    for name in path.split("."):
        target = getattr(target, name)
    return target


def _run(client: Engram, steps: Steps[T]) -> T:
    """Drive ``steps`` with the sync client."""
    answer: Any = None
    failure: BaseException | None = None
    while True:
        try:
            call = steps.send(answer) if failure is None else steps.throw(failure)
        except StopIteration as done:
            result: T = done.value
            return result
        answer, failure = None, None
        try:
            answer = _resolve(client, call.path)(*call.args, **call.kwargs)
            if call.listing:
                answer = list(answer)
        except Exception as error:  # thrown into the steps, which handle or raise it
            failure = error


async def _arun(client: AsyncEngram, steps: Steps[T]) -> T:
    """Drive ``steps`` with the async client."""
    answer: Any = None
    failure: BaseException | None = None
    while True:
        try:
            call = steps.send(answer) if failure is None else steps.throw(failure)
        except StopIteration as done:
            result: T = done.value
            return result
        answer, failure = None, None
        try:
            answer = await _resolve(client, call.path)(*call.args, **call.kwargs)
            if call.listing:
                answer = [item async for item in answer]
        except Exception as error:
            failure = error


def _digest(*parts: Any) -> str:
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _prefix_tag(prefix: Sequence[str]) -> str:
    """The tag every entry under ``prefix`` carries (a digest: tags are at most 100 chars)."""
    return "lg:" + _digest("namespace", list(prefix))[:40]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _envelope(data: Any) -> dict[str, Any] | None:
    """The item an entry's ``data`` holds, or ``None`` for an entry that is not one."""
    if (
        isinstance(data, dict)
        and data.get("langgraph") == ENVELOPE_VERSION
        and isinstance(data.get("namespace"), list)
        and isinstance(data.get("key"), str)
        and isinstance(data.get("value"), dict)
    ):
        return data
    return None


def _item(envelope: dict[str, Any]) -> Item:
    return Item(
        value=envelope["value"],
        key=envelope["key"],
        namespace=tuple(envelope["namespace"]),
        created_at=datetime.fromisoformat(envelope["created_at"]),
        updated_at=datetime.fromisoformat(envelope["updated_at"]),
    )


def _search_item(envelope: dict[str, Any], score: float | None) -> SearchItem:
    return SearchItem(
        namespace=tuple(envelope["namespace"]),
        key=envelope["key"],
        value=envelope["value"],
        created_at=datetime.fromisoformat(envelope["created_at"]),
        updated_at=datetime.fromisoformat(envelope["updated_at"]),
        score=score,
    )


def _compare(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics (as its stores apply them): a dict of ``$`` operators,
    a nested object matched key by key, a list matched element by element, else equality."""
    if isinstance(wanted, dict):
        if any(str(name).startswith("$") for name in wanted):
            return all(_operator(value, name, operand) for name, operand in wanted.items())
        return isinstance(value, dict) and all(
            _compare(value.get(name), operand) for name, operand in wanted.items()
        )
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted, strict=False))
        )
    return bool(value == wanted)


def _operator(value: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(value == operand)
    if name == "$ne":
        return bool(value != operand)
    if value is None:
        return False  # a missing field is neither greater nor smaller than anything
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    if name == "$gt":
        return left > right
    if name == "$gte":
        return left >= right
    if name == "$lt":
        return left < right
    if name == "$lte":
        return left <= right
    raise ValueError(f"Unsupported filter operator: {name}")


def _matches(filter_: dict[str, Any] | None, value: dict[str, Any]) -> bool:
    return not filter_ or all(_compare(value.get(k), w) for k, w in filter_.items())


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(want == "*" or have == want for have, want in pairs)


def _check_namespace(namespace: tuple[str, ...]) -> None:
    if len(namespace) > MAX_DEPTH:
        raise InvalidNamespaceError(
            f"Engram stores namespaces at most {MAX_DEPTH} labels deep: {namespace!r}"
        )


class EngramStore(BaseStore):
    """LangGraph's ``BaseStore`` on Engram's long-term memory (the module's docstring says how
    the items map onto entries, and why).

    ``client`` is an ``Engram`` (its API key gives the account and the agent); ``async_client``
    an ``AsyncEngram`` for ``abatch`` (without one, ``abatch`` runs ``batch`` in a thread).
    ``context_id`` names the memory context to keep the items in, else ``context_name`` is
    found or created (with ``scope``). ``index_fields`` are the JSON paths whose text is
    embedded (LangGraph's ``IndexConfig["fields"]``; default the whole value).
    """

    supports_ttl = False

    def __init__(
        self,
        client: Engram,
        *,
        async_client: AsyncEngram | None = None,
        context_id: int | None = None,
        context_name: str = "langgraph-store",
        scope: str = "agent",
        index_fields: Sequence[str] | None = None,
    ) -> None:
        self.client = client
        self.async_client = async_client
        self.context_name = context_name
        self.scope = scope
        self.index_fields = list(index_fields) if index_fields is not None else ["$"]
        self._context_id = context_id

    # -- BaseStore ------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order with the sync client."""
        return _run(self.client, self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order with the async client, or the sync one in a worker thread."""
        if self.async_client is None:
            return await asyncio.to_thread(self.batch, list(ops))
        return await _arun(self.async_client, self._batch(list(ops)))

    # -- the operations, as steps ---------------------------------------------------------

    def _batch(self, ops: list[Op]) -> Steps[list[Result]]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                found = yield from self._get(op.namespace, op.key)
                results.append(_item(found[1]) if found else None)
            elif isinstance(op, PutOp):
                yield from self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append((yield from self._search(op)))
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self._list_namespaces(op)))
            else:
                raise ValueError(f"Unknown operation: {op!r}")
        return results

    def _context(self) -> Steps[int]:
        """The context's id: given, found by name, or created (once per store)."""
        if self._context_id is None:
            contexts = yield _Call("memories.long_term.contexts.list", listing=True)
            named = [c for c in contexts if c["name"] == self.context_name]
            if named:
                self._context_id = int(named[0]["id"])
            else:
                try:
                    created = yield _Call(
                        "memories.long_term.contexts.create",
                        kwargs={
                            "name": self.context_name,
                            "scope": self.scope,
                            "description": "LangGraph store (engram_client.langgraph)",
                        },
                    )
                except ConflictError:  # another store made it meanwhile: read it
                    contexts = yield _Call("memories.long_term.contexts.list", listing=True)
                    created = next(c for c in contexts if c["name"] == self.context_name)
                self._context_id = int(created["id"])
        return self._context_id

    def _lookup_key(self, context_id: int, namespace: tuple[str, ...], key: str) -> str:
        return "lg." + _digest(context_id, list(namespace), key)[:48]

    def _get(
        self, namespace: tuple[str, ...], key: str
    ) -> Steps[tuple[int, dict[str, Any]] | None]:
        """The current entry's id and envelope of ``(namespace, key)``, or ``None``."""
        context_id = yield from self._context()
        lookup = self._lookup_key(context_id, namespace, key)
        try:
            found = yield _Call("memories.read", kwargs={"key": lookup, "tier": "long_term"})
        except NotFoundError:
            return None
        if found.get("context_id") == context_id and found.get("entry_id") is not None:
            entry = yield _Call("memories.long_term.retrieve", (found["entry_id"],))
            envelope = _envelope(entry.get("data"))
            if envelope and envelope["key"] == key and tuple(envelope["namespace"]) == namespace:
                return int(entry["id"]), envelope
        # Another context's entry carries the name (or a collision): read the context itself.
        for entry in (yield from self._entries(context_id)):
            envelope = _envelope(entry.get("data"))
            if envelope and envelope["key"] == key and tuple(envelope["namespace"]) == namespace:
                return int(entry["id"]), envelope
        return None

    def _entries(self, context_id: int) -> Steps[list[dict[str, Any]]]:
        entries: list[dict[str, Any]] = yield _Call(
            "memories.long_term.contexts.entries",
            (context_id,),
            {"page_size": PAGE_SIZE},
            listing=True,
        )
        return entries

    def _content(self, op: PutOp, value: dict[str, Any]) -> str:
        """The text Engram embeds and indexes for the item."""
        if op.index is False:
            return op.key
        fields = self.index_fields if op.index is None else list(op.index)
        texts: list[str] = []
        for path in fields:
            if path == "$":
                texts.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
            else:
                texts.extend(get_text_at_path(value, path))
        return "\n".join(text for text in texts if text) or op.key

    def _put(self, op: PutOp) -> Steps[None]:
        namespace = tuple(op.namespace)
        _check_namespace(namespace)
        context_id = yield from self._context()
        existing = yield from self._get(namespace, op.key)
        if op.value is None:
            if existing is not None:
                yield _Call("memories.long_term.delete", (existing[0],))
            return None
        value = dict(op.value)
        now = _now()
        envelope = {
            "langgraph": ENVELOPE_VERSION,
            "namespace": list(namespace),
            "key": op.key,
            "value": value,
            "created_at": existing[1]["created_at"] if existing else now,
            "updated_at": now,
        }
        content = self._content(op, value)
        if existing is not None:
            yield _Call(
                "memories.long_term.update",
                (existing[0],),
                {"content": content, "data": envelope},
            )
        else:
            tags = [_prefix_tag(namespace[:depth]) for depth in range(1, len(namespace) + 1)]
            yield _Call(
                "memories.long_term.add",
                kwargs={
                    "content": content,
                    "data": envelope,
                    "context": context_id,
                    "tags": tags,
                    "metadata": {"key": self._lookup_key(context_id, namespace, op.key)},
                },
            )
        return None

    def _search(self, op: SearchOp) -> Steps[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        context_id = yield from self._context()
        found: list[SearchItem] = []
        if op.query:
            filters: dict[str, Any] = {"context_ids": [context_id]}
            if prefix:
                filters["tags_any"] = [_prefix_tag(prefix)]
            top_k = SEARCH_TOP_K if op.filter else min(SEARCH_TOP_K, op.offset + op.limit)
            answer = yield _Call(
                "memories.long_term.search",
                kwargs={"query": op.query, "top_k": max(top_k, 1), "filters": filters},
            )
            for hit in answer["results"]:
                envelope = _envelope(hit.get("data"))
                if envelope and self._selected(envelope, prefix, op.filter):
                    found.append(_search_item(envelope, float(hit["score"])))
        else:
            for entry in (yield from self._entries(context_id)):
                envelope = _envelope(entry.get("data"))
                if envelope and self._selected(envelope, prefix, op.filter):
                    found.append(_search_item(envelope, None))
            found.sort(key=lambda item: item.updated_at, reverse=True)
        return found[op.offset : op.offset + op.limit]

    @staticmethod
    def _selected(
        envelope: dict[str, Any], prefix: tuple[str, ...], filter_: dict[str, Any] | None
    ) -> bool:
        """Whether an item is under ``prefix`` (checked exactly: the server narrowed by tag)
        and its value passes ``filter_``."""
        in_prefix = tuple(envelope["namespace"][: len(prefix)]) == prefix
        return in_prefix and _matches(filter_, envelope["value"])

    def _list_namespaces(self, op: ListNamespacesOp) -> Steps[list[tuple[str, ...]]]:
        context_id = yield from self._context()
        namespaces: set[tuple[str, ...]] = set()
        for entry in (yield from self._entries(context_id)):
            envelope = _envelope(entry.get("data"))
            if envelope is None:
                continue
            namespace = tuple(envelope["namespace"])
            if all(_namespace_matches(c, namespace) for c in op.match_conditions or ()):
                namespaces.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(namespaces)[op.offset : op.offset + op.limit]
