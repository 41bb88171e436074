"""Shared start-up for benchmarks: Django on the configured or embedded servers."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server a bench starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def beir_train_base(dataset_dir: str, chunking: str | None) -> tuple[Any, Any, dict[int, str]]:
    """The BEIR train split, the knowledge base ``rag_eval`` loaded it into
    (``beir:<name>:<chunking>``; the first of any chunking when None) and each of its chunks'
    document id, for benchmarks that score rankings offline."""
    from rag.evaluation import load_beir
    from rag.models import Chunk, KnowledgeBase

    name = Path(dataset_dir).name
    dataset = load_beir(Path(dataset_dir), "train")
    bases = KnowledgeBase.objects.filter(name__startswith=f"beir:{name}:").order_by("pk")
    kb = (bases.filter(name=f"beir:{name}:{chunking}") if chunking else bases).first()
    if kb is None:
        raise SystemExit("load the corpus first: manage.py rag_eval --dataset ... --split train")
    doc_of = dict(
        Chunk.objects.filter(knowledge_base=kb).values_list("id", "document__source_path")
    )
    return dataset, kb, doc_of


def chunk_stages(kb: Any, queries: Mapping[str, str], depth: int) -> dict[str, dict[str, Any]]:
    """Each query's two stages over a knowledge base's chunks, fetched once for offline
    fusion: ``query_vector`` (the local model's), ``vector`` and ``keyword`` ((chunk id,
    score), best first, ``depth`` of each)."""
    import numpy as np

    from core.embeddings import get_embedding_provider
    from rag.keyword import keyword_search
    from rag.spaces import CHUNKS
    from rag.vector import vector_search

    provider = get_embedding_provider()
    stages = {}
    for qid, text in queries.items():
        vector = np.asarray(provider.embed_query(text), dtype=np.float32)
        stages[qid] = {
            "query_vector": vector,
            "vector": vector_search(
                space=CHUNKS, scope_ids=[kb.pk], query_vector=vector, limit=depth
            ),
            "keyword": [
                (h.unit_id, h.score)
                for h in keyword_search(space=CHUNKS, scope_ids=[kb.pk], query=text, limit=depth)
            ],
        }
    return stages
