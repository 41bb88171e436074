"""Base classes for the API's input serializers.

``InputSerializer`` (request bodies) refuses unknown fields with 400 ``unknown_field``, so a typo
such as ``doc_type`` for ``doc_types`` in search filters fails loudly instead of running an
unfiltered search, and requires each value to have the JSON type the OpenAPI schema documents
(``"10"`` is not an integer, ``0`` is not a string, ``1`` is not a boolean): 400
``validation_error`` with the field's problem coded ``invalid_type`` in the details.
Integers must fit a 64-bit column. ``FilterSerializer`` does the same for query parameters, which
are all strings, so it checks names but leaves type conversion to the fields.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail

from core.errors import ValidationFailed
from core.metadata import (
    METADATA_MAX_BYTES,
    METADATA_MAX_DEPTH,
    METADATA_MAX_PROPERTIES,
    metadata_check,
)
from core.search import (
    DEFAULT_TOP_K,
    MAX_ID,
    MAX_LIST_ITEMS,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    MAX_WEIGHT,
)

if TYPE_CHECKING:
    from rest_framework.request import Request

INT64_MAX = 2**63 - 1
# Query parameters the paginator reads itself.
PAGINATION_PARAMETERS = frozenset({"cursor", "page_size"})


def _type_error(field: serializers.Field, value: Any) -> str | None:
    """What is wrong with ``value``'s JSON type for ``field``, or None."""
    if value is None:
        return None  # allow_null decides
    if isinstance(field, serializers.BooleanField):
        return None if isinstance(value, bool) else "Expected a boolean."
    if isinstance(field, serializers.IntegerField):
        if isinstance(value, bool) or not isinstance(value, int):
            return "Expected an integer."
        return None if -INT64_MAX - 1 <= value <= INT64_MAX else "The integer is out of range."
    if isinstance(field, serializers.FloatField | serializers.DecimalField):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "Expected a number."
        return None if math.isfinite(float(value)) else "Expected a finite number."
    if isinstance(field, serializers.MultipleChoiceField | serializers.ListField):
        return None if isinstance(value, list) else "Expected a list."
    if isinstance(field, serializers.ListSerializer):
        return None if isinstance(value, list) else "Expected a list."
    if isinstance(field, serializers.DictField):
        return None if isinstance(value, dict) else "Expected an object."
    if isinstance(field, serializers.Serializer):
        return None if isinstance(value, dict) else "Expected an object."
    if isinstance(field, serializers.JSONField):
        return None
    if isinstance(field, serializers.ChoiceField):
        choices_are_text = all(isinstance(choice, str) for choice in field.choices)
        return "Expected a string." if choices_are_text and not isinstance(value, str) else None
    if isinstance(
        field,
        serializers.CharField
        | serializers.DateField
        | serializers.DateTimeField
        | serializers.TimeField
        | serializers.DurationField,
    ):
        return None if isinstance(value, str) else "Expected a string."
    return None


def _child_type_errors(field: serializers.Field, value: Any) -> Any:
    """Type errors inside lists and dicts of typed children (``ListField(child=...)``)."""
    child = getattr(field, "child", None)
    if child is None or isinstance(field, serializers.ListSerializer):
        return None
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        items: dict[Any, Any] = dict(enumerate(value))
    elif isinstance(field, serializers.DictField) and isinstance(value, dict):
        items = dict(value)
    else:
        return None
    found: dict[Any, list[ErrorDetail]] = {}
    limit = getattr(child, "max_length", None) if isinstance(child, serializers.CharField) else None
    for key, item in items.items():
        problem = _type_error(child, item)
        if problem:
            found[key] = [ErrorDetail(problem, code="invalid_type")]
        elif limit and isinstance(item, str) and len(item) > limit:
            # As sent, like a field's own string (DRF would trim whitespace first).
            found[key] = [ErrorDetail(f"At most {limit} characters.", code="max_length")]
    return found or None


