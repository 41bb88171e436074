"""Serializers and schema pieces the memory tiers' APIs share."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse
from rest_framework.request import Request

from core import serializers as strict
from core.schema import ErrorResponse
from core.views import ApiView
from memory import names

TTL_HELP = "Seconds to live: 1 to the tier's maximum (400 invalid_ttl otherwise)."

# The tiers' bounds, as the stores check them (memory.working.store, memory.short_term.services).
WORKING_TTL = "WORKING_MEMORY_MAX_TTL"
SHORT_TERM_TTL = "SHORT_TERM_MAX_TTL"
WORKING_VALUE = "WORKING_MEMORY_MAX_VALUE_BYTES"
SHORT_TERM_VALUE = "SHORT_TERM_MAX_VALUE_BYTES"


def _largest(*setting_names: str) -> Any:
    return lambda: max(int(getattr(settings, name)) for name in setting_names)


class TtlField(strict.ServiceBoundedIntegerField):
    """Seconds to live, 1 to the largest maximum of the tiers named (the settings'); each
    tier's store refuses more with 400 ``invalid_ttl``."""

    def __init__(self, *tiers: str, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", TTL_HELP)
        super().__init__(min_value=1, max_value=_largest(*tiers), **kwargs)


class BoundedValueField(strict.ServiceBoundedJSONField):
    """Any JSON value, as large as the tiers named take (413 ``value_too_large`` beyond)."""

    def __init__(self, *tiers: str, **kwargs: Any) -> None:
        super().__init__(max_bytes=_largest(*tiers), **kwargs)


def session_id_field(**kwargs: Any) -> strict.ServiceBoundedCharField:
    """A session id (400 ``invalid_session_id`` beyond ``names.SESSION_ID``)."""
    return strict.ServiceBoundedCharField(max_length=names.MAX_SESSION_ID_CHARS, **kwargs)


def key_field(**kwargs: Any) -> strict.ServiceBoundedCharField:
    """A memory key (400 ``invalid_key`` beyond ``names.KEY``)."""
    return strict.ServiceBoundedCharField(max_length=names.MAX_KEY_CHARS, **kwargs)


def run_id_field(**kwargs: Any) -> strict.ServiceBoundedCharField:
    """A workflow run id (400 ``invalid_run_id`` beyond ``names.RUN_ID``)."""
    return strict.ServiceBoundedCharField(max_length=names.MAX_RUN_ID_CHARS, **kwargs)


def path_field(**kwargs: Any) -> strict.ServiceBoundedCharField:
    """A pool's dot path (400 ``invalid_path`` beyond ``names.parse_path``'s rules)."""
    return strict.ServiceBoundedCharField(max_length=names.MAX_PATH_CHARS, **kwargs)


class ValueInput(strict.InputSerializer):
    """``{"value": <any JSON>, "ttl": <seconds>}`` (working memory's)."""

    value = BoundedValueField(WORKING_VALUE, allow_null=True, help_text="Any JSON value.")
    ttl = TtlField(WORKING_TTL, required=False)


MEMORY_UNAVAILABLE = OpenApiResponse(
    response=ErrorResponse,
    description="memory_unavailable: working memory's Redis cannot be reached (the other "
    "tiers keep answering); see Retry-After. Also store_unavailable for the database.",
)


class MethodFiltersApiView(ApiView):
    """An ApiView whose query parameters differ per method (``method_filters``)."""

    method_filters: dict[str, type[strict.FilterSerializer]] = {}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        chosen = self.method_filters.get((request.method or "").lower())
        if chosen is not None:
            self.FilterSerializer = chosen
        super().initial(request, *args, **kwargs)
