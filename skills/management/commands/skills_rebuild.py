"""Rebuild the skill graph's derived data from its sources of truth."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from tqdm import tqdm

from rag import keyword
from skills.models import LearningProfile, SkillScope, SkillUsage
from skills.services.usage import profiles_refresh
from skills.spaces import SKILLS

BATCH = 500


class Command(BaseCommand):
    help = (
        "Rebuild the skills' BM25 index (--index) from their text, and the learning profiles "
        "(--profiles) from the usage records. Embeddings: the weekly skills.reembed job, or "
        "run it now with `celery call skills.tasks.reembed`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--index", action="store_true")
        parser.add_argument("--profiles", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["index"]:
            for scope in tqdm(list(SkillScope.objects.order_by("pk")), desc="index"):
                keyword.index_rebuild(space=SKILLS, scope_id=scope.pk)
        if options["profiles"]:
            pairs = list(
                SkillUsage.objects.values_list("account_id", "agent_id", "task_type")
                .distinct()
                .order_by("account_id", "agent_id", "task_type")
            )
            with tqdm(total=len(pairs), desc="profiles") as progress:
                for start in range(0, len(pairs), BATCH):
                    batch = pairs[start : start + BATCH]
                    by_account: dict[int, list[tuple[int, str]]] = {}
                    for account_id, agent_id, task_type in batch:
                        by_account.setdefault(account_id, []).append((agent_id, task_type))
                    with transaction.atomic():
                        for account_id, account_pairs in by_account.items():
                            profiles_refresh(account_pairs, account_id=account_id)
                    progress.update(len(batch))
            stale = LearningProfile.objects.exclude(
                agent_id__in=SkillUsage.objects.values("agent_id")
            )
            self.stdout.write(f"profiles without usage left alone: {stale.count()}")
