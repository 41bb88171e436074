"""Project-wide pytest hooks: the suite runs on real PostgreSQL+pgvector and a Redis server.

Unless DATABASE_URL / REDIS_URL are set, the controlling pytest process attaches to (or starts)
the embedded servers before any worker spawns, and releases them at the end (they stop if nothing
else, such as a running launcher or manage.py command, is using them).
"""

from __future__ import annotations

import os

import pytest

# The stand-in of an OpenAI-compatible server and the ``llm`` fixture on it, and the ``tune``
# fixture (tunables set for one test), for every test.
pytest_plugins = ["tests.support.openai_standin", "tests.support.tuning"]

_services = None


def pytest_configure(config: pytest.Config) -> None:
    global _services
    if hasattr(config, "workerinput"):
        return  # xdist workers inherit the controller's environment
    from config.embedded import ensure_environment

    _services = ensure_environment()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _services
    if _services is not None and not hasattr(config, "workerinput"):
        _services.release()
        _services = None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Keep OS environment checks honest: nothing in the suite may rely on a developer's shell.
    os.environ.setdefault("ENGRAM_ENV", "test")
