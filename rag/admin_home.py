"""rag's panel of the admin home (``core.admin_base.home``): documents that failed to index,
the most recent first, for the operators who reprocess them."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from core.actors import OPERATOR
from core.admin_base.home import PANEL_ITEMS, HomeItem, HomePanel, home_panel
from rag.models import Document


@home_panel(OPERATOR, order=20)
def failed_documents_panel(request: HttpRequest, accounts: frozenset[int]) -> HomePanel:
    failed = Document.objects.filter(
        account_id__in=accounts, status=Document.Status.FAILED
    ).select_related("knowledge_base")
    return HomePanel(
        title="Documents that failed to index",
        count=failed.count(),
        items=[
            HomeItem(
                label=str(document),
                url=reverse("admin:rag_document_change", args=[document.pk]),
                note=f"{document.knowledge_base.name}: {document.error[:100]}",
                since=document.updated_at,
                status="error",
            )
            for document in failed.order_by("-updated_at", "-pk")[:PANEL_ITEMS]
        ],
        more_url=reverse("admin:rag_document_changelist") + "?status__exact=failed",
        empty="Every document is indexed.",
    )