class InputSerializer(serializers.Serializer):
    """A request body: known fields only, each of its documented JSON type."""

    strict_types = True

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            errors: dict[str, Any] = {}
            known = set(self.fields) | self.extra_allowed_fields()
            for name in sorted(set(data) - known):
                errors[name] = [ErrorDetail("Unknown field.", code="unknown_field")]
            if self.strict_types and self.context.get("strict_types", True):
                for name, field in self.fields.items():
                    if field.read_only or name not in data:
                        continue
                    value = data[name]
                    problem = _type_error(field, value)
                    if problem:
                        errors[name] = [ErrorDetail(problem, code="invalid_type")]
                        continue
                    limit = getattr(field, "max_length", None)
                    if (
                        isinstance(value, str)
                        and isinstance(field, serializers.CharField)
                        and limit
                        and len(value) > limit
                        and not getattr(field, "service_checks_bounds", False)
                    ):
                        # As sent: DRF trims whitespace first, which would let a longer string
                        # through than the schema's maxLength allows.
                        errors[name] = [
                            ErrorDetail(
                                f"At most {limit} characters.",
                                code=getattr(field, "too_long_code", "max_length"),
                            )
                        ]
                        continue
                    nested = _child_type_errors(field, value)
                    if nested:
                        errors[name] = nested
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)

    def extra_allowed_fields(self) -> set[str]:
        return set()


class BatchInput(InputSerializer):
    """A body holding one list written all or none (``batch_field``, 1 to ``batch_max`` items):
    a count outside that is 400 ``invalid_batch_size``, checked before the items one by one."""

    batch_field = ""
    batch_max = 0
    batch_noun = "items"

    def to_internal_value(self, data: Any) -> Any:
        items = data.get(self.batch_field) if isinstance(data, Mapping) else None
        if isinstance(items, list) and not 1 <= len(items) <= self.batch_max:
            raise ValidationFailed(
                f"Write 1 to {self.batch_max} {self.batch_noun} at a time.",
                code="invalid_batch_size",
                details={"max": self.batch_max},
            )
        return super().to_internal_value(data)


class FilterSerializer(InputSerializer):
    """Query parameters: known names only (pagination's own included); values are strings the
    fields convert. A parameter given twice is refused (the schema documents one value), and so
    is an empty value unless the field allows blanks (DRF would read ``?status=`` as an absent
    parameter, the way HTML forms send empty inputs)."""

    strict_types = False

    def extra_allowed_fields(self) -> set[str]:
        return set(PAGINATION_PARAMETERS)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            errors: dict[str, Any] = {}
            for name in data:
                field = self.fields.get(name)
                if isinstance(field, serializers.ListField | serializers.MultipleChoiceField):
                    continue
                if hasattr(data, "getlist") and len(data.getlist(name)) > 1:
                    errors[name] = [ErrorDetail("Give this parameter once.", code="repeated")]
                elif data[name] == "" and not getattr(field, "allow_blank", False):
                    errors[name] = [ErrorDetail("This parameter may not be empty.", code="blank")]
                elif field is not None and isinstance(data[name], str):
                    problem = _query_number_error(field, data[name])
                    if problem:
                        errors[name] = [ErrorDetail(problem, code="invalid_type")]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


# What a number in a query string may look like: ASCII digits only. Python's int() and float()
# also read other scripts' digits ("٣" is 3) and padding ("1_0", " 7"), which the schema does
# not document and no client means.
_QUERY_INTEGER = re.compile(r"-?[0-9]+")
_QUERY_NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _query_number_error(field: serializers.Field, raw: str) -> str | None:
    """What is wrong with the query-string value ``raw`` for a numeric ``field``, or None."""
    if isinstance(field, serializers.IntegerField):
        if not _QUERY_INTEGER.fullmatch(raw):
            return "Expected an integer (ASCII digits)."
        # Checked before int(): Python refuses to convert more than 4,300 digits (ValueError).
        if len(raw.lstrip("-").lstrip("0")) > 19 or not -INT64_MAX - 1 <= int(raw) <= INT64_MAX:
            return "The integer is out of range."
        return None
    if isinstance(field, serializers.FloatField | serializers.DecimalField):
        return None if _QUERY_NUMBER.fullmatch(raw) else "Expected a number (ASCII digits)."
    return None


class FiniteFloatField(serializers.FloatField):
    """A float that is never NaN or infinite: input refuses them, output shows them as null
    (rows written before the API refused them must not break a whole listing)."""

    def to_internal_value(self, data: Any) -> float:
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            self.fail("invalid")
        return value

    def to_representation(self, value: Any) -> float | None:  # type: ignore[override]
        if value is None:
            return None
        number = float(value)
        return number if math.isfinite(number) else None


