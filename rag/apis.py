"""RAG HTTP API for knowledge bases and documents: one view per operation, thin over services
and selectors. Search, query and analytics are ``rag.search_apis``."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.conf import settings
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.errors import ValidationFailed
from core.pagination import CreatedCursorPagination, paginated_response
from core.parsers import StrictJSONParser
from core.permissions import request_actor
from core.views import ApiView
from rag import selectors, services
from rag.models import Document, KnowledgeBase

# --- knowledge bases -----------------------------------------------------------------------------


class KnowledgeBaseOutput(serializers.ModelSerializer[KnowledgeBase]):
    class Meta:
        model = KnowledgeBase
        fields = [
            "id",
            "name",
            "description",
            "embedding_provider",
            "embedding_model",
            "chunking_strategy",
            "chunk_size",
            "chunk_overlap",
            "status",
            "status_message",
            "chunk_count",
            "created_at",
            "updated_at",
        ]


class KnowledgeBaseListCreateApi(ApiView):
    pagination_class = CreatedCursorPagination

    class InputSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=200)
        description = serializers.CharField(
            max_length=10_000, required=False, default="", allow_blank=True
        )
        chunking_strategy = serializers.ChoiceField(
            choices=KnowledgeBase.Chunking.choices, default=KnowledgeBase.Chunking.MARKDOWN
        )
        chunk_size = serializers.IntegerField(default=256, min_value=32, max_value=8192)
        chunk_overlap = serializers.IntegerField(default=32, min_value=0, max_value=8191)

    @extend_schema(responses=KnowledgeBaseOutput(many=True), operation_id="rag_kb_list")
    def get(self, request: Request) -> Response:
        kbs = selectors.knowledge_base_list(actor=request_actor(request))
        return paginated_response(self, request, kbs, KnowledgeBaseOutput)

    @extend_schema(
        request=InputSerializer, responses={201: KnowledgeBaseOutput}, operation_id="rag_kb_create"
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        kb = services.knowledge_base_create(actor=request_actor(request), **data.validated_data)
        return Response(KnowledgeBaseOutput(kb).data, status=status.HTTP_201_CREATED)


class KnowledgeBaseDetailApi(ApiView):
    class UpdateSerializer(strict.InputSerializer):
        name = serializers.CharField(max_length=200, required=False)
        description = serializers.CharField(max_length=10_000, required=False, allow_blank=True)
        chunking_strategy = serializers.ChoiceField(
            choices=KnowledgeBase.Chunking.choices, required=False
        )
        chunk_size = serializers.IntegerField(min_value=32, max_value=8192, required=False)
        chunk_overlap = serializers.IntegerField(min_value=0, max_value=8191, required=False)

    @extend_schema(responses=KnowledgeBaseOutput, operation_id="rag_kb_retrieve")
    def get(self, request: Request, kb_id: int) -> Response:
        kb = selectors.knowledge_base_get(actor=request_actor(request), kb_id=kb_id)
        return Response(KnowledgeBaseOutput(kb).data)

    @extend_schema(
        request=UpdateSerializer, responses=KnowledgeBaseOutput, operation_id="rag_kb_update"
    )
    def patch(self, request: Request, kb_id: int) -> Response:
        kb = selectors.knowledge_base_get(actor=request_actor(request), kb_id=kb_id)
        data = self.UpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(
            KnowledgeBaseOutput(
                services.knowledge_base_update(
                    actor=request_actor(request), kb=kb, **data.validated_data
                )
            ).data
        )

    @extend_schema(responses={204: None}, operation_id="rag_kb_delete")
    def delete(self, request: Request, kb_id: int) -> Response:
        actor = request_actor(request)
        kb = selectors.knowledge_base_get(actor=actor, kb_id=kb_id)
        services.knowledge_base_delete(actor=actor, kb=kb)
        return Response(status=status.HTTP_204_NO_CONTENT)


class KnowledgeBaseStatusApi(ApiView):
    class InputSerializer(strict.InputSerializer):
        status = serializers.ChoiceField(choices=KnowledgeBase.Status.choices)
        message = serializers.CharField(
            max_length=2000, required=False, default="", allow_blank=True
        )

    @extend_schema(
        request=InputSerializer, responses=KnowledgeBaseOutput, operation_id="rag_kb_status"
    )
    def post(self, request: Request, kb_id: int) -> Response:
        actor = request_actor(request)
        kb = selectors.knowledge_base_get(actor=actor, kb_id=kb_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        kb = services.knowledge_base_transition(
            actor=actor,
            kb=kb,
            to=data.validated_data["status"],
            message=data.validated_data["message"],
        )
        return Response(KnowledgeBaseOutput(kb).data)


# --- documents -----------------------------------------------------------------------------------


class DocumentOutput(serializers.ModelSerializer[Document]):
    progress = serializers.FloatField(read_only=True)

    class Meta:
        model = Document
        fields = [
            "id",
            "knowledge_base_id",
            "title",
            "source",
            "content_type",
            "checksum",
            "size_bytes",
            "doc_type",
            "tags",
            "lifecycle_state",
            "source_path",
            "document_date",
            "metadata",
            "status",
            "error",
            "chunks_total",
            "chunks_embedded",
            "progress",
            "token_count",
            "indexed_model",
            "indexed_at",
            "graph_indexed_at",
            "created_at",
            "updated_at",
        ]


def _text_limit() -> int:
    return int(settings.RAG_MAX_EXTRACTED_CHARS)


def _base64_limit() -> int:
    return -(-int(settings.RAG_MAX_UPLOAD_BYTES) // 3) * 4


def text_field(**kwargs: Any) -> strict.ServiceBoundedCharField:
    """A document's text: at most RAG_MAX_EXTRACTED_CHARS characters (413
    ``document_too_large``, from the service)."""
    return strict.ServiceBoundedCharField(
        max_length=_text_limit, allow_blank=True, trim_whitespace=False, **kwargs
    )


def base64_field(**kwargs: Any) -> strict.ServiceBoundedCharField:
    """A file in base64: at most RAG_MAX_UPLOAD_BYTES bytes decoded (413 ``upload_too_large``,
    from the service)."""
    return strict.ServiceBoundedCharField(max_length=_base64_limit, **kwargs)


class DocumentInput(strict.InputSerializer):
    """One document as JSON: ``text`` or base64 ``content_base64`` (with a ``filename``)."""

    title = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)
    text = text_field(required=False)
    content_base64 = base64_field(required=False)
    filename = serializers.CharField(max_length=500, required=False, allow_blank=True)
    content_type = serializers.CharField(max_length=100, required=False, allow_blank=True)
    source = serializers.CharField(  # type: ignore[assignment]  # a field named "source"
        max_length=1000, required=False, default="", allow_blank=True
    )
    doc_type = serializers.CharField(max_length=100, required=False, default="", allow_blank=True)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, default=list, max_length=100
    )
    lifecycle_state = serializers.CharField(
        max_length=50, required=False, default="", allow_blank=True
    )
    source_path = serializers.CharField(
        max_length=1000, required=False, default="", allow_blank=True
    )
    document_date = serializers.DateField(required=False, allow_null=True, default=None)
    metadata = strict.MetadataField(required=False, default=dict)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("text" in attrs) == ("content_base64" in attrs):
            raise serializers.ValidationError("Give exactly one of text or content_base64.")
        return attrs


def document_upload(data: dict[str, Any]) -> dict[str, Any]:
    """``services.document_create``'s arguments for a validated ``DocumentInput``."""
    if "text" in data:
        raw = data["text"].encode("utf-8")
        content_type = data.get("content_type") or "text/plain"
    else:
        try:
            raw = base64.b64decode(data["content_base64"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValidationFailed(
                "content_base64 is not valid base64.", code="invalid_base64"
            ) from exc
        content_type = data.get("content_type") or None
    return {
        "data": raw,
        "filename": data.get("filename") or None,
        "content_type": content_type,
        "title": data["title"],
        "source": data["source"],
        "metadata": services.DocumentMetadata(
            doc_type=data["doc_type"],
            tags=tuple(data["tags"]),
            lifecycle_state=data["lifecycle_state"],
            source_path=data["source_path"],
            document_date=data["document_date"],
            extra=data["metadata"],
        ),
    }


class DocumentTextInput(DocumentInput):
    """A document given as text (the schema's view of DocumentInput)."""

    text = text_field()
    content_base64 = None  # type: ignore[assignment]


class DocumentBase64Input(DocumentInput):
    """A document given as base64 bytes (the schema's view of DocumentInput)."""

    content_base64 = base64_field()
    text = None  # type: ignore[assignment]


class DocumentBatchInput(strict.InputSerializer):
    # ListSerializer takes max_length (DRF 3.15); the stubs do not know it.
    documents = DocumentInput(many=True, allow_empty=False, max_length=1000)  # type: ignore[call-arg]


class DocumentMultipartInput(serializers.Serializer):
    """``multipart/form-data``: one or more ``file`` parts; the metadata applies to each."""

    # More files are 413 request_too_large (Django's DATA_UPLOAD_MAX_NUMBER_FILES).
    file = serializers.ListField(
        child=serializers.FileField(), max_length=settings.DATA_UPLOAD_MAX_NUMBER_FILES
    )
    title = serializers.CharField(max_length=500, required=False)
    source = serializers.CharField(max_length=1000, required=False)  # type: ignore[assignment]
    doc_type = serializers.CharField(max_length=100, required=False)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=100), required=False, max_length=100
    )
    lifecycle_state = serializers.CharField(max_length=50, required=False)
    source_path = serializers.CharField(max_length=1000, required=False)
    document_date = serializers.DateField(required=False)


