"""Export and import in the admin, for owners (docs/portability.md, "In the admin").

The accounts' action "Export" queues an export job per account; the jobs' list links an import
form (an account the person owns and an archive). Each job's row and page show its progress as
a bar; a succeeded export's page links its download, streamed to owners of that account only
(another account's job answers like a missing one). The jobs themselves are run by the worker
(``core.portability.jobs``), as for the API."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from core.actors import MANAGE_ACCOUNT
from core.admin_base import AccountScopedAdmin
from core.errors import EngramError, NotFound
from core.models import Account, PortabilityJob
from core.portability import jobs

Job = PortabilityJob


class ImportForm(forms.Form):
    account = forms.ModelChoiceField(queryset=Account.objects.none())
    archive = forms.FileField(help_text="An archive made by an export (.tar.gz).")

    def __init__(self, *args: Any, accounts: frozenset[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["account"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = Account.objects.filter(pk__in=accounts).order_by("name")


def progress_bar(job: Job) -> str:
    percent = round(job.progress * 100)
    return format_html(
        '<progress value="{}" max="1" title="{}%">{}%</progress> {}%',
        f"{job.progress:.3f}",
        percent,
        percent,
        percent,
    )


@admin.register(PortabilityJob)
class PortabilityJobAdmin(AccountScopedAdmin):
    """Read-only jobs; the import form and the download are views of their own."""

    view_roles = MANAGE_ACCOUNT
    change_list_template = "admin/core/portabilityjob/change_list.html"
    list_display = [
        "__str__",
        "account",
        "kind",
        "status",
        "progress_display",
        "actor",
        "download_link",
        "created_at",
        "finished_at",
    ]
    list_filter = ["kind", "status", "account"]
    list_select_related = ["account"]
    fields = readonly_fields = (
        "account",
        "kind",
        "status",
        "progress_display",
        "download_link",
        "error_code",
        "error",
        "error_details",
        "counts",
        "already_imported",
        "with_vectors",
        "agent_name",
        "size_bytes",
        "digest",
        "actor",
        "agent",
        "attempts",
        "created_at",
        "started_at",
        "finished_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="progress")
    def progress_display(self, obj: Job) -> str:
        return progress_bar(obj)

    @admin.display(description="archive")
    def download_link(self, obj: Job) -> str:
        if obj.kind != Job.Kind.EXPORT or obj.status != Job.Status.SUCCEEDED:
            return "-"
        url = reverse("admin:core_portabilityjob_download", args=[obj.pk])
        return format_html('<a href="{}">download</a>', url)

    def get_urls(self) -> list[Any]:
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="core_portabilityjob_import",
            ),
            path(
                "<path:object_id>/download/",
                self.admin_site.admin_view(self.download_view),
                name="core_portabilityjob_download",
            ),
            *super().get_urls(),
        ]

    def download_view(self, request: HttpRequest, object_id: str) -> FileResponse:
        try:
            job = jobs.export_download(self.actor(request), int(object_id))
        except (NotFound, ValueError) as exc:
            raise Http404("No such export.") from exc
        except EngramError as exc:
            raise Http404(exc.message) from exc
        return FileResponse(
            job.archive.open("rb"),
            as_attachment=True,
            filename=f"engram-export-{job.account.slug}-{job.pk}.tar.gz",
            content_type="application/gzip",
        )

    def import_view(self, request: HttpRequest) -> HttpResponse:
        accounts = self.accounts_for(request, MANAGE_ACCOUNT)
        if not accounts:
            raise Http404("No account to import into.")
        form = ImportForm(request.POST or None, request.FILES or None, accounts=accounts)
        if request.method == "POST" and form.is_valid():
            try:
                job = jobs.import_job_enqueue(
                    actor=self.actor(request),
                    upload=form.cleaned_data["archive"],
                    account_id=form.cleaned_data["account"].pk,
                )
            except EngramError as exc:
                form.add_error(None, f"{exc.message} [{exc.code}]")
            else:
                messages.success(request, f"Import job {job.pk} queued: its page shows progress.")
                return HttpResponseRedirect(
                    reverse("admin:core_portabilityjob_change", args=[job.pk])
                )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Import an archive into an account",
            "form": form,
        }
        return TemplateResponse(request, "admin/core/portabilityjob/import.html", context)


def export_accounts(
    modeladmin: Any, request: HttpRequest, queryset: QuerySet[Account]
) -> HttpResponseRedirect | None:
    """The accounts' action: one export job per account the person owns."""
    queued = []
    for account in queryset:
        try:
            queued.append(
                jobs.export_job_enqueue(actor=modeladmin.actor(request), account_id=account.pk)
            )
        except EngramError as exc:
            messages.error(request, f"{account}: {exc.message}")
    if not queued:
        return None
    messages.success(
        request,
        f"{len(queued)} export job(s) queued; each page shows its progress and, once done, "
        "the download.",
    )
    return HttpResponseRedirect(reverse("admin:core_portabilityjob_changelist"))


export_accounts.short_description = "Export (download an archive)"  # type: ignore[attr-defined]
