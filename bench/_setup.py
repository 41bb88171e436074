"""Shared start-up for benchmarks: Django on the configured or embedded servers."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
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


def settle_tables(tables: Sequence[str]) -> None:
    """What a server that has run for a while has done to the tables a search reads: vacuumed
    and analysed them (autovacuum, once a bulk load settles: the visibility map keeps posting
    scans index-only, the statistics are current), and holds them and their indexes in
    PostgreSQL's buffers (``pg_prewarm``)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        for table in tables:
            cursor.execute(f"VACUUM (ANALYZE) {table}")
            cursor.execute(
                "SELECT pg_prewarm(c.oid) FROM pg_class c WHERE c.oid = %s::regclass "
                "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass)",
                [table, table],
            )
