"""``Engram`` and ``AsyncEngram``: the clients, each holding one httpx connection pool."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpx

from . import _async_resources as a
from . import _resources as r
from ._errors import (
    APIConnectionError,
    EngramError,
    RateLimitError,
    ServiceUnavailableError,
    error_from_response,
)

__version__ = "0.1.0"
DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 60.0
_RETRYABLE = (RateLimitError, ServiceUnavailableError)


def _settings(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    url = base_url or os.environ.get("ENGRAM_URL") or DEFAULT_URL
    key = api_key or os.environ.get("ENGRAM_API_KEY")
    if not key:
        raise EngramError("No API key: pass api_key=... or set ENGRAM_API_KEY.")
    return url.rstrip("/"), key


def _headers(key: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json",
        "User-Agent": f"engram-client/{__version__}",
        **(extra or {}),
    }


def _answer(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise error_from_response(response)
    if response.status_code == 204 or not response.content:
        return None
    return response.json()


def _clean(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(params) if params else None


class Engram:
    """The sync client: ``Engram(base_url=..., api_key=...)``; the URL defaults to
    ``ENGRAM_URL`` (else http://127.0.0.1:8000), the key to ``ENGRAM_API_KEY``.

    ``max_retries``: how many times a 429 or 503 is retried after its ``Retry-After`` (at most
    ``max_retry_wait`` seconds each); 0 raises at once."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 0,
        max_retry_wait: float = 30.0,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.base_url, self.api_key = _settings(base_url, api_key)
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._http = http_client or httpx.Client(timeout=timeout)
        self._headers = _headers(self.api_key, headers)
        self.agents = r.Agents(self)
        self.conversations = r.Conversations(self)
        self.context = r.Context(self)
        self.memories = r.Memories(self)
        self.knowledge = r.Knowledge(self)
        self.knowledge_bases = r.KnowledgeBases(self)
        self.pages = r.Pages(self)
        self.skills = r.Skills(self)
        self.graph = r.Graph(self)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Any:
        """Send one request (``path`` relative to the base URL, or a full URL such as a page's
        ``next``) and return the decoded JSON; an error status raises ``APIError``."""
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    method, url, params=_clean(params), json=json, headers=self._headers
                )
            except httpx.TransportError as error:
                raise APIConnectionError(f"{method} {url}: {error}") from error
            try:
                return _answer(response)
            except _RETRYABLE as error:
                if attempt >= self.max_retries:
                    raise
                attempt += 1
                time.sleep(min(error.retry_after or 1.0, self.max_retry_wait))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


class AsyncEngram:
    """The async client: the same resources as ``Engram``, each method a coroutine."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 0,
        max_retry_wait: float = 30.0,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url, self.api_key = _settings(base_url, api_key)
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._headers = _headers(self.api_key, headers)
        self.agents = a.AsyncAgents(self)
        self.conversations = a.AsyncConversations(self)
        self.context = a.AsyncContext(self)
        self.memories = a.AsyncMemories(self)
        self.knowledge = a.AsyncKnowledge(self)
        self.knowledge_bases = a.AsyncKnowledgeBases(self)
        self.pages = a.AsyncPages(self)
        self.skills = a.AsyncSkills(self)
        self.graph = a.AsyncGraph(self)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Any:
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    method, url, params=_clean(params), json=json, headers=self._headers
                )
            except httpx.TransportError as error:
                raise APIConnectionError(f"{method} {url}: {error}") from error
            try:
                return _answer(response)
            except _RETRYABLE as error:
                if attempt >= self.max_retries:
                    raise
                attempt += 1
                await asyncio.sleep(min(error.retry_after or 1.0, self.max_retry_wait))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncEngram:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()
