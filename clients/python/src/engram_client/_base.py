"""The machinery under the resources: ``endpoint`` turns a method's signature into a request
(its path, its body or query string), and the pages that follow the API's ``next`` links.

A resource method declares its operation and nothing else:

    @endpoint("POST", "/api/v1/memory/conversations")
    def create(self, *, title: str | None = None) -> Conversation:
        "Start a conversation."

Parameters named in the path template fill it; the others are the body's fields (``POST``,
``PUT``, ``PATCH``) or query parameters (``GET``, ``DELETE``), under their own names (a trailing
``_`` dropped: ``from_`` is ``from``). A parameter left at its default ``None`` is not sent. The
test suite checks every declaration against the server's OpenAPI schema.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import quote

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_PLACEHOLDER = re.compile(r"{(\w+)}")


class Requester(Protocol):
    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Any: ...


class AsyncRequester(Protocol):
    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Any: ...


@dataclass(frozen=True)
class Operation:
    """What a resource method sends: the method, the path template, and where each of its
    parameters goes (``path``, ``query`` or ``body``, by the parameter's API name)."""

    method: str
    path: str
    paged: bool
    parameters: tuple[tuple[str, str, str, bool], ...]  # (python name, api name, where, required)

    def fields(self, where: str) -> dict[str, bool]:
        """The API names sent in ``where`` with whether the method requires them."""
        return {api: required for _, api, place, required in self.parameters if place == where}


def _operation(method: str, path: str, function: Callable[..., Any], paged: bool) -> Operation:
    placeholders = set(_PLACEHOLDER.findall(path))
    where_default = "query" if method in ("GET", "DELETE") else "body"
    parameters = []
    for name, parameter in list(inspect.signature(function).parameters.items())[1:]:
        api = name.rstrip("_")
        where = "path" if api in placeholders else where_default
        required = parameter.default is inspect.Parameter.empty
        parameters.append((name, api, where, required))
    declared = {api for _, api, where, _ in parameters if where == "path"}
    if declared != placeholders:
        raise TypeError(f"{function.__qualname__}: path parameters {declared} != {placeholders}")
    return Operation(method, path, paged, tuple(parameters))


def _build(
    operation: Operation, function: Callable[..., Any], args: tuple[Any, ...], kwargs: Any
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    bound = inspect.signature(function).bind(*args, **kwargs)
    path_values: dict[str, str] = {}
    params: dict[str, Any] = {}
    body: dict[str, Any] = {}
    for name, api, where, required in operation.parameters:
        if name not in bound.arguments:
            continue
        value = bound.arguments[name]
        if value is None and not required:
            continue
        if where == "path":
            path_values[api] = quote(str(value), safe="")
        elif where == "query":
            params[api] = ("true" if value else "false") if isinstance(value, bool) else value
        else:
            body[api] = value
    path = _PLACEHOLDER.sub(lambda m: path_values[m.group(1)], operation.path)
    sends_body = operation.method not in ("GET", "DELETE")
    return path, params, (body if sends_body else None)


def endpoint(method: str, path: str, *, paged: bool = False) -> Callable[[F], F]:
    """Make the decorated method send ``method path`` built from its arguments (module doc).

    ``paged``: the answer is a cursor-paginated list, returned as a page that iterates every
    item of every page. The decorated method's body is never run."""

    def decorate(function: F) -> F:
        operation = _operation(method, path, function, paged)

        if inspect.iscoroutinefunction(function):

            async def call_async(self: AsyncResource, *args: Any, **kwargs: Any) -> Any:
                url, params, body = _build(operation, function, (self, *args), kwargs)
                data = await self._client.request(method, url, params=params, json=body)
                return AsyncPage(self._client, data) if paged else data

            wrapper: Any = call_async
        else:

            def call(self: Resource, *args: Any, **kwargs: Any) -> Any:
                url, params, body = _build(operation, function, (self, *args), kwargs)
                data = self._client.request(method, url, params=params, json=body)
                return SyncPage(self._client, data) if paged else data

            wrapper = call
        wrapper.__name__ = function.__name__
        wrapper.__qualname__ = function.__qualname__
        wrapper.__doc__ = function.__doc__
        wrapper.__signature__ = inspect.signature(function)
        wrapper.__wrapped__ = function
        wrapper.__engram_operation__ = operation
        return wrapper  # type: ignore[no-any-return]

    return decorate


def operation_of(method: Callable[..., Any]) -> Operation | None:
    """The operation a resource method sends, if it is an ``endpoint``."""
    return getattr(method, "__engram_operation__", None)


class Resource:
    """A group of operations of the sync client (``client.conversations``, ...)."""

    def __init__(self, client: Requester) -> None:
        self._client = client


class AsyncResource:
    """A group of operations of the async client."""

    def __init__(self, client: AsyncRequester) -> None:
        self._client = client


class SyncPage(Generic[T]):
    """One page of a list (``results``, ``next``, ``previous``). Iterating it yields every
    item of this page and of every page after it, following ``next``."""

    def __init__(self, client: Requester, data: Mapping[str, Any]) -> None:
        self._client = client
        self.results: list[T] = list(data.get("results", []))
        self.next: str | None = data.get("next")
        self.previous: str | None = data.get("previous")

    def has_next_page(self) -> bool:
        return self.next is not None and bool(self.results)

    def next_page(self) -> SyncPage[T] | None:
        """The following page, or ``None`` at the end."""
        if not self.has_next_page():
            return None
        assert self.next is not None
        return SyncPage(self._client, self._client.request("GET", self.next))

    def previous_page(self) -> SyncPage[T] | None:
        if self.previous is None:
            return None
        return SyncPage(self._client, self._client.request("GET", self.previous))

    def iter_pages(self) -> Iterator[SyncPage[T]]:
        page: SyncPage[T] | None = self
        while page is not None:
            yield page
            page = page.next_page()

    def __iter__(self) -> Iterator[T]:
        for page in self.iter_pages():
            yield from page.results

    def __repr__(self) -> str:
        return f"<SyncPage of {len(self.results)}, next={self.next!r}>"


class AsyncPage(Generic[T]):
    """One page of a list; ``async for`` over it yields every item of every page."""

    def __init__(self, client: AsyncRequester, data: Mapping[str, Any]) -> None:
        self._client = client
        self.results: list[T] = list(data.get("results", []))
        self.next: str | None = data.get("next")
        self.previous: str | None = data.get("previous")

    def has_next_page(self) -> bool:
        return self.next is not None and bool(self.results)

    async def next_page(self) -> AsyncPage[T] | None:
        if not self.has_next_page():
            return None
        assert self.next is not None
        return AsyncPage(self._client, await self._client.request("GET", self.next))

    async def previous_page(self) -> AsyncPage[T] | None:
        if self.previous is None:
            return None
        return AsyncPage(self._client, await self._client.request("GET", self.previous))

    async def iter_pages(self) -> AsyncIterator[AsyncPage[T]]:
        page: AsyncPage[T] | None = self
        while page is not None:
            yield page
            page = await page.next_page()

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.iter_pages():
            for item in page.results:
                yield item

    def __repr__(self) -> str:
        return f"<AsyncPage of {len(self.results)}, next={self.next!r}>"