class IdField(serializers.IntegerField):
    """A database id: 1 to ``MAX_ID``, as in a path (a larger one names nothing there either)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(**kwargs)


Limit = int | Callable[[], int]


def _limit(value: Limit) -> int:
    return value() if callable(value) else value


class ServiceBoundedCharField(serializers.CharField):
    """A string whose length bound the schema states (``maxLength``) while the service checks
    it, answering with its own status and code (413 ``content_too_long``, 400 ``invalid_key``):
    the field adds no validator, so that one check answers. ``max_length`` is the number the
    service uses (a constant, or a callable reading a setting when the serializer is made)."""

    service_checks_bounds = True

    def __init__(self, *, max_length: Limit, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_length = _limit(max_length)


class ServiceBoundedIntegerField(serializers.IntegerField):
    """An integer whose range the schema states (``minimum``, ``maximum``) while the service
    checks it with its own code (400 ``invalid_ttl``), as ``ServiceBoundedCharField``."""

    service_checks_bounds = True

    def __init__(
        self, *, min_value: Limit, max_value: Limit, field_checks_min: bool = False, **kwargs: Any
    ) -> None:
        # field_checks_min: the field refuses a number below min_value itself (400
        # validation_error), as before the service stated its maximum.
        if field_checks_min:
            kwargs["min_value"] = _limit(min_value)
        super().__init__(**kwargs)
        self.min_value = _limit(min_value)
        self.max_value = _limit(max_value)


class ServiceBoundedJSONField(serializers.JSONField):
    """Any JSON value whose size the service checks (413 ``value_too_large``, a pool's
    ``pool_quota_exceeded``): the schema states the bound as ``x-max-bytes`` (the value as
    compact JSON text, in UTF-8) and as ``maxLength`` for a string value (``core.schema``)."""

    service_checks_bounds = True

    def __init__(self, *, max_bytes: Limit, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_bytes = _limit(max_bytes)


def validated(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The request body validated by ``serializer_class`` (400 otherwise), as a dict."""
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)


# --- the search contract (core.search) -----------------------------------------------------------


class SearchQueryField(serializers.CharField):
    """A search's query text: at most ``MAX_QUERY_CHARS`` characters as sent, else 400
    ``query_too_long`` (the error's code, not only the field's)."""

    too_long_code = "query_too_long"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", MAX_QUERY_CHARS)
        kwargs.setdefault("help_text", f"At most {MAX_QUERY_CHARS} characters.")
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            # As sent (query parameters too): CharField trims whitespace before its validators.
            raise serializers.ValidationError(
                f"At most {self.max_length} characters.", code=self.too_long_code
            )
        return super().to_internal_value(data)


class TopKField(serializers.IntegerField):
    """How many hits a search answers: 1 to ``MAX_TOP_K`` (default ``DEFAULT_TOP_K``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_TOP_K)
        kwargs.setdefault("default", DEFAULT_TOP_K)
        super().__init__(**kwargs)


class ThresholdField(FiniteFloatField):
    """A minimum score, bounded (by default a cosine similarity, -1 to 1); null: none."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", -1)
        kwargs.setdefault("max_value", 1)
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("default", None)
        super().__init__(**kwargs)


class IdListField(serializers.ListField):
    """A list of ids (each 1 to ``MAX_ID``), at most ``MAX_LIST_ITEMS`` of them."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", IdField())
        kwargs.setdefault("max_length", MAX_LIST_ITEMS)
        super().__init__(**kwargs)


class WeightsInput(InputSerializer):
    """Relative weights of the stages in a hybrid search (normalised to sum to 1)."""

    vector = FiniteFloatField(
        min_value=0, max_value=MAX_WEIGHT, required=False, help_text="The semantic stage's."
    )
    keyword = FiniteFloatField(
        min_value=0, max_value=MAX_WEIGHT, required=False, help_text="The keyword stage's."
    )
    graph = FiniteFloatField(
        min_value=0,
        max_value=MAX_WEIGHT,
        required=False,
        help_text="The graph stage's, when ``stages`` names it (default 0.3 before normalising).",
    )


class TimingsField(serializers.DictField):
    """``timings_ms``: the milliseconds each stage of a search took, by stage name."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", FiniteFloatField(allow_null=True))
        kwargs.setdefault("help_text", "Milliseconds each stage took, by stage.")
        super().__init__(**kwargs)


# --- output without a serializer per call --------------------------------------------------------

Represent = Callable[[Any], Any]


