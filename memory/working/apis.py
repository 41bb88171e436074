"""Working memory API (Redis, per agent and session): ``/api/v1/memory/working/...``.

Names starting with ``_`` are operations, never keys: ``/working/{session_id}/_task-state``,
``/working/_inbox``. Every operation answers 503 ``memory_unavailable`` when Redis is down.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core import serializers as strict
from core.permissions import request_actor
from core.serializers import represent, validated
from core.views import ApiView
from memory.apis.common import MEMORY_UNAVAILABLE, WORKING_TTL, TtlField, ValueInput
from memory.working import selectors as working_selectors
from memory.working import services as working_services
from memory.working import store as wr
from memory.working.store import WorkingEntry


def _schema(operation_id: str, response: Any, request: Any = None, code: int = 200) -> Any:
    return extend_schema(
        operation_id=operation_id,
        request=request,
        responses={code: response, 503: MEMORY_UNAVAILABLE},
    )


class EntryOutput(serializers.Serializer):
    session_id = serializers.CharField()
    kind = serializers.ChoiceField(choices=wr.KINDS)
    key = serializers.CharField(help_text="The key, step or tool name; empty for the task state.")
    value = serializers.JSONField(allow_null=True)
    ttl = serializers.IntegerField(allow_null=True, help_text="Seconds left (rounded up).")
    expires_at = serializers.DateTimeField(allow_null=True)


def _entry(entry: WorkingEntry) -> dict[str, Any]:
    return represent(
        EntryOutput,
        {
            "session_id": entry.session_id,
            "kind": entry.kind,
            "key": entry.name,
            "value": entry.value,
            "ttl": entry.expiry.ttl,
            "expires_at": entry.expiry.expires_at,
        },
    )


class WorkingKeyApi(ApiView):
    """One key of a session's working memory: store (replace), retrieve, remove."""

    @_schema("memory_working_store", EntryOutput, ValueInput)
    def put(self, request: Request, session_id: str, key: str) -> Response:
        data = validated(ValueInput, request)
        entry = working_services.working_store(
            actor=request_actor(request),
            session_id=session_id,
            key=key,
            value=data["value"],
            ttl=data.get("ttl"),
        )
        return Response(_entry(entry))

    @_schema("memory_working_retrieve", EntryOutput)
    def get(self, request: Request, session_id: str, key: str) -> Response:
        entry = working_selectors.working_retrieve(
            actor=request_actor(request), session_id=session_id, key=key
        )
        return Response(_entry(entry))

    @_schema("memory_working_remove", None, code=204)
    def delete(self, request: Request, session_id: str, key: str) -> Response:
        working_services.working_remove(
            actor=request_actor(request), session_id=session_id, key=key
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkingExistsApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        key = serializers.CharField()
        exists = serializers.BooleanField()

    @_schema("memory_working_exists", OutputSerializer)
    def get(self, request: Request, session_id: str, key: str) -> Response:
        exists = working_selectors.working_exists(
            actor=request_actor(request), session_id=session_id, key=key
        )
        return Response(
            represent(
                self.OutputSerializer, {"session_id": session_id, "key": key, "exists": exists}
            )
        )


class IndexedEntryOutput(serializers.Serializer):
    key = serializers.CharField(
        help_text="The entry's name: a key, or _task_state, _step:<step>, _conversation, "
        "_tool:<tool>, _scratch_pad."
    )
    kind = serializers.ChoiceField(choices=wr.KINDS)
    ttl = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)


