"""URL converters for memory names (memory/names.py). Each converter's regex is what the OpenAPI
schema documents for the parameter, with its length (core.converters); a path that does not
match answers 404 like any unknown URL. A pool's dot path takes anything but ``/`` so that a
malformed one answers 400 ``invalid_path`` from the service, naming the problem."""

from __future__ import annotations

from django.urls import register_converter

from core.converters import NameConverter
from memory import names


class SessionIdConverter(NameConverter):
    regex = names.SESSION_ID
    max_length = names.MAX_SESSION_ID_CHARS


class KeyConverter(NameConverter):
    regex = names.KEY
    max_length = names.MAX_KEY_CHARS


class PoolIdConverter(NameConverter):
    regex = names.POOL_ID
    max_length = names.MAX_POOL_ID_CHARS


class RunIdConverter(NameConverter):
    regex = names.RUN_ID
    max_length = names.MAX_RUN_ID_CHARS


class DotPathConverter(NameConverter):
    pattern = names.DOT_PATH
    max_length = names.MAX_PATH_CHARS


def register() -> None:
    register_converter(SessionIdConverter, "memory_session")
    register_converter(KeyConverter, "memory_key")
    register_converter(PoolIdConverter, "memory_pool")
    register_converter(RunIdConverter, "memory_run")
    register_converter(DotPathConverter, "memory_path")
