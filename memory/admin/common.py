"""What the memory tiers' admins share: the JSON editor, short previews of JSON values, the
live / expired filter and the consolidation report's text."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

JSON_EDITOR = forms.Textarea(attrs={"rows": 20, "cols": 100, "style": "font-family: monospace"})


def _preview(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class LiveFilter(admin.SimpleListFilter):
    """Live or expired (not yet deleted by the clean-up job)."""

    title = "expiry"
    parameter_name = "expiry"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Any:
        return [("live", "Live"), ("expired", "Expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        if self.value() == "live":
            return queryset.exclude(expires_at__lte=now)
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        return queryset


def _report_text(report: dict[str, dict[str, int]]) -> str:
    return "; ".join(
        f"{job}: " + ", ".join(f"{name} {n}" for name, n in counts.items() if name != "dry_run")
        for job, counts in report.items()
    )
