"""The contract every search keeps, in every app: its input bounds and its timings.

One place for the numbers: the API's fields (``core.serializers.SearchQueryField``,
``TopKField``, ``ThresholdField``, ``IdListField``, ``WeightsInput``) state them in the schema,
and the services check them again (``search_query_check``; ``rag.search.search_options_validate``
for the engine's options), so a caller that skips the API (a task, a command, another app) meets
the same limits. Every search answer carries ``timings_ms``: the milliseconds each stage took
(``TimedHits`` carries them from a selector to its view).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sized
from typing import TypeVar

from core.errors import ValidationFailed

# A query longer than a page of text is not a question: it is a way to spend the server's time
# (tokenising and embedding 22 MB took 105 s).
MAX_QUERY_CHARS = 4000
DEFAULT_TOP_K = 10
MAX_TOP_K = 100
# Lists in a search's input (ids to search in, types to keep): at most this many items.
MAX_LIST_ITEMS = 100
# The largest id the API takes, in a path (``core.converters.IdConverter``: 18 digits) or a body.
MAX_ID = 10**18 - 1
# Stage weights are relative (normalised to sum to 1); the bound keeps every sum finite.
MAX_WEIGHT = 1000.0

T = TypeVar("T")


def search_query_check(query: str) -> None:
    """400 ``query_too_long`` for a query over ``MAX_QUERY_CHARS`` characters."""
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationFailed(
            f"The query is longer than {MAX_QUERY_CHARS} characters.",
            code="query_too_long",
            details={"max_length": MAX_QUERY_CHARS, "length": len(query)},
        )


def top_k_check(top_k: int, *, name: str = "top_k", maximum: int = MAX_TOP_K) -> None:
    """400 ``invalid_top_k`` unless ``1 <= top_k <= maximum``."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= maximum:
        raise ValidationFailed(
            f"{name} must be between 1 and {maximum}.",
            code="invalid_top_k",
            details={name: top_k if isinstance(top_k, int) else None},
        )


def threshold_check(
    threshold: float | None, *, minimum: float = -1.0, maximum: float = 1.0
) -> None:
    """400 ``invalid_threshold`` unless the threshold is None or a number within the bounds."""
    if threshold is None:
        return
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
        or not minimum <= threshold <= maximum
    ):
        raise ValidationFailed(
            f"threshold must be a number from {minimum:g} to {maximum:g}.",
            code="invalid_threshold",
        )


def list_length_check(name: str, items: Sized, *, maximum: int = MAX_LIST_ITEMS) -> None:
    """400 ``too_many_items`` for a list of more than ``maximum`` items."""
    if len(items) > maximum:
        raise ValidationFailed(
            f"{name} takes at most {maximum} items.",
            code="too_many_items",
            details={"field": name, "max_items": maximum, "items": len(items)},
        )


class TimedHits(list[T]):
    """A search's hits, best first, with the time each stage took in milliseconds
    (``timings_ms``, as every search answer shows it). A list, so callers that only want the
    hits iterate it as before."""

    timings_ms: dict[str, float]

    def __init__(self, hits: Iterable[T] = (), timings_ms: Mapping[str, float] | None = None):
        super().__init__(hits)
        self.timings_ms = dict(timings_ms or {})
