from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q
from django.utils import timezone
from tqdm import tqdm

from rag import services
from rag.models import Document

BATCH = 64


def parse_age(value: str) -> timedelta:
    match = re.fullmatch(r"(\d+)([mhdw])", value)
    if not match:
        raise CommandError("--since takes an age like 30m, 12h, 1d or 2w")
    amount, unit = int(match.group(1)), match.group(2)
    return timedelta(**{{"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[unit]: amount})


class Command(BaseCommand):
    help = (
        "Re-chunk and re-embed documents from their stored originals (after changing chunking "
        "settings or the embedding model). Unchanged documents are skipped unless --force."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--all", action="store_true")
        scope.add_argument("--since", help="documents changed within this age, e.g. 1d")
        scope.add_argument("--kb", type=int, help="one knowledge base id")
        parser.add_argument("--force", action="store_true", help="re-embed identical content too")

    def handle(self, *args: Any, **options: Any) -> None:
        documents = Document.objects.all()
        if options["since"]:
            documents = documents.filter(
                updated_at__gte=timezone.now() - parse_age(options["since"])
            )
        elif options["kb"]:
            documents = documents.filter(knowledge_base_id=options["kb"])
        ids = list(
            documents.exclude(Q(status=Document.Status.PROCESSING))
            .order_by("id")
            .values_list("id", flat=True)
        )
        update: dict[str, Any] = {"status": Document.Status.PENDING}
        if options["force"]:
            update["indexed_checksum"] = ""
        totals: dict[str, int] = {}
        with tqdm(total=len(ids), desc="reindex") as progress:
            for start in range(0, len(ids), BATCH):
                batch = ids[start : start + BATCH]
                Document.objects.filter(pk__in=batch).update(**update)
                for outcome, count in services.documents_process_batch(document_ids=batch).items():
                    totals[outcome] = totals.get(outcome, 0) + count
                progress.update(len(batch))
        self.stdout.write(
            ", ".join(f"{k}: {v}" for k, v in sorted(totals.items())) or "nothing to do"
        )