class WorkingSessionApi(ApiView):
    """Every live entry of a session, sorted by name, in one answer: a session holds at most
    WORKING_MEMORY_MAX_KEYS entries, so the list is complete (no pages). DELETE clears it."""

    class OutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        count = serializers.IntegerField()
        limit = serializers.IntegerField(help_text="WORKING_MEMORY_MAX_KEYS.")
        keys = IndexedEntryOutput(many=True)

    class ClearOutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        removed = serializers.IntegerField()

    @_schema("memory_working_keys", OutputSerializer)
    def get(self, request: Request, session_id: str) -> Response:
        entries = working_selectors.working_keys(
            actor=request_actor(request), session_id=session_id
        )
        keys = [
            {
                "key": e.name,
                "kind": e.kind,
                "ttl": e.expiry.ttl,
                "expires_at": e.expiry.expires_at,
            }
            for e in entries
        ]
        body = {
            "session_id": session_id,
            "count": len(keys),
            "limit": settings.WORKING_MEMORY_MAX_KEYS,
            "keys": keys,
        }
        return Response(represent(self.OutputSerializer, body))

    @_schema("memory_working_clear", ClearOutputSerializer)
    def delete(self, request: Request, session_id: str) -> Response:
        removed = working_services.working_clear(
            actor=request_actor(request), session_id=session_id
        )
        return Response(
            represent(self.ClearOutputSerializer, {"session_id": session_id, "removed": removed})
        )


class WorkingTaskStateApi(ApiView):
    """The session's task state (any JSON, usually an object)."""

    @_schema("memory_working_task_state_store", EntryOutput, ValueInput)
    def put(self, request: Request, session_id: str) -> Response:
        data = validated(ValueInput, request)
        entry = working_services.working_state_store(
            actor=request_actor(request),
            session_id=session_id,
            kind=wr.TASK_STATE,
            value=data["value"],
            ttl=data.get("ttl"),
        )
        return Response(_entry(entry))

    @_schema("memory_working_task_state_retrieve", EntryOutput)
    def get(self, request: Request, session_id: str) -> Response:
        entry = working_selectors.working_state_get(
            actor=request_actor(request), session_id=session_id, kind=wr.TASK_STATE
        )
        return Response(_entry(entry))


class WorkingStepApi(ApiView):
    """The intermediate result of one step of the task."""

    @_schema("memory_working_step_store", EntryOutput, ValueInput)
    def put(self, request: Request, session_id: str, step: str) -> Response:
        data = validated(ValueInput, request)
        entry = working_services.working_state_store(
            actor=request_actor(request),
            session_id=session_id,
            kind=wr.STEP,
            name=step,
            value=data["value"],
            ttl=data.get("ttl"),
        )
        return Response(_entry(entry))

    @_schema("memory_working_step_retrieve", EntryOutput)
    def get(self, request: Request, session_id: str, step: str) -> Response:
        entry = working_selectors.working_state_get(
            actor=request_actor(request), session_id=session_id, kind=wr.STEP, name=step
        )
        return Response(_entry(entry))


class WorkingToolStateApi(ApiView):
    """The state of one tool in the session."""

    @_schema("memory_working_tool_state_store", EntryOutput, ValueInput)
    def put(self, request: Request, session_id: str, tool: str) -> Response:
        data = validated(ValueInput, request)
        entry = working_services.working_state_store(
            actor=request_actor(request),
            session_id=session_id,
            kind=wr.TOOL_STATE,
            name=tool,
            value=data["value"],
            ttl=data.get("ttl"),
        )
        return Response(_entry(entry))

    @_schema("memory_working_tool_state_retrieve", EntryOutput)
    def get(self, request: Request, session_id: str, tool: str) -> Response:
        entry = working_selectors.working_state_get(
            actor=request_actor(request), session_id=session_id, kind=wr.TOOL_STATE, name=tool
        )
        return Response(_entry(entry))


class WorkingConversationOutput(serializers.Serializer):
    session_id = serializers.CharField()
    messages = serializers.ListField(child=serializers.JSONField(allow_null=True))
    length = serializers.IntegerField()
    ttl = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)


def _conversation(entry: WorkingEntry, *, with_messages: bool = True) -> dict[str, Any]:
    body = {
        "session_id": entry.session_id,
        "length": entry.size or 0,
        "ttl": entry.expiry.ttl,
        "expires_at": entry.expiry.expires_at,
    }
    if with_messages:
        body["messages"] = entry.value
    return body


