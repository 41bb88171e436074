from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.embedded import EmbeddedServices


@pytest.fixture
def embedded_data_dir() -> Iterator[Path]:
    """A private data directory for embedded servers, stopped and removed afterwards.

    Under /tmp and short: unix socket paths are limited to about 100 bytes.
    """
    path = Path(tempfile.mkdtemp(prefix="eng-", dir="/tmp"))
    yield path
    EmbeddedServices(path).stop_all()
    shutil.rmtree(path, ignore_errors=True)
