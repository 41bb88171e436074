"""What ``./engram run`` does before it starts its processes, in one process: the migrations,
the periodic schedules (``setup_periodic_tasks``) and, on the first start only, the demo account
(``engram_bootstrap``). One Django start-up instead of three: most of a warm restart's wait was
three processes importing the project (docs/benchmarks.md, "Start and restart")."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Prepare a start: migrate, create the periodic schedules, and on the first start create "
        "the demo account (engram_bootstrap). What ./engram run runs before its processes."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("setup_periodic_tasks", stdout=self.stdout, stderr=self.stderr)
        call_command("engram_bootstrap", stdout=self.stdout, stderr=self.stderr)
