"""A local HTTP server that speaks enough of the OpenAI API to test real clients against it.

It serves ``POST /v1/embeddings`` and ``POST /v1/chat/completions`` on 127.0.0.1 with responses
shaped like OpenAI's, records every request, and can be scripted to fail or stall, so tests
exercise the real ``openai`` client (retries, timeouts, error mapping) without mocking it.

Tests get a running server from the ``openai_standin`` fixture: import ``openai_standin_fixture``
into the test module (or a conftest), and pytest picks it up under that name.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self, cast

import pytest

DEFAULT_REPLY = "Stand-in reply."
DEFAULT_EMBEDDING_DIMENSIONS = 8


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. Header names are lower-cased."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any


@dataclass(frozen=True)
class Answer:
    """What the server sends back for one request."""

    status: int
    payload: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Fault:
    status: int | None  # None: answer normally once the delay has passed
    delay: float


def fake_embedding(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector derived from ``text``: equal texts, equal vectors."""
    seed = hashlib.sha256(text.encode()).digest()
    raw: list[float] = []
    for block in itertools.count():
        digest = hashlib.sha256(seed + block.to_bytes(4, "big")).digest()
        raw.extend(value / 2**31 - 1.0 for value in struct.unpack(">8I", digest))
        if len(raw) >= dimensions:
            break
    vector = raw[:dimensions]
    norm = sum(value * value for value in vector) ** 0.5 or 1.0
    return [value / norm for value in vector]


