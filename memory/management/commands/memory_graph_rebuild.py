"""Link long-term memory entries to the knowledge graph again (``memory_graph_rebuild``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from core.actors import actor_for_account
from memory.long_term.services.graph_links import context_graph_index
from memory.models import MemoryContext
from memory.spaces import MEMORY_ENTRIES
from rag.graph.services import mentions_forget


class Command(BaseCommand):
    help = (
        "Link every current entry of the long-term contexts (all, or --context / --account) "
        "to the knowledge graph: the entities each mentions (offline, or --llm) become nodes "
        "linked to it; links of deleted entries are dropped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", type=int)
        parser.add_argument("--context", type=int)
        parser.add_argument("--llm", action="store_true", help="use the configured LLM")

    def handle(self, *args: Any, **options: Any) -> None:
        contexts = MemoryContext.objects.order_by("pk")
        if options["account"]:
            contexts = contexts.filter(account_id=options["account"])
        if options["context"]:
            contexts = contexts.filter(pk=options["context"])
        ids = []
        for context in contexts:
            ids.append(context.pk)
            outcome = context_graph_index(
                actor=actor_for_account(context.account_id), context=context,
                use_model=options["llm"],
            )  # fmt: skip
            self.stdout.write(
                f"{context.name} (#{context.pk}): {outcome.units} entries, "
                f"{outcome.mentions} mentions, {outcome.nodes_created} new nodes"
            )
        touched = mentions_forget(space=MEMORY_ENTRIES, scope_ids=ids)
        self.stdout.write(f"stale links dropped: {touched} nodes refreshed")