class DocumentListCreateApi(ApiView):
    """List a knowledge base's documents, or upload: JSON (one document, answered with the
    document; or ``{"documents": [...]}``, answered with the list) or multipart files (``file``,
    repeatable; metadata fields apply to every file; answered with the list)."""

    parser_classes = [StrictJSONParser, MultiPartParser]
    pagination_class = CreatedCursorPagination

    class FilterSerializer(strict.FilterSerializer):
        status = serializers.ChoiceField(choices=Document.Status.choices, required=False)

    @extend_schema(
        parameters=[FilterSerializer],
        responses=DocumentOutput(many=True),
        operation_id="rag_documents_list",
    )
    def get(self, request: Request, kb_id: int) -> Response:
        actor = request_actor(request)
        kb = selectors.knowledge_base_get(actor=actor, kb_id=kb_id)
        documents = selectors.document_list(
            actor=actor, kb_id=kb.pk, status=self.filters.get("status")
        )
        return paginated_response(self, request, documents, DocumentOutput)

    @extend_schema(
        request={
            "application/json": PolymorphicProxySerializer(
                component_name="DocumentUpload",
                serializers=[DocumentTextInput, DocumentBase64Input, DocumentBatchInput],
                resource_type_field_name=None,
            ),
            "multipart/form-data": DocumentMultipartInput,
        },
        responses={
            201: PolymorphicProxySerializer(
                component_name="DocumentsCreated",
                serializers=[DocumentOutput, DocumentOutput(many=True)],
                resource_type_field_name=None,
                many=False,
            )
        },
        operation_id="rag_documents_create",
    )
    def post(self, request: Request, kb_id: int) -> Response:
        actor = request_actor(request)
        kb = selectors.knowledge_base_get(actor=actor, kb_id=kb_id)
        uploads, many = self._uploads(request)
        # All or nothing: one bad file in a batch stores none of them.
        if len(uploads) == 1:
            documents = [services.document_create(actor=actor, kb=kb, **uploads[0])]
        else:
            documents = services.documents_create_batch(actor=actor, kb=kb, uploads=uploads)
        body = DocumentOutput(documents, many=True).data
        return Response(body if many else body[0], status=status.HTTP_201_CREATED)

    def _uploads(self, request: Request) -> tuple[list[dict[str, Any]], bool]:
        """The uploads in the body, and whether the caller sent a list (answered with one)."""
        files = request.FILES.getlist("file") if hasattr(request, "FILES") else []
        if files:
            form: Any = request.data  # a QueryDict for multipart bodies
            fields = {
                k: form.getlist(k) if k == "tags" else form.get(k) for k in form if k != "file"
            }
            meta = DocumentInput(data={**fields, "text": ""}, context={"strict_types": False})
            meta.is_valid(raise_exception=True)
            base = document_upload(meta.validated_data)
            uploads = [
                {
                    **base,
                    "data": f.read(),
                    "filename": f.name,
                    "content_type": f.content_type
                    if f.content_type not in ("application/octet-stream", None)
                    else None,
                    "title": base["title"] if len(files) == 1 else "",
                }
                for f in files
            ]
            return uploads, len(files) > 1
        if not isinstance(request.data, dict):
            raise ValidationFailed(
                'Send one document, {"documents": [...]}, or multipart files.',
                code="invalid_type",
            )
        if "documents" in request.data:
            batch = DocumentBatchInput(data=request.data)
            batch.is_valid(raise_exception=True)
            return [document_upload(item) for item in batch.validated_data["documents"]], True
        single = DocumentInput(data=request.data)
        single.is_valid(raise_exception=True)
        return [document_upload(single.validated_data)], False


