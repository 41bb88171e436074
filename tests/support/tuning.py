"""The ``tune`` fixture: set tunables for one test through the supported API
(``core.tuning.tuning_set``), every one back to its default after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core import tuning


@pytest.fixture
def tune() -> Iterator[Callable[[str, Any], None]]:
    def set_one(name: str, value: Any) -> None:
        tuning.tuning_set(name, value)

    yield set_one
    tuning.reset()
