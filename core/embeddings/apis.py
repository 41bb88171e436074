"""Embedding-model migration over the API (docs/portability.md, "Changing the embedding
model"): ``GET /api/v1/embeddings`` is the status; ``POST /api/v1/embeddings/start``,
``.../cutover``, ``.../rollback`` and ``.../drop`` act. The generations are the installation's,
not an account's: every operation needs a key with the ``admin`` scope, and the answer's counts
are of the caller's own account's units only."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.embeddings import generations
from core.permissions import request_actor
from core.serializers import validated
from core.views import ApiView


class GenerationOutput(serializers.Serializer):
    id = serializers.IntegerField()
    role = serializers.ChoiceField(choices=generations.Role.choices)
    status = serializers.ChoiceField(
        choices=generations.Status.choices,
        help_text="building (the job embeds every unit), ready or failed (error_code, error).",
    )
    provider = serializers.CharField()
    model = serializers.CharField()
    model_id = serializers.CharField(help_text="The id stored beside each of its vectors.")
    dimensions = serializers.IntegerField()
    auto_cutover = serializers.BooleanField()
    configured = serializers.BooleanField(
        help_text="A configured provider (EMBEDDING_* or EMBEDDING_NEXT_*) serves this model: "
        "writes keep it up to date, and a rollback or cut-over to it can embed what it misses."
    )
    error_code = serializers.CharField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    built_at = serializers.DateTimeField(allow_null=True)
    cutover_at = serializers.DateTimeField(allow_null=True)


class SpaceOutput(serializers.Serializer):
    space = serializers.CharField(help_text="chunks, memory_entries, graph_nodes, skills, ...")
    description = serializers.CharField(help_text="What the space's units are.")
    units = serializers.IntegerField(help_text="Units with a current vector.")
    current = serializers.IntegerField(help_text="Of them, embedded by the current model.")
    stale = serializers.IntegerField(
        help_text="Of them, still carrying another model's vector (the rot report's count)."
    )
    other = serializers.IntegerField(
        required=False, help_text="Embedded by the next (or previous) generation's model."
    )
    missing = serializers.IntegerField(
        required=False, help_text="Not embedded by the next (or previous) generation's yet."
    )


class StatusOutput(serializers.Serializer):
    current = GenerationOutput(allow_null=True)
    next = GenerationOutput(allow_null=True)
    previous = GenerationOutput(allow_null=True)
    next_configured = serializers.DictField(
        allow_null=True, help_text="The model EMBEDDING_NEXT_* configures, if any."
    )
    progress = serializers.FloatField(
        help_text="0..1: the share of units the next (or previous) generation holds."
    )
    spaces = SpaceOutput(many=True)


def _status(request: Request, code: int = status.HTTP_200_OK) -> Response:
    """The status, with the counts of the caller's own account's units."""
    found = generations.generation_status(account_id=request_actor(request).account_id)
    return Response(StatusOutput(found).data, status=code)


class _OperatorApi(ApiView):
    required_scope = "admin"  # reads too: the installation's models are an operator's matter


class EmbeddingsStatusApi(_OperatorApi):
    """The embedding generations and, per embedded space, how many units each one holds."""

    @extend_schema(operation_id="embeddings_status", responses=StatusOutput)
    def get(self, request: Request) -> Response:
        return _status(request)


class EmbeddingsStartApi(_OperatorApi):
    """Start (or resume) the migration to the model EMBEDDING_NEXT_* configures: 202, the
    build running as a job (``next.status`` building, then ready; ``progress``). Searches
    keep the current generation until the cut-over, automatic when the build completes
    unless ``auto_cutover`` is false. 409: ``next_model_not_configured``,
    ``next_model_is_current``, ``previous_generation_kept``, ``migration_in_progress``,
    ``generation_busy``."""

    class InputSerializer(strict.InputSerializer):
        auto_cutover = serializers.BooleanField(default=True)

    @extend_schema(
        operation_id="embeddings_start", request=InputSerializer, responses={202: StatusOutput}
    )
    def post(self, request: Request) -> Response:
        data: dict[str, Any] = validated(self.InputSerializer, request)
        generations.generation_start(auto_cutover=data["auto_cutover"])
        return _status(request, status.HTTP_202_ACCEPTED)


class EmbeddingsCutoverApi(_OperatorApi):
    """Cut over to the next generation now (built: 409 ``generation_not_ready`` before;
    ``no_generation_to_cut_over``). The current one is kept as previous for a rollback."""

    @extend_schema(operation_id="embeddings_cutover", request=None, responses=StatusOutput)
    def post(self, request: Request) -> Response:
        generations.generation_cutover()
        return _status(request)


class EmbeddingsRollbackApi(_OperatorApi):
    """Make the previous generation current again (409 ``no_previous_generation``)."""

    @extend_schema(operation_id="embeddings_rollback", request=None, responses=StatusOutput)
    def post(self, request: Request) -> Response:
        generations.generation_rollback()
        return _status(request)


class EmbeddingsDropApi(_OperatorApi):
    """Drop the previous generation (no rollback after this), or abandon a next one still
    building. 404 ``no_generation_to_drop``."""

    @extend_schema(operation_id="embeddings_drop", request=None, responses=StatusOutput)
    def post(self, request: Request) -> Response:
        generations.generation_drop()
        return _status(request)
