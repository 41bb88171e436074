"""One lazily built object per process, shared by its threads and rebuilt after a fork."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerProcess(Generic[T]):
    """Model sessions and connection pools do not survive a fork (Celery prefork, gunicorn
    workers), so a child process builds its own instance on first use."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._value: T | None = None
        self._pid: int | None = None

    def get(self) -> T:
        with self._lock:
            if self._value is None or self._pid != os.getpid():
                self._value = self._factory()
                self._pid = os.getpid()
            return self._value

    def reset(self) -> None:
        """Forget the instance so the next ``get`` rebuilds it (tests, reconfiguration)."""
        with self._lock:
            self._value = None
            self._pid = None
