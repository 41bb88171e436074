"""Lists of large tables and choices that stay inside the user's accounts."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from django.contrib import admin
from django.contrib.admin.widgets import ForeignKeyRawIdWidget
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.http import HttpRequest


class EstimatedCountPaginator(Paginator):
    """For tables too large to count: exact up to ``exact_up_to`` rows (read as at most that
    many ids, no COUNT), beyond that the planner's estimate (EXPLAIN, nothing is scanned).

    Page links past the end of an overestimate show an empty page; the admin never counts.
    """

    exact_up_to = 1000

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            return len(queryset)
        plain = queryset.order_by()
        seen = len(plain.values_list("pk", flat=True)[: self.exact_up_to + 1])
        if seen <= self.exact_up_to:
            return seen
        return max(seen, planner_row_estimate(plain.values("pk")))


def planner_row_estimate(queryset: QuerySet[Any]) -> int:
    sql, params = queryset.query.sql_with_params()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


class ScopedRawIdWidget(ForeignKeyRawIdWidget):
    """A raw-id input (for foreign keys to large tables) whose label lookup stays inside the
    field's scoped queryset: a foreign id typed in is never shown with its object's name."""

    def __init__(self, *args: Any, queryset: QuerySet[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queryset = queryset

    def label_and_url_for_value(self, value: Any) -> tuple[str, str]:
        key = self.rel.get_related_field().name
        try:
            if not self.queryset.filter(**{key: value}).exists():
                return "", ""
        except (ValueError, ValidationError):
            return "", ""
        return super().label_and_url_for_value(value)


class ScopedRelatedFieldListFilter(admin.RelatedFieldListFilter):
    """A related-object list filter offering only objects of the user's accounts."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: Any) -> Any:
        ordering = self.field_admin_ordering(field, request, model_admin)
        related = field.remote_field.model
        limit = model_admin.related_choice_filter(request, related, model_admin.viewable(request))
        return field.get_choices(include_blank=False, ordering=ordering, limit_choices_to=limit)


def short_text(value: str, limit: int = 32) -> Any:
    """A list cell of at most ``limit`` characters (the whole text in its title), so one long
    value cannot widen a list past the screen."""
    from django.utils.html import format_html

    if len(value) <= limit:
        return value
    return format_html('<span title="{}">{}…</span>', value, value[: limit - 1].rstrip())


def short_when(value: Any) -> Any:
    """A list cell's date and time, short ("Dec 2, 17:42"; the year when not this one), the
    full timestamp in its title."""
    from django.utils import timezone
    from django.utils.html import format_html

    if value is None:
        return "-"
    local = timezone.localtime(value)
    shown = local.strftime("%b %-d, %H:%M")
    if local.year != timezone.localtime().year:
        shown = local.strftime("%b %-d %Y")
    return format_html('<time datetime="{}" title="{}">{}</time>', local.isoformat(), local, shown)
