"""Cluster maintenance: ``POST /api/v1/memory/maintenance`` queues a run (a Celery job) and
answers 202 with its id and status URL; ``GET /api/v1/memory/maintenance/jobs/{id}`` is the
job's status, with its report's id once it has one; ``GET /api/v1/memory/maintenance/reports``
and ``.../reports/{id}`` list and show reports (docs/memory/maintenance.md, "Cluster maintenance";
docs/api.md). A key with the ``admin`` scope acts on the whole account; a ``write`` key on the
contexts its agent may write, and reads the jobs and reports of its own runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.pagination import CreatedCursorPagination, paginated_response
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView
from memory.maintenance.selectors import reports as selectors
from memory.maintenance.services import cluster_maintenance as services
from memory.maintenance.services import jobs
from memory.models import MaintenanceJob, MemoryMaintenanceReport

Report = MemoryMaintenanceReport


class ReportSummaryOutput(serializers.ModelSerializer[Report]):
    class Meta:
        model = Report
        fields = [
            "id",
            "trigger",
            "actor",
            "dry_run",
            "status",
            "short_circuit",
            "short_circuit_detail",
            "checks",
            "context_ids",
            "embedding_model",
            "rewrite_model",
            "entries_seen",
            "reembedded",
            "cluster_count",
            "kept_count",
            "replaced_count",
            "skipped_count",
            "timings_ms",
            "error",
            "undone_at",
            "created_at",
            "finished_at",
        ]

    context_ids = serializers.ListField(child=serializers.IntegerField())
    timings_ms = serializers.DictField(
        child=serializers.FloatField(), help_text="Milliseconds per stage, summed over contexts."
    )


class ReportOutput(ReportSummaryOutput):
    class Meta(ReportSummaryOutput.Meta):
        fields = [
            *ReportSummaryOutput.Meta.fields,
            "replaced",
            "fact_check",
            "params",
            "contexts",
            "clusters",
            "kept",
            "skipped",
        ]

    replaced = serializers.ListField(
        child=serializers.IntegerField(),
        source="replaced_ids",
        help_text="Entries absorbed (in a dry run: to be absorbed), now archived versions.",
    )
    fact_check = serializers.DictField(
        read_only=True,
        help_text="The fact check (docs/memory/maintenance.md): statements_checked and "
        "statements_carried (statements of absorbed entries; carried: added to the kept entry's "
        "text, each with its kept entry and the entry it came from), groups_refused "
        "(would_lose_facts: a rewrite that would drop a statement), stayed_current (their "
        "entries) and refused "
        "(each group's entries and the statements it would have lost).",
    )
    params = serializers.DictField(help_text="The clustering's parameters (seed included).")
    contexts = serializers.ListField(
        child=serializers.DictField(),
        help_text="Per context: entries seen, re-embedded, the reduction used, clusters, noise.",
    )
    clusters = serializers.ListField(
        child=serializers.DictField(),
        help_text="Per cluster: context_id, label, size, member entry ids, and its groups "
        "(kept, absorbed, similarities).",
    )
    kept = serializers.ListField(
        child=serializers.DictField(),
        help_text="Per group rewritten (or, in a dry run, to be): the kept entry, the absorbed "
        "ones, the method, the replacement, statements (each statement of each absorbed entry: "
        "entry_id, text, start, end, covered_by {entry_id, text} or null, carried), carried "
        "(the texts added to the kept entry), the payload applied and its result.",
    )
    skipped = serializers.ListField(
        child=serializers.DictField(),
        help_text="Entries left as they were (they stay current), with the reason "
        "(below_similarity, run_limit, cluster_changed, would_lose_facts with lost: the "
        "statements the rewrite would have dropped).",
    )


class MaintenanceQueuedOutput(serializers.Serializer):
    job_id = serializers.IntegerField()
    status_url = serializers.URLField(help_text="GET it for the job's status.")


class MaintenanceJobError(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class MaintenanceJobOutput(serializers.Serializer):
    job_id = serializers.IntegerField(source="pk")
    status = serializers.ChoiceField(choices=MaintenanceJob.Status.choices)
    report_id = serializers.IntegerField(
        allow_null=True,
        help_text="The run's report, once the job has ended (completed; failed, when the run "
        "had made one); null while queued or running.",
    )
    report_url = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    trigger = serializers.CharField()
    dry_run = serializers.BooleanField()
    context_ids = serializers.ListField(
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="The contexts it maintains; null: every unarchived context of the account.",
    )
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, job: MaintenanceJob) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(job)
        if job.status not in (MaintenanceJob.Status.COMPLETED, MaintenanceJob.Status.FAILED):
            data["report_id"] = None  # the report is being written: visible once it ends
            data["report_url"] = None
        return data

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_report_url(self, job: MaintenanceJob) -> str | None:
        if job.report_id is None:
            return None
        return _absolute(self.context, "v1:memory:memory-maintenance-report", job.report_id)

    @extend_schema_field(MaintenanceJobError(allow_null=True))
    def get_error(self, job: MaintenanceJob) -> dict[str, str] | None:
        if job.status != MaintenanceJob.Status.FAILED:
            return None
        return {"code": job.error_code or "internal_error", "message": job.error}


def _absolute(context: Mapping[str, Any], name: str, pk: int) -> str:
    path = reverse(name, args=[pk])
    request = context.get("request")
    return request.build_absolute_uri(path) if request is not None else path


class MaintenanceRunApi(ApiView):
    """Queue cluster maintenance for the caller's account (every unarchived context, or
    ``context_ids``); ``dry_run`` plans without changing anything. It runs in a worker, not in
    this request: the answer is 202 with the job's id and status URL, whose ``report_id`` names
    the report once the run has ended (its changes are visible then, not before). The caller's
    rights are checked now (403, 404 ``context_not_found``, 409 ``context_archived``); the same
    request while an identical one is queued or running answers that job. The schedule's
    short-circuits do not apply to a run asked for. A key with the ``admin`` scope maintains
    any context of the account; a ``write`` key the contexts its agent may write."""

    class InputSerializer(strict.InputSerializer):
        dry_run = serializers.BooleanField(default=False)
        context_ids = strict.IdListField(
            required=False,
            max_length=services.MAX_CONTEXT_IDS,
            help_text="Contexts to maintain (default: every unarchived context of the account); "
            "404 context_not_found for one the caller cannot read.",
        )

    @extend_schema(
        operation_id="memory_maintenance_run",
        request=InputSerializer,
        responses={202: MaintenanceQueuedOutput},
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        job = jobs.maintenance_job_enqueue(
            actor=request_actor(request),
            trigger=Report.Trigger.API,
            dry_run=data["dry_run"],
            context_ids=data.get("context_ids"),
        )
        url = _absolute({"request": request}, "v1:memory:memory-maintenance-job", job.pk)
        return Response({"job_id": job.pk, "status_url": url}, status=status.HTTP_202_ACCEPTED)


class MaintenanceJobApi(ApiView):
    """A maintenance job's status: ``queued``, ``running``, ``completed`` or ``failed`` (with
    ``error``), and its report's id once it has ended. Another account's job, or another
    agent's for a key without the ``admin`` scope, answers 404 like a missing one."""

    @extend_schema(operation_id="memory_maintenance_job_retrieve", responses=MaintenanceJobOutput)
    def get(self, request: Request, job_id: int) -> Response:
        job = jobs.maintenance_job_get(request_actor(request), job_id)
        return Response(MaintenanceJobOutput(job, context={"request": request}).data)


