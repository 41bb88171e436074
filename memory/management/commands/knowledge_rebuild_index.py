from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.knowledge.index_services import index_rebuild
from memory.models import KnowledgeStore


class Command(BaseCommand):
    help = (
        "Rebuild the knowledge items' search index from the items: BM25 postings, term and "
        "corpus statistics per base, and embeddings of searchable items the current model has "
        "not embedded (docs/memory/knowledge.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-id", type=int, action="append", default=[])

    def handle(self, *args: Any, **options: Any) -> None:
        stores = KnowledgeStore.objects.order_by("pk")
        if options["base_id"]:
            stores = stores.filter(pk__in=options["base_id"])
        for store_id in stores.values_list("pk", flat=True):
            index_rebuild(store_id)
        self.stdout.write("done")
