"""The review queue (docs/admin.md, "For operators: the review queue"): the pending changes of
the accounts where the person is an owner or operator, filtered by status, kind and context;
each change's page shows the reason, the statements the change would archive highlighted
(``memory.maintenance.admin.change_statements``), the before/after diff and the cluster's members,
with Approve and Reject (a rejection needs a reason) in the page's sidebar
(``admin/memory/pendingchange/change_form.html``). Many are approved at once with an action;
rejecting many asks for one reason. Every decision goes through
``memory.maintenance.services.changes`` (audited); what cannot be decided is skipped and reported,
never a server error."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import model_ngettext, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from core.admin_base import AccountScopedAdmin, short_text, short_when
from core.errors import EngramError
from memory.maintenance.admin.change_statements import archived_statements_html
from memory.maintenance.admin.rot import rot_report_view
from memory.maintenance.selectors.change_archives import change_archived_statements
from memory.maintenance.selectors.changes import change_diff
from memory.maintenance.services import changes as services
from memory.models import PendingChange
from memory.roles import MANAGE_MEMORY


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        max_length=services.MAX_REASON_CHARS,
        help_text="Why this change should not happen (recorded with the decision).",
    )


def _diff_html(text: str) -> Any:
    styles = {"+": "color: var(--message-success-fg, #2a7b2a)", "-": "color: var(--error-fg)"}
    rows = (
        (styles.get(line[:1], "") if not line.startswith(("+++", "---")) else "", line)
        for line in text.splitlines()
    )
    return format_html(
        '<pre class="change-diff" style="white-space: pre-wrap; max-width: 100%">{}</pre>',
        format_html_join("\n", '<span style="{}">{}</span>', rows),
    )


_FIELDS = (
    "account",
    "kind",
    "status",
    "context",
    "pool",
    "reason",
    "archived_statements",
    "diff",
    "cluster_members",
    "proposed_by",
    "created_at",
    "expires_at",
    "decided_by_label",
    "decided_at",
    "decision_reason",
    "result_text",
    "error",
)


@admin.register(PendingChange)
class PendingChangeAdmin(AccountScopedAdmin):
    view_roles = change_roles = MANAGE_MEMORY
    change_form_template = "admin/memory/pendingchange/change_form.html"
    # Short cells: the list fits 1,280 pixels beside the filters (tests/e2e).
    list_display = ["id", "kind", "status", "where", "summary", "age", "expires"]
    list_display_links = ["id", "kind"]
    list_filter = ["status", "kind", "context", "account"]
    list_select_related = ["context", "pool"]
    search_fields = ["reason", "kind"]
    actions = ["approve_selected", "reject_selected"]
    fields = readonly_fields = _FIELDS

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Nothing to edit: the permission guards the decisions (the actions, the decide view).
        return obj is None and super().has_change_permission(request, obj)

    def may_decide(self, request: HttpRequest, change: PendingChange) -> bool:
        return self.may(request, self.change_roles, self.account_id_of(change))

    def get_queryset(self, request: HttpRequest) -> QuerySet[PendingChange]:
        return super().get_queryset(request).select_related("context", "pool")

    # --- display ---------------------------------------------------------------------------

    @admin.display(description="reason")
    def summary(self, change: PendingChange) -> Any:
        return short_text(change.reason, 90)

    @admin.display(description="context or pool")
    def where(self, change: PendingChange) -> Any:
        place = change.context or change.pool
        return short_text(str(place), 28) if place else "-"

    @admin.display(description="expires", ordering="expires_at")
    def expires(self, change: PendingChange) -> Any:
        return short_when(change.expires_at)

    @admin.display(description="age", ordering="created_at")
    def age(self, change: PendingChange) -> str:
        hours = (timezone.now() - change.created_at).total_seconds() / 3600
        return f"{hours:.0f} h" if hours < 48 else f"{hours / 24:.0f} d"

    @admin.display(description="before → after")
    def diff(self, change: PendingChange) -> Any:
        return _diff_html(change_diff(change))

    @admin.display(description="statements archived")
    def archived_statements(self, change: PendingChange) -> Any:
        return archived_statements_html(change_archived_statements(change))

    @admin.display(description="members")
    def cluster_members(self, change: PendingChange) -> Any:
        if not change.members:
            return "—"
        rows = (
            (
                member.get("id", ""),
                "kept" if member.get("kept") else "",
                member.get("content", json.dumps(member, ensure_ascii=False)),
            )
            for member in change.members
            if isinstance(member, dict)
        )
        return format_html(
            "<table><tr><th>id</th><th></th><th>content</th></tr>{}</table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="result")
    def result_text(self, change: PendingChange) -> str:
        return json.dumps(change.result, ensure_ascii=False) if change.result else "—"

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> Any:
        context.update(
            show_save=False,
            show_save_and_continue=False,
            show_save_and_add_another=False,
            show_delete=False,
            reject_form=context.get("reject_form") or RejectForm(),
            may_decide=bool(obj is not None and obj.is_open and self.may_decide(request, obj)),
        )
        return super().render_change_form(request, context, add, change, form_url, obj)

    # --- decisions -------------------------------------------------------------------------

    def get_urls(self) -> list[Any]:
        return [
            path(
                "rot-report/",
                self.admin_site.admin_view(self.rot_view),
                name="memory_rot_report",
            ),
            path(
                "<path:object_id>/decide/",
                self.admin_site.admin_view(self.decide_view),
                name="memory_pendingchange_decide",
            ),
            *super().get_urls(),
        ]

    def rot_view(self, request: HttpRequest) -> HttpResponse:
        """The rot report of one of the person's accounts (owners and operators)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return rot_report_view(self, request, self.actor(request))

    def decide_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST ``approve`` or ``reject`` (with ``reason``) for one change."""
        change = self.get_object(request, unquote(object_id))
        if change is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method != "POST" or not self.may_decide(request, change):
            raise PermissionDenied
        url = reverse("admin:memory_pendingchange_change", args=[change.pk])
        actor = self.actor(request)
        try:
            if "_approve" in request.POST:
                done = services.change_approve(actor=actor, change=change)
            else:
                form = RejectForm(request.POST)
                if not form.is_valid():
                    messages.error(request, "A rejection needs a reason.")
                    return HttpResponseRedirect(url)
                done = services.change_reject(
                    actor=actor, change=change, reason=form.cleaned_data["reason"]
                )
        except EngramError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(url)
        if done.status == PendingChange.Status.FAILED:
            messages.error(request, f"Approved, but it could not apply: {done.error}")
        else:
            messages.success(request, f"The change is {done.get_status_display().lower()}.")
        return HttpResponseRedirect(url)

    @admin.action(description="Approve (apply) the selected changes", permissions=["change"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[PendingChange]) -> None:
        self._decide_selected(request, self._chosen(request, queryset), approve=True)

    @admin.action(description="Reject the selected changes…", permissions=["change"])
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[PendingChange]
    ) -> HttpResponse | None:
        """One reason for all (a rejection needs one): asked on a page of its own, then each
        rejected."""
        chosen = self._chosen(request, queryset)
        if chosen is None:
            return None
        if not any(change.is_open for change in chosen):
            messages.warning(request, "None of the selected changes is pending: nothing to reject.")
            return None
        form = RejectForm(request.POST if "_reject" in request.POST else None)
        if "_reject" in request.POST and form.is_valid():
            self._decide_selected(
                request, chosen, approve=False, reason=form.cleaned_data["reason"]
            )
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Reject pending changes",
            "changes": chosen,
            "open_count": sum(change.is_open for change in chosen),
            "form": form,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/memory/pendingchange/reject.html", context)

    def _chosen(
        self, request: HttpRequest, queryset: QuerySet[PendingChange]
    ) -> list[PendingChange] | None:
        """The selected changes (at most ``MAX_BULK``, or None and a message), after reporting
        the selected ones that are no longer in the list as filtered (decided or deleted
        meanwhile, or outside the person's accounts: one message for all alike)."""
        chosen = list(queryset[: services.MAX_BULK + 1])
        if len(chosen) > services.MAX_BULK:
            messages.error(
                request,
                f"Decide at most {services.MAX_BULK} changes at a time: nothing was decided.",
            )
            return None
        if request.POST.get("select_across") != "1":
            missing = len(set(request.POST.getlist(ACTION_CHECKBOX_NAME))) - len(chosen)
            if missing > 0:
                messages.warning(
                    request,
                    f"Skipped {missing} selected {'change' if missing == 1 else 'changes'} "
                    "no longer in this list.",
                )
        return chosen

    def _decide_selected(
        self,
        request: HttpRequest,
        chosen: list[PendingChange] | None,
        *,
        approve: bool,
        reason: str = "",
    ) -> None:
        """Each change decided on its own through ``changes_decide`` (the reviewer as actor,
        audited); one that is no longer pending, expired or may not be decided is skipped and
        reported, one that could not apply is reported as failed, the others go on."""
        if not chosen:
            return
        try:
            decisions = services.changes_decide(
                actor=self.actor(request), changes=chosen, approve=approve, reason=reason
            )
        except EngramError as exc:
            if exc.status_code >= 500:
                raise
            messages.error(request, exc.message)
            return
        names = {change.pk: f"{change.kind} #{change.pk}" for change in chosen}
        decided: list[str] = []
        for decision in decisions:
            name = names[decision.change_id]
            if decision.code:
                messages.warning(request, f"Skipped {name}: {decision.error}")
            elif decision.status == PendingChange.Status.FAILED:
                messages.error(
                    request, f"{name}: approved, but it could not apply: {decision.error}"
                )
            else:
                decided.append(name)
        if decided:
            verb = "Approved" if approve else "Rejected"
            count = f"{len(decided)} {model_ngettext(self.opts, len(decided))}"
            messages.success(request, f"{verb} {count}: {', '.join(decided)}.")
