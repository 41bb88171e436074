"""Rebuild the knowledge graph from text: ``manage.py graph_rebuild``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rag.graph.services.build import knowledge_base_graph_rebuild
from rag.graph.services.communities import communities_compute
from rag.graph.services.index import mentions_forget
from rag.models import GraphMention, KnowledgeBase
from rag.spaces import CHUNKS


class Command(BaseCommand):
    help = (
        "Extract the entities of every indexed chunk again (the LLM when configured, offline "
        "otherwise) and make the graph exact: merged nodes, their chunk mentions, mention "
        "counts and co-occurrence edges; mentions of deleted chunks are dropped. "
        "--communities recomputes the Leiden communities afterwards. Long-term memory entries: "
        "memory_graph_rebuild."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", type=int, help="only this account id")
        parser.add_argument("--knowledge-base", type=int, help="only this knowledge base id")
        parser.add_argument("--communities", action="store_true", help="recompute communities")
        parser.add_argument("--communities-only", action="store_true")
        parser.add_argument("--seed", type=int, default=None, help="the Leiden seed")

    def handle(self, *args: Any, **options: Any) -> None:
        kbs = KnowledgeBase.objects.order_by("pk")
        if options["account"]:
            kbs = kbs.filter(account_id=options["account"])
        if options["knowledge_base"]:
            kbs = kbs.filter(pk=options["knowledge_base"])
            if not kbs.exists():
                raise CommandError(f"No knowledge base {options['knowledge_base']}.")
        accounts: set[int] = set()
        for kb in kbs:
            accounts.add(kb.account_id)
            if options["communities_only"]:
                continue
            outcome = knowledge_base_graph_rebuild(kb=kb)
            self.stdout.write(
                f"{kb.name} (#{kb.pk}): {outcome.units} chunks, {outcome.mentions} mentions, "
                f"{outcome.nodes_created} new nodes, {outcome.edges} relations"
            )
        if not options["communities_only"]:
            scopes = list(
                GraphMention.objects.filter(space=CHUNKS.name)
                .values_list("scope_id", flat=True)
                .distinct()
            )
            touched = mentions_forget(space=CHUNKS, scope_ids=scopes)
            self.stdout.write(f"stale mentions dropped: {touched} nodes refreshed")
        if options["communities"] or options["communities_only"]:
            if options["account"]:
                accounts = {options["account"]}
            for account_id in sorted(accounts):
                run = communities_compute(account_id=account_id, seed=options["seed"])
                self.stdout.write(f"account {account_id}: {run.as_counts()}")
