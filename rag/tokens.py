"""Token counts measured with the embedding model's own WordPiece tokenizer.

Chunk sizes are budgets of the tokens the embedding model will read, so they are counted with
the same all-MiniLM-L6-v2 tokenizer, loaded and sha256-checked by ``core.embeddings.local``.
Counts exclude the [CLS]/[SEP] special tokens and are never truncated: a 5,000-token text
counts 5,000, even though the model itself reads only the first 256.

The tokenizer is loaded on first use, once per process, and is safe to share between threads.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from tokenizers import Tokenizer

from core.embeddings.local import _load_tokenizer, default_tokenizer_path

__all__ = [
    "CONTROL_SPACES",
    "WORD",
    "count_tokens",
    "count_tokens_by_words",
    "count_tokens_one",
    "get_tokenizer",
    "token_offsets",
    "word_token_counts",
]

# --- whitespace as the tokenizer sees it ---------------------------------------------------
# The WordPiece tokenizer never lets a token cross whitespace, so a text's count is the sum of
# its words' counts. Python's whitespace includes a few control characters (\x0b, \x0c,
# \x1c-\x1f, \x85) that the tokenizer deletes instead of treating as separators, so "a\x0cb" is
# one token: those characters are part of words here, which keeps the sum exact.
CONTROL_SPACES = "\x0b\x0c\x1c\x1d\x1e\x1f\x85"
WORD = re.compile(rf"(?:\S|[{CONTROL_SPACES}])+")

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


# Token counts of words seen before. Natural-language text repeats a small vocabulary, so most
# words are looked up rather than tokenized; the tokenizer is deterministic, so the cache can
# never change a result. Long words (identifiers, URLs) rarely repeat and are not kept.
_word_counts: dict[str, int] = {}
_WORD_CACHE_ENTRIES = 1 << 17
_WORD_CACHE_MAX_CHARS = 32


def word_token_counts(words: list[str]) -> list[int]:
    """Token count of each word; precondition: no word contains a separator (``WORD``)."""
    cached = _word_counts.get
    counts = [cached(word, -1) for word in words]
    if -1 not in counts:
        return counts
    missing = list({word for word, count in zip(words, counts, strict=True) if count < 0})
    fresh = dict(zip(missing, count_tokens(missing), strict=True))
    # Dict operations are atomic under the GIL, so threads may share the cache; a clear racing
    # a lookup only costs a recount.
    if len(_word_counts) + len(fresh) > _WORD_CACHE_ENTRIES:
        _word_counts.clear()
    _word_counts.update(
        (word, count) for word, count in fresh.items() if len(word) <= _WORD_CACHE_MAX_CHARS
    )
    return [fresh[word] if count < 0 else count for word, count in zip(words, counts, strict=True)]


def count_tokens_by_words(texts: Sequence[str]) -> list[int]:
    """The same counts as ``count_tokens``, summed over each text's words from the word cache:
    for short texts whose words were seen before (the lines a context is packed from) a few
    dictionary lookups instead of a call into the tokenizer."""
    split = [WORD.findall(text) for text in texts]
    counts = word_token_counts([word for words in split for word in words])
    totals: list[int] = []
    position = 0
    for words in split:
        totals.append(sum(counts[position : position + len(words)]))
        position += len(words)
    return totals
