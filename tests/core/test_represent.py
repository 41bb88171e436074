"""``core.serializers.represent`` answers exactly what the output serializer's ``.data`` would."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from django.utils import timezone as django_timezone
from rest_framework import serializers

from core import serializers as strict
from core.serializers import represent
from memory.working import apis as working


def _output_serializers(module: Any) -> list[type[serializers.Serializer]]:
    """Every output serializer a module declares, at module level or inside its views."""
    found: set[type[serializers.Serializer]] = set()
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if obj.__module__ != module.__name__:
            continue
        for candidate in [obj, *(v for v in vars(obj).values() if inspect.isclass(v))]:
            if issubclass(candidate, serializers.Serializer) and not issubclass(
                candidate, strict.InputSerializer
            ):
                found.add(candidate)
    return sorted(found, key=lambda c: c.__qualname__)


def _sample(field: serializers.Field, variant: int) -> Any:
    """A value of the field's type; variant 1 gives None wherever the field allows it."""
    if variant == 1 and field.allow_null:
        return None
    if isinstance(field, serializers.ListSerializer):
        assert field.child is not None
        return [_sample(field.child, variant), _sample(field.child, 0)]
    if isinstance(field, serializers.Serializer):
        return {name: _sample(f, variant) for name, f in field.fields.items()}
    if isinstance(field, serializers.DateTimeField):
        # Not UTC, with microseconds: the output converts and formats it.
        return datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=timezone(timedelta(hours=2)))
    if isinstance(field, serializers.BooleanField):
        return True
    if isinstance(field, serializers.IntegerField):
        return 42
    if isinstance(field, serializers.ChoiceField):
        return next(iter(field.choices))
    if isinstance(field, serializers.ListField):
        return [{"a": [1, None]}, "text", 3]
    if isinstance(field, serializers.JSONField):
        return {"nested": {"list": [1, 2.5, None, "x"]}, "flag": False}
    if isinstance(field, serializers.CharField):
        return "some text\n"
    raise AssertionError(f"no sample for {type(field).__name__}: extend the test")


WORKING_OUTPUTS = _output_serializers(working)


def test_the_working_memory_outputs_are_all_covered() -> None:
    names = {c.__qualname__ for c in WORKING_OUTPUTS}
    assert {"EntryOutput", "WorkingSessionApi.OutputSerializer", "SharedOutput"} <= names
    assert len(WORKING_OUTPUTS) >= 12


@pytest.mark.parametrize("variant", [0, 1])
@pytest.mark.parametrize("serializer_class", WORKING_OUTPUTS, ids=lambda c: c.__qualname__)
def test_represent_is_the_serializers_data(
    serializer_class: type[serializers.Serializer], variant: int
) -> None:
    data = {name: _sample(f, variant) for name, f in serializer_class().fields.items()}
    expected = serializer_class(data).data
    assert represent(serializer_class, data) == expected
    assert list(represent(serializer_class, data)) == list(expected)  # same key order


def test_datetimes_are_formatted_in_the_current_time_zone_as_drf_does() -> None:
    data = {
        "session_id": "s",
        "kind": "value",
        "key": "k",
        "value": 1,
        "ttl": 5,
        "expires_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    }
    assert represent(working.EntryOutput, data)["expires_at"] == "2026-01-02T03:04:05Z"
    with django_timezone.override("Europe/Paris"):
        assert (
            represent(working.EntryOutput, data)
            == working.EntryOutput(data).data
            == {**data, "expires_at": "2026-01-02T04:04:05+01:00"}
        )


def test_a_missing_key_answers_as_the_serializer_does() -> None:
    class Output(serializers.Serializer):
        given = serializers.CharField()
        nullable = serializers.IntegerField(allow_null=True)
        optional = serializers.CharField(required=False)
        defaulted = serializers.CharField(default="d")

    data = {"given": "r"}
    assert (
        represent(Output, data)
        == Output(data).data
        == {
            "given": "r",
            "nullable": None,
            "defaulted": "d",
        }
    )
    with pytest.raises(KeyError):
        represent(Output, {})


def test_serializers_that_do_not_read_plain_dicts_are_refused() -> None:
    class WithSource(serializers.Serializer):
        name = serializers.CharField(source="agent.name")

    class WithMethod(serializers.Serializer):
        name = serializers.SerializerMethodField()

        def get_name(self, obj: Any) -> str:
            return "x"

    for serializer_class in (WithSource, WithMethod):
        with pytest.raises(TypeError):
            represent(serializer_class, {"name": "x"})
