"""The ``tune`` fixture: set tunables for one test through the supported API
(``core.tuning.tuning_set``), every one back to its default after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core import tuning

# Every floor of a context's sources but the memories' off (each floor has tests of its own):
# the knowledge items' at 0, the others None.
FLOORS_OFF: dict[str, Any] = {
    "memory.floors.knowledge_min_similarity": 0.0,
    "rag.evidence.context_min": None,
    "memory.floors.page_min_similarity": None,
    "memory.floors.skill_min_similarity": None,
    "memory.floors.pool_min_similarity": None,
    "memory.floors.working_min_similarity": None,
}


@pytest.fixture
def tune() -> Iterator[Callable[[str, Any], None]]:
    def set_one(name: str, value: Any) -> None:
        tuning.tuning_set(name, value)

    yield set_one
    tuning.reset()