class WorkingConversationApi(ApiView):
    """The conversation context: the latest WORKING_MEMORY_CONVERSATION_MAX_MESSAGES messages,
    oldest first. PUT replaces it (an empty list removes it)."""

    class InputSerializer(strict.InputSerializer):
        messages = serializers.ListField(
            child=serializers.JSONField(allow_null=True), max_length=10_000, allow_empty=True
        )
        ttl = TtlField(WORKING_TTL, required=False)

    @_schema("memory_working_conversation_store", WorkingConversationOutput, InputSerializer)
    def put(self, request: Request, session_id: str) -> Response:
        data = validated(self.InputSerializer, request)
        entry = working_services.working_conversation_store(
            actor=request_actor(request),
            session_id=session_id,
            messages=data["messages"],
            ttl=data.get("ttl"),
        )
        return Response(represent(WorkingConversationOutput, _conversation(entry)))

    @_schema("memory_working_conversation_retrieve", WorkingConversationOutput)
    def get(self, request: Request, session_id: str) -> Response:
        entry = working_selectors.working_conversation_get(
            actor=request_actor(request), session_id=session_id
        )
        return Response(represent(WorkingConversationOutput, _conversation(entry)))


class WorkingConversationAppendApi(ApiView):
    """Append one message; beyond the cap the oldest are dropped; the TTL starts again."""

    class InputSerializer(strict.InputSerializer):
        message = serializers.JSONField(allow_null=True, help_text="Any JSON value.")
        ttl = TtlField(WORKING_TTL, required=False)

    class OutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        length = serializers.IntegerField(help_text="Messages kept after the append.")
        ttl = serializers.IntegerField(allow_null=True)
        expires_at = serializers.DateTimeField(allow_null=True)

    @_schema("memory_working_conversation_append", OutputSerializer, InputSerializer)
    def post(self, request: Request, session_id: str) -> Response:
        data = validated(self.InputSerializer, request)
        entry = working_services.working_conversation_append(
            actor=request_actor(request),
            session_id=session_id,
            message=data["message"],
            ttl=data.get("ttl"),
        )
        return Response(represent(self.OutputSerializer, _conversation(entry, with_messages=False)))


class ScratchPadInput(strict.InputSerializer):
    content = strict.ServiceBoundedCharField(
        max_length=lambda: int(settings.WORKING_MEMORY_MAX_VALUE_BYTES),
        allow_blank=True,
        trim_whitespace=False,
        help_text="At most WORKING_MEMORY_MAX_VALUE_BYTES bytes in UTF-8 (413 value_too_large).",
    )
    ttl = TtlField(WORKING_TTL, required=False)


class ScratchPadOutput(serializers.Serializer):
    session_id = serializers.CharField()
    content = serializers.CharField(allow_blank=True, trim_whitespace=False)
    size_bytes = serializers.IntegerField()
    ttl = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)


def _pad(entry: WorkingEntry, content: str | None = None) -> dict[str, Any]:
    return represent(
        ScratchPadOutput,
        {
            "session_id": entry.session_id,
            "content": entry.value if content is None else content,
            "size_bytes": entry.size or 0,
            "ttl": entry.expiry.ttl,
            "expires_at": entry.expiry.expires_at,
        },
    )


class WorkingScratchPadApi(ApiView):
    """The session's scratch pad: free text (none stored reads as empty)."""

    @_schema("memory_working_scratch_pad_store", ScratchPadOutput, ScratchPadInput)
    def put(self, request: Request, session_id: str) -> Response:
        data = validated(ScratchPadInput, request)
        entry = working_services.working_scratch_pad_store(
            actor=request_actor(request),
            session_id=session_id,
            content=data["content"],
            ttl=data.get("ttl"),
        )
        return Response(_pad(entry))

    @_schema("memory_working_scratch_pad_retrieve", ScratchPadOutput)
    def get(self, request: Request, session_id: str) -> Response:
        entry = working_selectors.working_scratch_pad_get(
            actor=request_actor(request), session_id=session_id
        )
        return Response(_pad(entry))


class WorkingScratchPadAppendApi(ApiView):
    """Append text as given (include your own newline); the answer's ``content`` is what was
    appended, ``size_bytes`` the pad's size after it."""

    @_schema("memory_working_scratch_pad_append", ScratchPadOutput, ScratchPadInput)
    def post(self, request: Request, session_id: str) -> Response:
        data = validated(ScratchPadInput, request)
        entry = working_services.working_scratch_pad_append(
            actor=request_actor(request),
            session_id=session_id,
            content=data["content"],
            ttl=data.get("ttl"),
        )
        return Response(_pad(entry, data["content"]))


