from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.actors import actor_for_account
from core.errors import EngramError
from core.models import Account
from rag.search import DEFAULT_FUSION, FUSIONS, MODES, SearchFilters, chunk_search


class Command(BaseCommand):
    help = "Search an account's knowledge bases from the command line, with explanations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--account", required=True, help="account slug")
        parser.add_argument("--kb", type=int, action="append", default=[], help="knowledge base id")
        parser.add_argument("--mode", choices=MODES, default="hybrid")
        parser.add_argument("--fusion", choices=FUSIONS, default=DEFAULT_FUSION)
        parser.add_argument("--top-k", type=int, default=5)

    def handle(self, *args: Any, **options: Any) -> None:
        account = Account.objects.filter(slug=options["account"]).first()
        if account is None:
            raise CommandError(f"no account {options['account']!r}")
        try:
            outcome = chunk_search(
                actor=actor_for_account(account.pk),
                query=options["query"],
                mode=options["mode"],
                top_k=options["top_k"],
                fusion=options["fusion"],
                filters=SearchFilters(knowledge_base_ids=tuple(options["kb"])),
            )
        except EngramError as exc:
            raise CommandError(exc.message) from exc
        for rank, hit in enumerate(outcome.hits, start=1):
            where = " › ".join([hit.document_title, *hit.heading_path])
            self.stdout.write(
                f"{rank:>2}. {hit.score:.4f}  [{where}]  vector #{hit.vector_rank} "
                f"{_fmt(hit.vector_score)}  keyword #{hit.keyword_rank} {_fmt(hit.keyword_score)}"
            )
            self.stdout.write(f"    {hit.text[:200].replace(chr(10), ' ')}")
        self.stdout.write(f"timings (ms): {outcome.stage_ms}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
