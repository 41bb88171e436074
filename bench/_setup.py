"""Shared start-up for benchmarks: Django on the configured or embedded servers."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


@contextlib.contextmanager
def django_session() -> Iterator[None]:
    """Django set up and migrated for the benchmark's duration; embedded servers released after."""
    services = django_setup()
    try:
        yield
    finally:
        if services is not None:
            services.release()  # type: ignore[attr-defined]


def django_setup() -> object:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    from config.embedded import ensure_environment

    services = ensure_environment()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return services