class MaintenanceReportListApi(ApiView):
    """The account's maintenance reports, newest first (without their clusters and plans:
    see the report itself); a key without the ``admin`` scope lists its own runs' reports."""

    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        status = serializers.ChoiceField(choices=Report.Status.choices, required=False)
        dry_run = serializers.BooleanField(required=False, allow_null=True, default=None)

    @extend_schema(
        operation_id="memory_maintenance_reports_list",
        parameters=[FilterSerializer],
        responses=ReportSummaryOutput(many=True),
    )
    def get(self, request: Request) -> Response:
        reports = selectors.reports_for(request_actor(request)).defer(
            "clusters", "kept", "skipped", "contexts", "params"
        )
        if "status" in self.filters:
            reports = reports.filter(status=self.filters["status"])
        if self.filters.get("dry_run") is not None:
            reports = reports.filter(dry_run=self.filters["dry_run"])
        return paginated_response(self, request, reports, ReportSummaryOutput)


class MaintenanceReportDetailApi(ApiView):
    """One maintenance report with its clusters, what was kept, replaced and skipped."""

    @extend_schema(operation_id="memory_maintenance_report_retrieve", responses=ReportOutput)
    def get(self, request: Request, report_id: int) -> Response:
        report = selectors.report_get(request_actor(request), report_id)
        return Response(ReportOutput(report).data)
