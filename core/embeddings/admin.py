"""The embedding generations in the admin, for installation operators (docs/portability.md,
"Changing the embedding model"): the list page shows, above the generations, what each space
holds (units, current, missing in the other generation) with the build's progress bar, and the
actions the state allows (start, cut over, roll back, drop), each one POST."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse

from core.admin_base import InstallationAdminMixin
from core.embeddings import generations
from core.errors import EngramError
from core.models import EmbeddingGeneration

ACTIONS = {
    "start": lambda: generations.generation_start(auto_cutover=True),
    "start_manual": lambda: generations.generation_start(auto_cutover=False),
    "cutover": generations.generation_cutover,
    "rollback": generations.generation_rollback,
    "drop": generations.generation_drop,
}
DONE = {
    "start": "The build of the next generation started; it cuts over when it completes.",
    "start_manual": "The build of the next generation started; cut over by hand when it is ready.",
    "cutover": "The next generation is current; the previous one is kept for a rollback.",
    "rollback": "The previous generation is current again.",
    "drop": "The other generation is dropped.",
}


@admin.register(EmbeddingGeneration)
class EmbeddingGenerationAdmin(InstallationAdminMixin, admin.ModelAdmin):
    change_list_template = "admin/core/embeddinggeneration/change_list.html"
    list_display = ["id", "model_id", "dimensions", "role", "status", "created_at", "cutover_at"]
    list_filter = ["role", "status"]
    readonly_fields = [f.name for f in EmbeddingGeneration._meta.fields]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        act = path(
            "act/<str:action>/",
            self.admin_site.admin_view(self.act_view),
            name="core_embeddinggeneration_act",
        )
        return [act, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        if self.has_view_permission(request):
            extra_context = {**(extra_context or {}), "generations": _shown_status()}
        return super().changelist_view(request, extra_context)

    def act_view(self, request: HttpRequest, action: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request) or action not in ACTIONS:
            raise PermissionDenied
        try:
            ACTIONS[action]()
        except EngramError as exc:
            messages.error(request, f"{exc.message} ({exc.code})")
        else:
            messages.success(request, DONE[action])
        return HttpResponseRedirect(reverse("admin:core_embeddinggeneration_changelist"))


def _shown_status() -> dict[str, Any]:
    found = generations.generation_status()
    other = found["next"] or found["previous"]
    found["percent"] = round(found["progress"] * 100)
    found["can_start"] = found["next_configured"] is not None and other is None
    found["can_resume"] = found["next"] is not None and found["next"]["status"] == "failed"
    found["can_cutover"] = found["next"] is not None and found["next"]["status"] == "ready"
    found["can_rollback"] = found["previous"] is not None
    found["can_drop"] = other is not None
    found["other"] = other
    return found
