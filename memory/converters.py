"""URL converters for memory names (memory/names.py). Each converter's regex is what the OpenAPI
schema documents for the parameter; a path that does not match answers 404 like any unknown URL.
A pool's dot path takes anything but ``/`` so that a malformed one answers 400 ``invalid_path``
from the service, naming the problem."""

from __future__ import annotations

from django.urls import register_converter

from memory import names


class _StrConverter:
    regex = ""

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class SessionIdConverter(_StrConverter):
    regex = names.SESSION_ID


class KeyConverter(_StrConverter):
    regex = names.KEY


class PoolIdConverter(_StrConverter):
    regex = names.POOL_ID


class RunIdConverter(_StrConverter):
    regex = names.RUN_ID


class DotPathConverter(_StrConverter):
    regex = r"[^/]{1,2000}"


def register() -> None:
    register_converter(SessionIdConverter, "memory_session")
    register_converter(KeyConverter, "memory_key")
    register_converter(PoolIdConverter, "memory_pool")
    register_converter(RunIdConverter, "memory_run")
    register_converter(DotPathConverter, "memory_path")
