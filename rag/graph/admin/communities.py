"""The knowledge graph's communities in the admin: read-only lists with their members and
summaries, and an action recomputing them (operators). Imported by ``rag.admin``."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html_join

from core.actors import READ
from core.admin_base import AccountScopedAdmin
from rag.graph.communities import communities_seen, members_of
from rag.graph.services import communities as community_services
from rag.models import GraphCommunity
from rag.visibility import visibility_of

_FIELDS: list[str] = [
    "account",
    "title",
    "level",
    "number",
    "parent",
    "size",
    "summary",
    "summary_method",
    "seed",
    "modularity",
    "members_list",
    "created_at",
]


@admin.register(GraphCommunity)
class GraphCommunityAdmin(AccountScopedAdmin):
    """Leiden communities of each account's graph (derived: recomputed every ten minutes for
    changed graphs, or now with the action)."""

    view_roles = READ
    list_display = ["title", "level", "size", "summary_excerpt", "summary_method", "created_at"]
    list_filter = ["level", "summary_method", "account"]
    search_fields = ["title", "summary"]
    fields = tuple(_FIELDS)
    readonly_fields = _FIELDS
    actions = ["recompute"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[GraphCommunity]:
        """The communities with a member the person may see (``rag.visibility``)."""
        return communities_seen(super().get_queryset(request), visibility_of(self.actor(request)))

    @admin.display(description="summary")
    def summary_excerpt(self, obj: GraphCommunity) -> str:
        return obj.summary[:160] + ("…" if len(obj.summary) > 160 else "")

    @admin.display(description="members (most central first)")
    def members_list(self, obj: GraphCommunity) -> str:
        shown = getattr(obj, "shown_members", None)  # the members the person may see
        return format_html_join(
            ", ",
            '<a href="../../../graphnode/{}/change/">{}</a> ({})',
            (
                (m.node_id, m.node.name, m.node.entity_type)
                for m in (members_of(obj) if shown is None else shown)
            ),
        )

    @admin.action(description="Recompute the communities of these accounts", permissions=["view"])
    def recompute(self, request: HttpRequest, queryset: QuerySet[GraphCommunity]) -> None:
        actor = self.actor(request)
        accounts = {c.account_id: c for c in queryset.order_by("account_id", "pk")}
        self.each(
            request,
            accounts.values(),
            lambda c: community_services.communities_compute(account_id=c.account_id, actor=actor),
            "Recomputed the communities of the accounts of",
        )
