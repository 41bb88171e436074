from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from core.periodic import periodic_tasks_sync


class Command(BaseCommand):
    help = (
        "Create the default schedules of every periodic job in django-celery-beat's tables. "
        "Idempotent; never overwrites a schedule or enabled flag an operator changed."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        report = periodic_tasks_sync()
        for name, outcome in sorted(report.items()):
            self.stdout.write(f"{outcome:>10}  {name}")
