"""The conversation's "Preview context" page (docs/admin.md): a query, a budget and a format
in, the context the conversation's agent would get for them out, each section's items with
their score, tokens and provenance. A GET form: the page reads only, and its address can be
shared with a colleague of the same account."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse

from core.admin_base import AccountScopedAdmin
from core.errors import EngramError
from core.search import MAX_QUERY_CHARS
from memory.context.assembly import (
    DEFAULT_BUDGET,
    FORMATS,
    MAX_BUDGET,
    MIN_BUDGET,
    ContextRequest,
    context_preview,
)
from memory.models import Conversation


class ContextPreviewForm(forms.Form):
    query = forms.CharField(
        max_length=MAX_QUERY_CHARS,
        widget=forms.TextInput(attrs={"size": 80}),
        help_text="What the agent is about to be asked.",
    )
    token_budget = forms.IntegerField(
        min_value=MIN_BUDGET, max_value=MAX_BUDGET, initial=DEFAULT_BUDGET
    )
    format = forms.ChoiceField(choices=[(f, f) for f in FORMATS], initial="text")


# The admin page of each kind of item (by the item's id); turns, summaries, working memory and
# pools have none of their own (the conversation's page shows its turns and summaries).
CHANGE_URLS = {
    "memory": "admin:memory_memoryentry_change",
    "knowledge": "admin:memory_knowledgeitem_change",
    "chunk": "admin:rag_chunk_change",
    "page": "admin:content_page_change",
    "skill": "admin:skills_skill_change",
}


def _source(source: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value}" for key, value in source.items() if value not in (None, ""))


def _url(item: dict[str, Any]) -> str:
    try:
        return reverse(CHANGE_URLS[item["kind"]], args=[item["id"]])
    except (KeyError, NoReverseMatch):
        return ""


def context_preview_view(
    model_admin: AccountScopedAdmin, request: HttpRequest, conversation: Conversation
) -> HttpResponse:
    form = ContextPreviewForm(request.GET if "query" in request.GET else None)
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "original": conversation,
        "title": f"Context preview: {conversation}",
        "form": form,
    }
    if form.is_valid():
        try:
            result = context_preview(
                actor=model_admin.actor(request),
                conversation=conversation,
                request=ContextRequest(
                    query=form.cleaned_data["query"],
                    token_budget=form.cleaned_data["token_budget"],
                    format=form.cleaned_data["format"],
                ),
            )
        except EngramError as exc:
            context["error"] = exc.message
        else:
            context["result"] = result
            context["sections"] = [
                (
                    section,
                    [(item, _source(item["source"]), _url(item)) for item in section["items"]],
                )
                for section in result.sections
                if section["items"]
            ]
    return TemplateResponse(request, "admin/memory/conversation/context_preview.html", context)
