"""Conversations in the admin: each with its messages (the last ``SHOWN_MESSAGES``, turn by
turn), its summaries and its extractions; operators (and owners) see them, like the rest of
long-term memory, may preview the context its agent would get for a query
(``memory.context.admin``), and may summarise a conversation now or delete it (with its
messages and context). Extractions also have a read-only list of their own."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from core.admin_base import AccountScopedAdmin
from memory.context.admin import context_preview_view
from memory.conversations import selectors, services
from memory.long_term.services import pending
from memory.models import Conversation, Extraction
from memory.roles import MANAGE_MEMORY

SHOWN_MESSAGES = 200
SHOWN_SUMMARIES = 50
SHOWN_EXTRACTIONS = 200


@admin.register(Conversation)
class ConversationAdmin(AccountScopedAdmin):
    view_roles = change_roles = delete_roles = MANAGE_MEMORY
    list_display = [
        "__str__",
        "agent",
        "user_id",
        "message_count",
        "summarized_through",
        "last_message_at",
        "created_at",
    ]
    list_filter = ["agent"]
    list_select_related = ["agent"]
    search_fields = ["title", "user_id"]
    fields = readonly_fields = (
        "account",
        "agent",
        "context",
        "title",
        "user_id",
        "metadata",
        "message_count",
        "summary_every",
        "summarized_through",
        "summary",
        "last_message_at",
        "created_at",
        "extracted_through",
        "indexing",
        "context_preview",
        "summaries",
        "extractions",
        "messages",
    )
    actions = ["summarize", "retry_indexing"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Nothing to edit by hand; the permission guards the summarise action.
        return obj is None and super().has_change_permission(request, obj)

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<path:object_id>/context/",
                self.admin_site.admin_view(self.context_view),
                name="memory_conversation_context",
            ),
            *super().get_urls(),
        ]

    def context_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The context the conversation's agent would get for a query (a GET form)."""
        conversation = self.get_object(request, unquote(object_id))
        if conversation is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_view_permission(request, conversation):
            raise PermissionDenied
        return context_preview_view(self, request, conversation)

    @admin.display(description="context preview")
    def context_preview(self, obj: Conversation) -> str:
        return format_html(
            '<a href="{}" id="context-preview-link">Preview the context {} would get for a '
            "query…</a>",
            reverse("admin:memory_conversation_context", args=[obj.pk]),
            obj.agent,
        )

    def delete_model(self, request: HttpRequest, obj: Conversation) -> None:
        services.conversation_delete(actor=self.actor(request), conversation=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        for conversation in queryset.select_related("context"):
            self.delete_model(request, conversation)

    @admin.display(description="index")
    def indexing(self, obj: Conversation) -> str:
        """Messages are indexed by a worker after they are stored (docs/memory/conversations.md)."""
        waiting = selectors.index_waiting(obj)
        if not waiting["waiting"] and not waiting["failed"]:
            return "Every message is indexed."
        return format_html(
            "{} waiting ({} not found by keyword yet), {} failed{}",
            waiting["waiting"],
            waiting["unsearchable"],
            waiting["failed"],
            f": {waiting['error']}" if waiting["error"] else "",
        )

    @admin.display(description=f"messages (the last {SHOWN_MESSAGES})")
    def messages(self, obj: Conversation) -> str:
        shown = selectors.messages_recent(obj, SHOWN_MESSAGES)
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    message.position,
                    message.role,
                    message.speaker,
                    message.occurred_at.strftime("%Y-%m-%d %H:%M") if message.occurred_at else "",
                    message.content[:500],
                )
                for message in shown
            ),
        )
        return format_html(
            "<table><tr><th>turn</th><th>role</th><th>name</th><th>when</th>"
            "<th>content</th></tr>{}</table>",
            rows,
        )

    @admin.display(description="summaries")
    def summaries(self, obj: Conversation) -> str:
        rows = format_html_join(
            "",
            "<tr><td>{}-{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    summary.metadata.get("start_turn"),
                    summary.metadata.get("end_turn"),
                    summary.content,
                    "; ".join(summary.metadata.get("key_points") or []),
                    summary.metadata.get("method", ""),
                )
                for summary in selectors.summaries_of(obj)[:SHOWN_SUMMARIES]
            ),
        )
        return format_html(
            "<table><tr><th>turns</th><th>summary</th><th>key points</th><th>method</th></tr>"
            "{}</table>",
            rows,
        )

    @admin.display(description=f"extractions (the last {SHOWN_EXTRACTIONS})")
    def extractions(self, obj: Conversation) -> str:
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td><td>{}</td></tr>",
            (
                (
                    ", ".join(str(turn) for turn in row.turns),
                    row.kind,
                    row.decision,
                    row.fact[:500],
                    row.key,
                    f"{row.confidence:.2f}",
                    row.method,
                    row.error[:300],
                )
                for row in selectors.extractions_of(obj)[:SHOWN_EXTRACTIONS]
            ),
        )
        return format_html(
            "<table><tr><th>turns</th><th>kind</th><th>decision</th><th>fact</th><th>key</th>"
            "<th>confidence</th><th>method</th><th>error</th></tr>{}</table>",
            rows,
        )

    @admin.action(description="Summarise the whole conversation now", permissions=["change"])
    def summarize(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset.filter(message_count__gt=0),
            lambda conversation: services.summary_create(actor=actor, conversation=conversation),
            "Summarised",
        )

    @admin.action(description="Retry indexing the messages that failed", permissions=["change"])
    def retry_indexing(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        actor = self.actor(request)
        self.each(
            request,
            queryset,
            lambda conversation: pending.pending_retry_failed(
                actor=actor, context_id=conversation.context_id
            ),
            "Queued again the failed messages of",
        )


@admin.register(Extraction)
class ExtractionAdmin(AccountScopedAdmin):
    """Read-only: extractions are made by the extraction services (after each append, or on
    request through the API). Deleting one (or, with it, its conversation or agent) removes the
    record only, never the knowledge it produced."""

    view_roles = delete_roles = MANAGE_MEMORY
    list_display = [
        "conversation",
        "kind",
        "decision",
        "fact",
        "key",
        "confidence",
        "method",
        "created_at",
    ]
    list_filter = ["kind", "decision", "method"]
    list_select_related = ["conversation"]
    search_fields = ["fact", "key"]
    fields = readonly_fields = (
        "account",
        "conversation",
        "kind",
        "decision",
        "fact",
        "key",
        "confidence",
        "method",
        "turns",
        "message_ids",
        "knowledge_item",
        "graph_node",
        "graph_edge",
        "error",
        "created_at",
    )