class SharedOutput(serializers.Serializer):
    agent_id = serializers.IntegerField()
    key = serializers.CharField()
    ttl = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)


class WorkingShareApi(ApiView):
    """Share a value with another agent of the account (``agent_id``): it lands in that
    agent's inbox under ``key`` (replacing what this agent shared there before) until its TTL
    ends. ``agent_id`` in the answer is the recipient."""

    @_schema("memory_working_share", SharedOutput, ValueInput)
    def put(self, request: Request, agent_id: int, key: str) -> Response:
        data = validated(ValueInput, request)
        entry = working_services.working_share(
            actor=request_actor(request),
            agent_id=agent_id,
            key=key,
            value=data["value"],
            ttl=data.get("ttl"),
        )
        body = {
            "agent_id": agent_id,
            "key": key,
            "ttl": entry.expiry.ttl,
            "expires_at": entry.expiry.expires_at,
        }
        return Response(represent(SharedOutput, body))


class WorkingInboxApi(ApiView):
    """What other agents shared with the caller and is still live (``agent_id``: the sender),
    without values; at most WORKING_MEMORY_MAX_KEYS entries, all in one answer."""

    class OutputSerializer(serializers.Serializer):
        count = serializers.IntegerField()
        items = SharedOutput(many=True)

    @_schema("memory_working_inbox_list", OutputSerializer)
    def get(self, request: Request) -> Response:
        items = working_selectors.working_inbox_list(actor=request_actor(request))
        body = {
            "count": len(items),
            "items": [
                {
                    "agent_id": i.agent_id,
                    "key": i.key,
                    "ttl": i.expiry.ttl,
                    "expires_at": i.expiry.expires_at,
                }
                for i in items
            ],
        }
        return Response(represent(self.OutputSerializer, body))


class WorkingInboxEntryApi(ApiView):
    """Read what agent ``agent_id`` shared with the caller under ``key``."""

    class OutputSerializer(SharedOutput):
        value = serializers.JSONField(allow_null=True)

    @_schema("memory_working_inbox_retrieve", OutputSerializer)
    def get(self, request: Request, agent_id: int, key: str) -> Response:
        entry = working_selectors.working_inbox_retrieve(
            actor=request_actor(request), agent_id=agent_id, key=key
        )
        body = {
            "agent_id": entry.agent_id,
            "key": entry.key,
            "value": entry.value,
            "ttl": entry.expiry.ttl,
            "expires_at": entry.expiry.expires_at,
        }
        return Response(represent(self.OutputSerializer, body))


class WorkingPersistApi(ApiView):
    """Copy the session's live working memory to PostgreSQL (replacing the previous copy);
    404 ``working_memory_session_not_found`` when it holds nothing."""

    class OutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        entries = serializers.IntegerField()
        persisted_at = serializers.DateTimeField()

    @_schema("memory_working_persist", OutputSerializer)
    def post(self, request: Request, session_id: str) -> Response:
        snapshot = working_services.working_persist(
            actor=request_actor(request), session_id=session_id
        )
        body = {
            "session_id": session_id,
            "entries": snapshot.entry_count,
            "persisted_at": snapshot.updated_at,
        }
        return Response(represent(self.OutputSerializer, body))


class WorkingLoadApi(ApiView):
    """Write the persisted copy back (same-named entries are replaced, others stay). Each
    entry gets ``ttl`` if given, else the TTL it had left when persisted (at least 1 s)."""

    class InputSerializer(strict.InputSerializer):
        ttl = TtlField(WORKING_TTL, required=False)

    class OutputSerializer(serializers.Serializer):
        session_id = serializers.CharField()
        loaded = serializers.IntegerField()
        skipped = serializers.IntegerField(help_text="Entries past WORKING_MEMORY_MAX_KEYS.")

    @_schema("memory_working_load", OutputSerializer, InputSerializer)
    def post(self, request: Request, session_id: str) -> Response:
        data = validated(self.InputSerializer, request)
        counts = working_services.working_load(
            actor=request_actor(request), session_id=session_id, ttl=data.get("ttl")
        )
        return Response(represent(self.OutputSerializer, {"session_id": session_id, **counts}))
