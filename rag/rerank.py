"""The optional rerank stage: re-score the fused candidates with a stronger model.

Off by default (``RERANK_PROVIDER=none``). ``http`` calls any server speaking the ``/v1/rerank``
protocol (vLLM, Jina, Cohere-compatible: query + documents in, ``results[].index`` and
``relevance_score`` out); ``llm`` asks the configured LLM to score the passages. With the offline
LLM provider, ``llm`` reranking keeps the fused order (the offline model cannot judge relevance).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Protocol

import httpx
from django.conf import settings

from core.errors import ServiceUnavailable
from core.llm import get_llm_provider
from core.llm.base import LLMError
from rag.search import SearchHit

logger = logging.getLogger("engram.rag")

RERANK_PROVIDERS = ("none", "http", "llm")
# Each passage is cut to this many characters before it is sent to a reranker.
PASSAGE_CHARS = 2000


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """Return ``hits`` best first, each with ``rerank_score`` set."""
        ...


class HttpReranker:
    name = "http"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        self.model = model
        self.max_retries = max_retries
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=timeout,
            transport=httpx.HTTPTransport(retries=max_retries),  # connection errors
        )

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        if not hits:
            return []
        body = {
            "model": self.model,
            "query": query,
            "documents": [hit.text[:PASSAGE_CHARS] for hit in hits],
            "top_n": len(hits),
        }
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.post("rerank", json=body)
            except httpx.TimeoutException as exc:
                raise ServiceUnavailable(
                    "The reranker timed out.", code="rerank_unavailable"
                ) from exc
            except httpx.TransportError as exc:
                raise ServiceUnavailable(
                    "The reranker is unreachable.", code="rerank_unavailable"
                ) from exc
            # Only overload and server errors are worth another try.
            if response.status_code in (429, 500, 502, 503, 504) and attempt < self.max_retries:
                time.sleep(0.2 * 2**attempt)
                continue
            break
        if response.status_code != 200:
            raise ServiceUnavailable(
                f"The reranker answered {response.status_code}.",
                code="rerank_failed",
                details={"status": response.status_code},
            )
        try:
            results = response.json()["results"]
            scores = {int(item["index"]): float(item["relevance_score"]) for item in results}
        except (ValueError, KeyError, TypeError) as exc:
            raise ServiceUnavailable(
                "The reranker's answer is malformed.", code="rerank_failed"
            ) from exc
        return _reordered(hits, scores)


class LLMReranker:
    name = "llm"

    SCHEMA = {
        "type": "object",
        "properties": {"scores": {"type": "array", "items": {"type": "number"}}},
        "required": ["scores"],
    }

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        if not hits:
            return []
        passages = "\n\n".join(f"[{i}] {hit.text[:PASSAGE_CHARS]}" for i, hit in enumerate(hits))
        prompt = (
            f"Query: {query}\n\nPassages:\n{passages}\n\n"
            f"Rate how well each passage answers the query, 0 (useless) to 10 (answers it). "
            f"Return scores as a list of {len(hits)} numbers in passage order."
        )
        try:
            answer = get_llm_provider().complete_json(prompt, schema=self.SCHEMA, max_tokens=512)
        except LLMError as exc:
            raise ServiceUnavailable("The LLM reranker failed.", code="rerank_failed") from exc
        raw = answer.get("scores") or []
        if len(raw) != len(hits):
            # The offline provider (or a sloppy model) gave no usable judgement: keep the order.
            for hit in hits:
                hit.rerank_score = None
            return list(hits)
        return _reordered(hits, {i: float(score) for i, score in enumerate(raw)})


def _reordered(hits: Sequence[SearchHit], scores: dict[int, float]) -> list[SearchHit]:
    for index, hit in enumerate(hits):
        hit.rerank_score = scores.get(index)
    order = sorted(
        range(len(hits)),
        key=lambda i: (scores.get(i) is None, -(scores.get(i) or 0.0), i),
    )
    return [hits[i] for i in order]


def get_reranker() -> Reranker | None:
    """The configured reranker, or None when reranking is off."""
    provider = settings.RERANK_PROVIDER
    if provider == "http":
        assert settings.RERANK_BASE_URL, "validated at start-up"
        return HttpReranker(
            base_url=settings.RERANK_BASE_URL,
            model=settings.RERANK_MODEL,
            api_key=settings.RERANK_API_KEY,
            timeout=settings.RERANK_TIMEOUT,
        )
    if provider == "llm":
        return LLMReranker()
    return None
