from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection
from tqdm import tqdm

from rag import keyword
from rag.models import KnowledgeBase
from rag.spaces import CHUNKS


class Command(BaseCommand):
    help = (
        "Rebuild derived search data from the chunks: BM25 postings, term and corpus statistics "
        "(refreshing impact order), and the HNSW vector index."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kb", type=int, action="append", default=[])
        parser.add_argument("--skip-vector", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        kbs = KnowledgeBase.objects.all()
        if options["kb"]:
            kbs = kbs.filter(pk__in=options["kb"])
        for kb in tqdm(list(kbs), desc="keyword index"):
            keyword.index_rebuild(space=CHUNKS, scope_id=kb.pk)
        if not options["skip_vector"]:
            self.stdout.write("rebuilding the HNSW index")
            with connection.cursor() as cursor:
                cursor.execute("REINDEX INDEX CONCURRENTLY rag_chunk_embedding_hnsw")
        self.stdout.write("done")
