from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection
from tqdm import tqdm

from core.embeddings.generations import current_index
from rag import keyword
from rag.models import GraphScope, KnowledgeBase
from rag.spaces import CHUNKS, GRAPH_NODES


class Command(BaseCommand):
    help = (
        "Rebuild derived search data from the chunks: BM25 postings, term and corpus statistics "
        "(refreshing impact order), and the current embedding generation's HNSW vector index. "
        "With --graph, the knowledge graph's node index (every account's) instead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kb", type=int, action="append", default=[])
        parser.add_argument("--graph", action="store_true", help="rebuild the graph node index")
        parser.add_argument("--skip-vector", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["graph"]:
            for scope_id in tqdm(list(GraphScope.objects.values_list("pk", flat=True)), "graph"):
                keyword.index_rebuild(space=GRAPH_NODES, scope_id=scope_id)
            self._reindex(current_index("rag_graphnode"), options)
            self.stdout.write("done")
            return
        kbs = KnowledgeBase.objects.all()
        if options["kb"]:
            kbs = kbs.filter(pk__in=options["kb"])
        for kb in tqdm(list(kbs), desc="keyword index"):
            keyword.index_rebuild(space=CHUNKS, scope_id=kb.pk)
        self._reindex(current_index("rag_chunk"), options)
        self.stdout.write("done")

    def _reindex(self, index: str, options: dict[str, Any]) -> None:
        if options["skip_vector"]:
            return
        self.stdout.write(f"rebuilding the HNSW index {index}")
        with connection.cursor() as cursor:
            cursor.execute(f"REINDEX INDEX CONCURRENTLY {index}")
