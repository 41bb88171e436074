"""gunicorn's settings file for Engram's web server (``-c python:config.gunicorn``): the launcher
and docker-compose load it. Only what the command line cannot say lives here."""

from __future__ import annotations

from typing import Any


def child_exit(server: Any, worker: Any) -> None:
    """A worker ended: its live gauges leave /metrics (prometheus-client's multiprocess mode;
    core.metrics). Runs in the master, which has not loaded Django."""
    from core.metrics import process_exited

    process_exited(worker.pid)
