"""Token counts measured with the embedding model's own WordPiece tokenizer.

Chunk sizes are budgets of the tokens the embedding model will read, so they are counted with
the same all-MiniLM-L6-v2 tokenizer, loaded and sha256-checked by ``core.embeddings.local``.
Counts exclude the [CLS]/[SEP] special tokens and are never truncated: a 5,000-token text
counts 5,000, even though the model itself reads only the first 256.

The tokenizer is loaded on first use, once per process, and is safe to share between threads.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from tokenizers import Tokenizer

from core.embeddings.local import _load_tokenizer, default_tokenizer_path

__all__ = ["count_tokens", "count_tokens_one", "get_tokenizer", "token_offsets"]

_lock = threading.Lock()
_tokenizer: Tokenizer | None = None


def get_tokenizer() -> Tokenizer:
    """The shared tokenizer, configured for counting: no truncation and no padding.

    Raises core.embeddings.EmbeddingError if the tokenizer file is missing, fails its
    checksum or cannot be parsed. Callers must not reconfigure the returned object.
    """
    global _tokenizer
    tokenizer = _tokenizer
    if tokenizer is None:
        with _lock:
            if _tokenizer is None:
                loaded = _load_tokenizer(default_tokenizer_path())
                # _load_tokenizer prepares the tokenizer for embedding, which cuts texts at the
                # model's sequence length; a count must see the whole text. The instance is
                # ours alone, so changing it does not affect any embedding provider.
                loaded.no_truncation()
                loaded.no_padding()
                _tokenizer = loaded
            tokenizer = _tokenizer
    return tokenizer


def count_tokens(texts: Sequence[str]) -> list[int]:
    """Token counts of ``texts``, in order, tokenized in one parallel batch.

    Special tokens are not counted. An empty sequence returns an empty list.
    """
    if not texts:
        return []
    encodings = get_tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [len(encoding.ids) for encoding in encodings]


def count_tokens_one(text: str) -> int:
    """Token count of one text (see count_tokens)."""
    return len(get_tokenizer().encode(text, add_special_tokens=False).ids)


def token_offsets(texts: Sequence[str]) -> list[list[tuple[int, int]]]:
    """For each text, the (start, end) character offsets of its tokens, in order.

    Offsets index the original Python string (not the normalised one), so a token that the
    normaliser rewrote (accents, case) still points at the characters it came from. Characters
    the normaliser drops (control characters) belong to no token.
    """
    if not texts:
        return []
    encodings = get_tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [list(encoding.offsets) for encoding in encodings]
