"""Export and import over the API (docs/portability.md, "Over the API"; docs/api.md).

``POST /api/v1/export`` and ``POST /api/v1/import`` queue a job (a Celery task) and answer 202
with its id, status, progress and status URL; ``GET /api/v1/export/{id}`` and
``GET /api/v1/import/{id}`` are the job's status (and, for a finished export, its download
URL); ``GET /api/v1/export/{id}/download`` streams the archive. Every operation needs a key with
the ``admin`` scope and acts on the key's own account: another account's job answers 404
``portability_job_not_found``, exactly like a missing one."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile
from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.errors import PayloadTooLarge, ValidationFailed
from core.models import PortabilityJob
from core.parsers import StrictJSONParser
from core.permissions import request_actor
from core.portability import jobs
from core.serializers import validated
from core.views import ApiView

Job = PortabilityJob


class JobError(serializers.Serializer):
    code = serializers.CharField(help_text="e.g. import_invalid, import_checksum_mismatch.")
    message = serializers.CharField()
    details = serializers.DictField(
        help_text="Machine-readable specifics: for a bad archive, ``file`` (inside the "
        "archive) and, when one line is at fault, ``line``."
    )


class JobOutput(serializers.Serializer):
    job_id = serializers.IntegerField(source="pk")
    kind = serializers.ChoiceField(choices=Job.Kind.choices)
    status = serializers.ChoiceField(
        choices=Job.Status.choices,
        help_text="queued, running, succeeded or failed. An import's data is visible once "
        "it is succeeded; its entries are searchable once indexing (after the commit) ends.",
    )
    progress = serializers.FloatField(
        help_text="0..1: the share of kinds written (export) or checked then loaded (import)."
    )
    status_url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()
    with_vectors = serializers.BooleanField()
    agent = serializers.CharField(
        source="agent_name", help_text="Export only: the one agent whose share it holds."
    )
    size_bytes = serializers.IntegerField(help_text="The archive's size, once there is one.")
    digest = serializers.CharField(help_text="SHA-256 of the archive's manifest, once known.")
    counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="Rows per kind, once it has succeeded."
    )
    already_imported = serializers.BooleanField(
        help_text="Import only: the archive had been imported into the account already, so "
        "nothing changed."
    )
    error = serializers.SerializerMethodField()
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def _url(self, name: str, job: Job) -> str:
        path = reverse(name, args=[job.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    def get_status_url(self, job: Job) -> str:
        name = "export-job" if job.kind == Job.Kind.EXPORT else "import-job"
        return self._url(f"v1:core:{name}", job)

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_download_url(self, job: Job) -> str | None:
        if job.kind != Job.Kind.EXPORT or job.status != Job.Status.SUCCEEDED:
            return None
        return self._url("v1:core:export-download", job)

    @extend_schema_field(JobError(allow_null=True))
    def get_error(self, job: Job) -> dict[str, Any] | None:
        if job.status != Job.Status.FAILED:
            return None
        return {
            "code": job.error_code or "internal_error",
            "message": job.error,
            "details": job.error_details or {},
        }


def _answer(request: Request, job: Job, code: int = status.HTTP_200_OK) -> Response:
    return Response(JobOutput(job, context={"request": request}).data, status=code)


class ExportApi(ApiView):
    """Export the caller's account (a key with the ``admin`` scope): a job run by a worker.
    The answer is 202 with the job's id, status, progress and status URL; the status gives the
    download URL once the job has succeeded. ``agent``: only that agent's share (404
    ``agent_not_found``); ``with_vectors``: carry embeddings (without them, an import embeds
    again). API key secrets are never exported."""

    class InputSerializer(strict.InputSerializer):
        with_vectors = serializers.BooleanField(default=False)
        agent = serializers.CharField(max_length=200, required=False, allow_blank=False)

    @extend_schema(
        operation_id="portability_export",
        request=InputSerializer,
        responses={202: JobOutput},
    )
    def post(self, request: Request) -> Response:
        data = validated(self.InputSerializer, request)
        job = jobs.export_job_enqueue(
            actor=request_actor(request),
            with_vectors=data["with_vectors"],
            agent_name=data.get("agent", ""),
        )
        return _answer(request, job, status.HTTP_202_ACCEPTED)


class ExportJobApi(ApiView):
    """An export job's status, progress, error and (once succeeded) download URL."""

    @extend_schema(operation_id="portability_export_retrieve", responses=JobOutput)
    def get(self, request: Request, job_id: int) -> Response:
        job = jobs.portability_job_get(request_actor(request), job_id, kind=Job.Kind.EXPORT)
        return _answer(request, job)