class DocumentDetailApi(ApiView):
    @extend_schema(responses=DocumentOutput, operation_id="rag_document_retrieve")
    def get(self, request: Request, document_id: int) -> Response:
        document = selectors.document_get(actor=request_actor(request), document_id=document_id)
        return Response(DocumentOutput(document).data)

    @extend_schema(responses={204: None}, operation_id="rag_document_delete")
    def delete(self, request: Request, document_id: int) -> Response:
        actor = request_actor(request)
        document = selectors.document_get(actor=actor, document_id=document_id)
        services.document_delete(actor=actor, document=document)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentReprocessApi(ApiView):
    """Queue a document again; processing continues in the background (202)."""

    class InputSerializer(strict.InputSerializer):
        force = serializers.BooleanField(default=False, help_text="Re-embed even if unchanged.")

    @extend_schema(
        request=InputSerializer,
        responses={202: DocumentOutput},
        operation_id="rag_document_reprocess",
    )
    def post(self, request: Request, document_id: int) -> Response:
        actor = request_actor(request)
        document = selectors.document_get(actor=actor, document_id=document_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        document = services.document_reprocess(
            actor=actor, document=document, force=data.validated_data["force"]
        )
        return Response(DocumentOutput(document).data, status=status.HTTP_202_ACCEPTED)
