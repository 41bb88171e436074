from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from collections.abc import Iterator

import pytest

from config.env import BASE_DIR
from core.heap import freeze_startup_objects


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


def test_freezing_collects_start_up_garbage_first_and_freezes_the_rest(unfrozen: None) -> None:
    kept, garbage = Node(), Node()
    garbage.other = Node()
    garbage.other.other = garbage  # a cycle only the collector frees
    gone = weakref.ref(garbage)
    del garbage

    frozen = freeze_startup_objects()

    assert gone() is None  # collected, not frozen forever
    # Frozen objects still die by reference count (another thread's, a worker's), never by the
    # collector: the count only falls after the freeze.
    assert 0 < gc.get_freeze_count() <= frozen
    assert not any(o is kept for o in gc.get_objects())  # out of every generation
    gc.unfreeze()
    assert any(o is kept for o in gc.get_objects())


@pytest.mark.slow
@pytest.mark.parametrize("entry_point", ["config.wsgi", "config.asgi"])
def test_the_web_server_module_imports_its_views_then_freezes_its_heap(entry_point: str) -> None:
    """What gunicorn imports: the URLconf's views loaded and frozen at start-up."""
    probe = (
        f"import gc, sys, {entry_point}; print(gc.get_freeze_count(), "
        "'memory.apis' in sys.modules, 'rag.graph.apis.retrieval' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    count, views, graph_views = done.stdout.split()
    assert int(count) > 10_000
    assert views == graph_views == "True"
