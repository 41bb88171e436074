"""A long-running web process's heap after start-up (``config.wsgi``, ``config.asgi``)."""

from __future__ import annotations

import gc

from django.urls import get_resolver


def freeze_startup_objects() -> int:
    """Import every view (the URLconf), collect what start-up left as garbage, then move every
    object still alive to the collector's permanent generation (``gc.freeze``); answer how many
    that is.

    Django's, the views' and the libraries' objects live as long as the process; left in the
    collector's oldest generation, every full collection walks all of them again. In a process
    that assembles contexts, that was a pause of 120-150 ms about every 200 calls (195,000 tracked
    objects); frozen, the full collections that remain take 1-4 ms (docs/benchmarks-log.md,
    "Context assembly"). Objects made later are collected as before."""
    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