class OpenAIStandIn:
    """The scripted server. Start it with ``with OpenAIStandIn() as server:``.

    Scripted faults are consumed one per request, in order, whatever the endpoint:
    ``fail(status, times=n)`` answers with an OpenAI-style error; ``stall(seconds, times=n)``
    waits before answering normally. Chat replies come from ``reply_with(...)`` in order, then
    ``DEFAULT_REPLY``; rerank answers from ``rerank_with(...)`` in order, then computed ones. Error
    answers carry ``retry-after-ms`` so client back-off stays short.
    """

    def __init__(
        self, *, embedding_dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS, semantic: bool = False
    ) -> None:
        self.embedding_dimensions = embedding_dimensions
        #: Embed as the test suite's stand-in embedder does (hashed words and trigrams: texts
        #: sharing words are near), at this server's width, instead of a hash of the whole text.
        self.semantic = semantic
        #: Answer embeddings last-to-first, to prove clients order them by ``index``.
        self.reverse_embedding_order = False
        self.retry_after_ms = 1
        self._requests: list[RecordedRequest] = []
        self._faults: deque[_Fault] = deque()
        self._replies: deque[str] = deque()
        self._rerank_answers: deque[Mapping[str, Any]] = deque()
        self._state_lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = _Server(("127.0.0.1", 0), _Handler, self)
        # A short poll interval keeps shutdown, and so every test's teardown, quick.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()  # wakes stalled handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        """What to pass as an OpenAI client's ``base_url``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._state_lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The recorded requests for one path, e.g. ``"/v1/embeddings"``."""
        return [request for request in self.requests if request.path == path]

    def fail(self, status: int, *, times: int = 1) -> None:
        """Answer the next ``times`` requests with HTTP ``status`` and an OpenAI error body."""
        with self._state_lock:
            self._faults.extend(_Fault(status=status, delay=0.0) for _ in range(times))

    def stall(self, seconds: float, *, times: int = 1) -> None:
        """Wait ``seconds`` before answering each of the next ``times`` requests."""
        with self._state_lock:
            self._faults.extend(_Fault(status=None, delay=seconds) for _ in range(times))

    def reply_with(self, *contents: str) -> None:
        """Queue chat completion contents, one per future chat request."""
        with self._state_lock:
            self._replies.extend(contents)

    def rerank_with(self, *payloads: Mapping[str, Any]) -> None:
        """Queue whole ``/v1/rerank`` response bodies (e.g. broken ones), one per request."""
        with self._state_lock:
            self._rerank_answers.extend(payloads)

    def answer(self, request: RecordedRequest) -> Answer:
        """Record ``request`` and decide the reply; called from the server's handler threads."""
        with self._state_lock:
            self._requests.append(request)
            fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            self._stopping.wait(fault.delay)
            if fault.status is not None:
                return self._error(fault.status, "Scripted failure.", retry_after=True)
        if not isinstance(request.body, dict):
            return self._error(HTTPStatus.BAD_REQUEST, "Body must be a JSON object.")
        if request.path == "/v1/embeddings":
            return Answer(HTTPStatus.OK, self._embeddings(request.body))
        if request.path == "/v1/chat/completions":
            return Answer(HTTPStatus.OK, self._chat_completion(request.body))
        if request.path == "/v1/rerank":
            with self._state_lock:
                scripted = self._rerank_answers.popleft() if self._rerank_answers else None
            return Answer(HTTPStatus.OK, scripted or self._rerank(request.body))
        return self._error(HTTPStatus.NOT_FOUND, f"Unknown path {request.path}.")

    def _error(self, status: int, message: str, *, retry_after: bool = False) -> Answer:
        error_type = "server_error" if status >= 500 else "invalid_request_error"
        headers = {"retry-after-ms": str(self.retry_after_ms)} if retry_after else {}
        body = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
        return Answer(status, body, headers)

    def _embeddings(self, body: Mapping[str, Any]) -> dict[str, Any]:
        inputs = body["input"]
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        if self.semantic:
            from tests.support.embedder import HashedEmbeddingProvider

            rows = HashedEmbeddingProvider(self.embedding_dimensions).embed_documents(texts)
            vectors = [[float(x) for x in row] for row in rows]
        else:
            vectors = [fake_embedding(text, self.embedding_dimensions) for text in texts]
        data = [
            {"object": "embedding", "index": index, "embedding": vector}
            for index, vector in enumerate(vectors)
        ]
        if self.reverse_embedding_order:
            data.reverse()
        tokens = sum(len(text.split()) for text in texts)
        return {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _rerank(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The rerank protocol vLLM, Jina and Cohere-compatible servers speak; relevance here is
        the share of query words a document contains (deterministic, good enough to order)."""
        query_words = set(str(body["query"]).lower().split())
        results = []
        for index, document in enumerate(body["documents"]):
            words = set(str(document).lower().split())
            score = len(query_words & words) / max(1, len(query_words))
            results.append(
                {"index": index, "relevance_score": score, "document": {"text": document}}
            )
        results.sort(key=lambda item: -float(item["relevance_score"]))  # type: ignore[arg-type]
        if body.get("top_n"):
            results = results[: int(body["top_n"])]
        return {
            "id": f"rerank-{next(self._ids)}",
            "model": body["model"],
            "results": results,
            "usage": {"total_tokens": sum(len(str(d).split()) for d in body["documents"])},
        }

    def _chat_completion(self, body: Mapping[str, Any]) -> dict[str, Any]:
        with self._state_lock:
            content = self._replies.popleft() if self._replies else DEFAULT_REPLY
        prompt_tokens = sum(
            len(str(message.get("content", "")).split()) for message in body["messages"]
        )
        completion_tokens = len(content.split())
        return {
            "id": f"chatcmpl-standin-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


class _Server(ThreadingHTTPServer):
    # Stalled handler threads must not keep the test process (or shutdown) waiting.
    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        standin: OpenAIStandIn,
    ) -> None:
        super().__init__(address, handler)
        self.standin = standin


class _Handler(BaseHTTPRequestHandler):
    # Keep-alive, as OpenAI serves it; every answer therefore carries Content-Length.
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        request = RecordedRequest(
            method="POST",
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        answer = cast(_Server, self.server).standin.answer(request)
        data = json.dumps(answer.payload).encode()
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. timed out) before the answer was ready

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


@pytest.fixture(name="openai_standin")
def openai_standin_fixture() -> Iterator[OpenAIStandIn]:
    """``openai_standin``: a running stand-in server, stopped after the test."""
    with OpenAIStandIn() as server:
        yield server


@pytest.fixture(name="llm")
def llm_fixture(openai_standin: OpenAIStandIn, settings: Any) -> Iterator[OpenAIStandIn]:
    """``llm``: Engram's LLM provider pointed at a running stand-in server (the real
    OpenAI-compatible client path), reset before and after the test."""
    from core.llm import reset_llm_provider

    settings.LLM_PROVIDER, settings.LLM_MODEL = "openai", "stand-in-model"
    settings.LLM_BASE_URL, settings.LLM_API_KEY = openai_standin.base_url, "k"
    reset_llm_provider()
    yield openai_standin
    reset_llm_provider()