class ExportDownloadApi(ApiView):
    """The archive of an export that has succeeded, streamed (``application/gzip``); 409
    ``export_not_ready`` before. Only the account that made it can download it."""

    conflicts_on_read = True

    @extend_schema(
        operation_id="portability_export_download",
        responses={
            (200, "application/gzip"): OpenApiResponse(
                response=OpenApiTypes.BINARY, description="The archive (.tar.gz)."
            )
        },
    )
    def get(self, request: Request, job_id: int) -> FileResponse:
        job = jobs.export_download(request_actor(request), job_id)
        return FileResponse(
            job.archive.open("rb"),
            as_attachment=True,
            filename=f"engram-export-{job.pk}.tar.gz",
            content_type="application/gzip",
        )


class ImportJsonInput(strict.InputSerializer):
    # The longest text whose decoded size passes ImportApi's check (413 import_too_large).
    archive_base64 = strict.ServiceBoundedCharField(
        max_length=lambda: (4 * jobs.max_import_bytes() + 3) // 3,
        help_text="The archive (.tar.gz), base64-encoded.",
    )


class ImportMultipartInput(strict.InputSerializer):
    """``multipart/form-data``: the archive as the ``file`` part, and no other part."""

    strict_types = False  # a part is a file or a string, not a JSON value
    file = serializers.FileField()


class ImportApi(ApiView):
    """Import an archive made by an export into the caller's own account (a key with the
    ``admin`` scope): a ``file`` part of a multipart body, or JSON ``archive_base64``. 413
    ``import_too_large`` over the size limit. The archive is checked by the worker before
    anything is written: a bad one fails the job with the file and line at fault (``error``).
    All or nothing; importing the same archive again changes nothing. The data is visible
    once the job has succeeded; entries are searchable once indexing ends."""

    parser_classes = [StrictJSONParser, MultiPartParser]

    @extend_schema(
        operation_id="portability_import",
        request={
            "application/json": ImportJsonInput,
            "multipart/form-data": ImportMultipartInput,
        },
        responses={202: JobOutput},
    )
    def post(self, request: Request) -> Response:
        job = jobs.import_job_enqueue(actor=request_actor(request), upload=self._upload(request))
        return _answer(request, job, status.HTTP_202_ACCEPTED)

    def _upload(self, request: Request) -> UploadedFile:
        files = request.FILES.getlist("file") if hasattr(request, "FILES") else []
        if len(files) > 1:
            raise ValidationFailed("Send one archive.", code="import_one_file")
        if files:
            return validated(ImportMultipartInput, request)["file"]  # 400 on any other part
        data = validated(ImportJsonInput, request)
        encoded = data["archive_base64"]
        limit = jobs.max_import_bytes()
        if len(encoded) * 3 // 4 > limit:
            raise PayloadTooLarge(
                f"Archives are limited to {limit} bytes.",
                code="import_too_large",
                details={"limit": limit},
            )
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValidationFailed(
                "archive_base64 is not base64.", code="import_not_base64"
            ) from exc
        return SimpleUploadedFile("archive.tar.gz", raw, content_type="application/gzip")


class ImportJobApi(ApiView):
    """An import job's status, progress and error (a bad archive: its code, the file inside
    the archive and the line)."""

    @extend_schema(operation_id="portability_import_retrieve", responses=JobOutput)
    def get(self, request: Request, job_id: int) -> Response:
        job = jobs.portability_job_get(request_actor(request), job_id, kind=Job.Kind.IMPORT)
        return _answer(request, job)
