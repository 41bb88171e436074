"""The optional rerank stage: re-score the fused candidates with a stronger model.

Off by default (``RERANK_PROVIDER=none``). ``http`` calls any server speaking the ``/v1/rerank``
protocol (vLLM, Jina, Cohere-compatible: query + documents in, ``results[].index`` and
``relevance_score`` out); ``llm`` asks the configured LLM to score the passages. With the offline
LLM provider, ``llm`` reranking keeps the fused order (the offline model cannot judge relevance).

Failures: a reranker that cannot be reached, times out, answers an error status or breaks its
protocol (a malformed body, a score that is not a finite number) raises ServiceUnavailable with
code ``provider_unavailable`` (503) and ``details["provider"] == "rerank"``. An LLM that answers
but gives no usable judgement (no JSON object, the wrong number of scores, or any score that is
not a finite number) is treated like the offline model: the fused order is kept and
``rerank_score`` is null. The judgement is all or nothing: mixing judged and unjudged passages
would rank them on two scales. (A dedicated rerank server that breaks its protocol is broken; a
general-purpose model straying from the requested format is an expected, degraded answer.)
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any, Protocol

import httpx
from django.conf import settings

from core.errors import ServiceUnavailable, ValidationFailed
from core.llm import get_llm_provider
from core.llm.base import InvalidJSONError, LLMError
from core.process_cache import PerProcess
from rag.search import SearchHit
from rag.tuning import TUNING

logger = logging.getLogger("engram.rag")

RERANK_PROVIDERS = ("none", "http", "llm")


def _unavailable(message: str, reranker: str, **details: Any) -> ServiceUnavailable:
    return ServiceUnavailable(
        message,
        code="provider_unavailable",
        details={"provider": "rerank", "reranker": reranker, **details},
    )


def _finite(value: object) -> float | None:
    """``value`` as a score if it is a finite JSON number (not a string, null or boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


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
        # What it was built from: the process-wide instance is rebuilt when settings change.
        self.config: tuple[object, ...] = (base_url, model, api_key, timeout)
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
            "documents": [hit.text[: TUNING.rerank.passage_chars] for hit in hits],
            "top_n": len(hits),
        }
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.post("rerank", json=body)
            except httpx.TimeoutException as exc:
                raise _unavailable("The reranker timed out.", self.name, reason="timeout") from exc
            except httpx.TransportError as exc:
                raise _unavailable(
                    "The reranker is unreachable.", self.name, reason="unreachable"
                ) from exc
            # Only overload and server errors are worth another try.
            if response.status_code in (429, 500, 502, 503, 504) and attempt < self.max_retries:
                time.sleep(0.2 * 2**attempt)
                continue
            break
        if response.status_code != 200:
            raise _unavailable(
                f"The reranker answered {response.status_code}.",
                self.name,
                reason="status",
                status=response.status_code,
            )
        try:
            results = response.json()["results"]
            scores = {int(item["index"]): _finite(item["relevance_score"]) for item in results}
        except (ValueError, KeyError, TypeError) as exc:
            raise _unavailable(
                "The reranker's answer is malformed.", self.name, reason="malformed"
            ) from exc
        if any(score is None for score in scores.values()) or not set(scores) <= set(
            range(len(hits))
        ):
            raise _unavailable(
                "The reranker's answer has invalid scores or indexes.",
                self.name,
                reason="malformed",
            )
        return _reordered(hits, {i: score for i, score in scores.items() if score is not None})


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
        passages = "\n\n".join(
            f"[{i}] {hit.text[: TUNING.rerank.passage_chars]}" for i, hit in enumerate(hits)
        )
        prompt = (
            f"Query: {query}\n\nPassages:\n{passages}\n\n"
            f"Rate how well each passage answers the query, 0 (useless) to 10 (answers it). "
            f"Return scores as a list of {len(hits)} numbers in passage order."
        )
        try:
            answer = get_llm_provider().complete_json(prompt, schema=self.SCHEMA, max_tokens=512)
        except InvalidJSONError:
            logger.warning("the LLM reranker's answer is not usable JSON; keeping the fused order")
            return _unranked(hits)
        except LLMError as exc:
            raise _unavailable("The LLM reranker failed.", self.name, reason="llm") from exc
        raw = answer.get("scores")
        scores = [_finite(score) for score in raw] if isinstance(raw, list) else []
        if len(scores) != len(hits) or any(score is None for score in scores):
            # The offline provider (or a sloppy model) gave no usable judgement: keep the order.
            if raw:
                logger.warning("the LLM reranker's scores are unusable; keeping the fused order")
            return _unranked(hits)
        return _reordered(hits, {i: score for i, score in enumerate(scores) if score is not None})


def _unranked(hits: Sequence[SearchHit]) -> list[SearchHit]:
    for hit in hits:
        hit.rerank_score = None
    return list(hits)


def _reordered(hits: Sequence[SearchHit], scores: dict[int, float]) -> list[SearchHit]:
    for index, hit in enumerate(hits):
        hit.rerank_score = scores.get(index)
    order = sorted(
        range(len(hits)),
        key=lambda i: (scores.get(i) is None, -(scores.get(i) or 0.0), i),
    )
    return [hits[i] for i in order]


def _http_config() -> tuple[object, ...]:
    return (
        settings.RERANK_BASE_URL,
        settings.RERANK_MODEL,
        settings.RERANK_API_KEY,
        settings.RERANK_TIMEOUT,
    )


def _http_reranker_from_settings() -> HttpReranker:
    assert settings.RERANK_BASE_URL, "validated at start-up"
    return HttpReranker(
        base_url=settings.RERANK_BASE_URL,
        model=settings.RERANK_MODEL,
        api_key=settings.RERANK_API_KEY,
        timeout=settings.RERANK_TIMEOUT,
    )


# One HTTP client (and its connection pool) per process, not one per search.
_http_reranker: PerProcess[HttpReranker] = PerProcess(_http_reranker_from_settings)


def get_reranker() -> Reranker | None:
    """The configured reranker, or None when reranking is off. The HTTP reranker is built once
    per process (again if its settings changed)."""
    provider = settings.RERANK_PROVIDER
    if provider == "http":
        reranker = _http_reranker.get()
        if reranker.config != _http_config():
            _http_reranker.reset()
            reranker = _http_reranker.get()
        return reranker
    if provider == "llm":
        return LLMReranker()
    return None


def reset_reranker() -> None:
    """Forget the process's HTTP reranker (tests, reconfiguration)."""
    _http_reranker.reset()


def reranker_required() -> Reranker:
    """The configured reranker, for a search that asked for one (``"rerank": true``): 400
    ``rerank_not_configured`` when reranking is off."""
    reranker = get_reranker()
    if reranker is None:
        raise ValidationFailed(
            "Reranking is not configured (RERANK_PROVIDER).", code="rerank_not_configured"
        )
    return reranker
