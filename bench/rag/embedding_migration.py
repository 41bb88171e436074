"""Embedding-model migration at scale (issue 38; docs/portability.md, "Changing the embedding
model"): the time to migrate N document chunks (100,000 by default) to a model of another width,
served by a stand-in OpenAI-compatible server on 127.0.0.1, through the product's own path
(``generation_start``, then the build the worker runs, ``generation_build``, in this process),
split into embedding and writing, the HNSW index build and the cut-over; then the rollback and
the drop, which put the database back as it was.

The chunks are synthetic (words drawn from a fixed vocabulary, random current vectors tagged
with the configured model), loaded into a knowledge base of their own, ``bench:migration``,
deleted at the end unless ``--keep``. Nothing is read from ../shared. The stand-in embeds each
text as a seeded random unit vector: the figure is Engram's cost (reading texts, the HTTP
calls and JSON of the OpenAI protocol, the writes, the index), not a model's.

    uv run python bench/rag/embedding_migration.py [--chunks 100000] [--dimensions 1536]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session

WORDS = [
    "tide",
    "harbour",
    "pilot",
    "chart",
    "ledger",
    "copper",
    "glacier",
    "violin",
    "spruce",
    "varnish",
    "hive",
    "honey",
    "frame",
    "yeast",
    "wort",
    "barley",
    "kiln",
    "loom",
    "thread",
    "dye",
    "indigo",
    "anchor",
    "rope",
    "sail",
    "mast",
    "keel",
    "compass",
    "lantern",
    "quarry",
    "granite",
    "mortar",
    "arch",
    "beam",
    "rafter",
    "furnace",
    "bellows",
    "anvil",
    "forge",
    "rivet",
    "hinge",
    "latch",
]


class _Handler(BaseHTTPRequestHandler):
    dimensions = 1536

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for index, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            vector = np.random.default_rng(seed).standard_normal(self.dimensions)
            vector /= np.linalg.norm(vector)
            data.append({"object": "embedding", "index": index, "embedding": vector.tolist()})
        payload = json.dumps(
            {"object": "list", "data": data, "model": body["model"], "usage": {}}
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def _load(chunks: int) -> int:
    """The bench's knowledge base with ``chunks`` chunks (made once; reused when it has them)."""
    from django.db import connection

    from core.embeddings import settings_embedding_provider
    from core.models import Account
    from rag.models import Chunk, Document, KnowledgeBase

    account, _ = Account.objects.get_or_create(slug="bench-migration", defaults={"name": "bench"})
    kb, _ = KnowledgeBase.objects.get_or_create(
        account=account, name="bench:migration", defaults={"embedding_model": "bench"}
    )
    if Chunk.objects.filter(knowledge_base=kb).count() == chunks:
        return int(kb.pk)
    Document.objects.filter(knowledge_base=kb).delete()
    per_document = 100
    documents = Document.objects.bulk_create(
        Document(
            account=account,
            knowledge_base=kb,
            title=f"document {n}",
            content_type="text/plain",
            original=b"",
            status=Document.Status.INDEXED,
            checksum=f"bench-{n}",
        )
        for n in range((chunks + per_document - 1) // per_document)
    )
    model_id = settings_embedding_provider().model_id
    rng = np.random.default_rng(7)
    with connection.cursor() as cursor:
        for start in range(0, chunks, 5000):
            rows = []
            for n in range(start, min(chunks, start + 5000)):
                text = " ".join(rng.choice(WORDS, size=60))
                vector = rng.standard_normal(384).astype(np.float32)
                vector /= np.linalg.norm(vector)
                rows.append(
                    (
                        account.pk,
                        kb.pk,
                        documents[n // per_document].pk,
                        n % per_document,
                        text,
                        "[" + ",".join(f"{x:.6g}" for x in vector) + "]",
                    )
                )
            cursor.executemany(
                "INSERT INTO rag_chunk (account_id, knowledge_base_id, document_id, position, "
                "text, heading_path, token_count, start_char, end_char, embedding, "
                "embedding_model, keyword_length) "
                "VALUES (%s, %s, %s, %s, %s, '{}', 60, 0, 0, %s::vector, %s, 0)",
                [(*row, model_id) for row in rows],
            )
    return int(kb.pk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dimensions", type=int, default=1536)
    parser.add_argument("--keep", action="store_true", help="keep the bench's chunks")
    args = parser.parse_args()

    with django_session():
        from django.conf import settings
        from django.db import connection

        from core.embeddings import generations, reset_embedding_provider
        from rag.models import KnowledgeBase

        started = time.perf_counter()
        kb_id = _load(args.chunks)
        load_seconds = time.perf_counter() - started

        _Handler.dimensions = args.dimensions
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        settings.EMBEDDING_NEXT_PROVIDER = "openai"
        settings.EMBEDDING_NEXT_MODEL = f"bench-standin-{args.dimensions}"
        settings.EMBEDDING_NEXT_BASE_URL = f"http://127.0.0.1:{server.server_port}/v1"
        settings.EMBEDDING_NEXT_DIMENSIONS = args.dimensions
        reset_embedding_provider()

        timings: dict[str, float] = {}
        real_index, real_cutover = generations._build_index, generations.generation_cutover

        def timed_index(*a: Any, **k: Any) -> None:
            t = time.perf_counter()
            real_index(*a, **k)
            timings["index_s"] = timings.get("index_s", 0.0) + time.perf_counter() - t

        def timed_cutover() -> Any:
            t = time.perf_counter()
            answer = real_cutover()
            timings["cutover_s"] = time.perf_counter() - t
            return answer

        generations._build_index = timed_index
        generations.generation_cutover = timed_cutover
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM rag_chunk WHERE embedding IS NOT NULL")
            all_chunks = int(cursor.fetchone()[0])
        status = generations.generation_status()
        units = sum(space["units"] for space in status["spaces"])

        started = time.perf_counter()
        generation = generations.generation_start(auto_cutover=True, enqueue=False)
        outcome = generations.generation_build(generation.pk)
        total = time.perf_counter() - started
        embed_write = total - timings.get("index_s", 0.0) - timings.get("cutover_s", 0.0)

        started = time.perf_counter()
        generations.generation_rollback()
        rollback_s = time.perf_counter() - started
        generations.generation_drop()
        server.shutdown()
        if not args.keep:
            KnowledgeBase.objects.filter(pk=kb_id).delete()

    print(
        json.dumps(
            {
                "benchmark": "embedding migration (issue 38)",
                "data": "synthetic chunks; stand-in OpenAI-compatible server on 127.0.0.1",
                "outcome": outcome,
                "bench_chunks": args.chunks,
                "chunks_migrated": all_chunks,
                "units_migrated": units,
                "from_to_dimensions": [384, args.dimensions],
                "load_s": round(load_seconds, 1),
                "migration_s": round(total, 1),
                "embed_and_write_s": round(embed_write, 1),
                "units_per_s": round(units / embed_write, 1) if embed_write else None,
                "hnsw_index_s": round(timings.get("index_s", 0.0), 1),
                "cutover_ms": round(timings.get("cutover_s", 0.0) * 1000, 1),
                "rollback_ms": round(rollback_s * 1000, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