def represent(serializer_class: type[serializers.Serializer], data: Mapping[str, Any]) -> Any:
    """``serializer_class(data).data`` for a plain dict, at a fraction of the cost.

    DRF builds each serializer by deep-copying its declared fields (a nested serializer's again,
    per call) and reads every value through ``get_attribute``: on the hot endpoints (working
    memory) that was a third of the view's time. Here one instance of the class is built per
    process and its bound fields convert the dict's values with their own ``to_representation``,
    exactly as ``Serializer.to_representation`` would (None stays None; nested serializers and
    ``many=True`` lists are followed). The output serializer stays the one declaration: the
    OpenAPI schema is generated from it and the answer follows it. Only serializers of plain
    dicts whose fields read their own key qualify (no ``source``, no ``SerializerMethodField``):
    anything else is refused with TypeError when first used.
    """
    return _compiled(serializer_class)(data)


@functools.cache
def _compiled(serializer_class: type[serializers.Serializer]) -> Represent:
    return _serializer_plan(serializer_class())


def _serializer_plan(serializer: serializers.Serializer) -> Represent:
    plan = [
        (name, field, _field_plan(field))
        for name, field in serializer.fields.items()
        if not field.write_only
    ]
    for name, field, _ in plan:
        if field.source != name or isinstance(field, serializers.SerializerMethodField):
            raise TypeError(f"{type(serializer).__name__}.{name}: not a plain dict field")

    def convert(data: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, field, plain in plan:
            try:
                value = data[name]
            except KeyError:  # as Field.get_attribute answers a missing key
                if field.default is not serializers.empty:
                    value = field.get_default()
                elif field.allow_null:
                    value = None
                elif not field.required:
                    continue
                else:
                    raise
            out[name] = None if value is None else plain(value)
        return out

    return convert


def _field_plan(field: serializers.Field) -> Represent:
    if isinstance(field, serializers.ListSerializer):
        assert field.child is not None
        child = _field_plan(field.child)
        return lambda items: [child(item) for item in items]
    if isinstance(field, serializers.Serializer):
        return _serializer_plan(field)
    return field.to_representation


# --- free-form objects and metadata (core.metadata) ----------------------------------------------


class ObjectField(serializers.DictField):
    """A free-form JSON object a caller sends: at most ``max_properties`` keys at its top level,
    else 400 ``too_many_properties``; the schema states it (``maxProperties``). With
    ``service_checks_bounds`` the service counts them itself, answering with its own code, as
    ``ServiceBoundedCharField``. ``max_bytes``: the bound on its size as compact JSON that the
    service checks, stated as ``x-max-bytes``."""

    def __init__(
        self,
        *,
        max_properties: int,
        max_bytes: Limit | None = None,
        service_checks_bounds: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.max_properties = max_properties
        self.max_bytes = None if max_bytes is None else _limit(max_bytes)
        self.service_checks_bounds = service_checks_bounds

    def to_internal_value(self, data: Any) -> dict[Any, Any]:
        if isinstance(data, Mapping):
            self.check_bounds(data)
        return super().to_internal_value(data)

    def check_bounds(self, data: Mapping[Any, Any]) -> None:
        if not self.service_checks_bounds and len(data) > self.max_properties:
            raise ValidationFailed(
                f"{self.field_name} has more than {self.max_properties} keys.",
                code="too_many_properties",
                details={"field": self.field_name, "limit": self.max_properties},
            )


class MetadataField(ObjectField):
    """A caller's ``metadata`` object: at most ``METADATA_MAX_BYTES`` bytes as compact JSON,
    ``METADATA_MAX_DEPTH`` levels deep and ``METADATA_MAX_PROPERTIES`` keys, else 400
    ``metadata_too_large`` (``core.metadata``)."""

    def __init__(self, *, stored_as: str = "", **kwargs: Any) -> None:
        # ``stored_as``: the object is stored as ``{stored_as: value}``, which is what is bound.
        self.stored_as = stored_as
        kwargs.setdefault(
            "help_text",
            f"Any JSON object of at most {METADATA_MAX_BYTES} bytes as compact JSON, "
            f"{METADATA_MAX_DEPTH} levels deep and {METADATA_MAX_PROPERTIES} keys, returned as "
            "stored.",
        )
        super().__init__(
            max_properties=METADATA_MAX_PROPERTIES, max_bytes=METADATA_MAX_BYTES, **kwargs
        )

    def check_bounds(self, data: Mapping[Any, Any]) -> None:
        metadata_check(data, field=self.field_name or "metadata", stored_as=self.stored_as)
