"""The rot report in the admin (docs/admin.md, "Rot report"): one account's report at a time,
for its owners and operators, with a link to each item's admin page."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse

from core.actors import Actor
from core.errors import EngramError
from core.models import Account
from memory.maintenance.selectors import rot
from memory.roles import MANAGE_MEMORY

# The admin page of each kind's object.
CHANGE_URLS = {
    "broken_wikilink": "admin:content_page_change",
    "stale_linked_page": "admin:content_page_change",
    "outdated_document": "admin:rag_document_change",
    "invalidated_memory": "admin:memory_memoryentry_change",
    "unused_skill": "admin:skills_skill_change",
    "orphaned_knowledge_item": "admin:memory_knowledgeitem_change",
}
# Kinds whose items are counts, not objects: the page that acts on them.
LIST_URLS = {"stale_vectors": "admin:core_embeddinggeneration_changelist"}


def _url(kind: str, object_id: int) -> str:
    try:
        if kind in LIST_URLS:
            return reverse(LIST_URLS[kind])
        return reverse(CHANGE_URLS[kind], args=[object_id]) if kind in CHANGE_URLS else ""
    except NoReverseMatch:
        return ""


def _int(value: str | None, default: int | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def rot_report_view(
    model_admin: admin.ModelAdmin[Any], request: HttpRequest, actor: Actor
) -> HttpResponse:
    accounts = list(
        Account.objects.filter(pk__in=list(actor.accounts_with(MANAGE_MEMORY))).order_by("name")
    )
    chosen = _int(request.GET.get("account"), accounts[0].pk if accounts else None)
    days = _int(request.GET.get("days"), None)
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Rot report",
        "accounts": accounts,
        "chosen": chosen,
        "days": days,
        "min_days": rot.MIN_DAYS,
        "max_days": rot.MAX_DAYS,
    }
    if chosen is not None:
        try:
            report = rot.rot_report(actor=actor, account_id=chosen, days=days, limit=100)
        except EngramError as exc:
            context["error"] = exc.message
        else:
            context["report"] = report
            context["days"] = report.days
            context["sections"] = [
                (section, [(item, _url(item.kind, item.id)) for item in section.items])
                for section in report.sections
            ]
    return TemplateResponse(request, "admin/memory/rot_report.html", context)
