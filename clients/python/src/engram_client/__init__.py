"""The Python client of Engram's HTTP API (docs/api.md): ``Engram`` (sync) and ``AsyncEngram``.

from engram_client import Engram

client = Engram()  # ENGRAM_URL, ENGRAM_API_KEY
conversation = client.conversations.create(title="Support")
client.conversations.messages.add(conversation["id"], messages=[{"role": "user", "content": "Hi"}])
print(client.context.get(query="What did the user say?")["context"])
"""

from . import types
from ._base import AsyncPage, SyncPage
from ._client import DEFAULT_URL, AsyncEngram, Engram, __version__
from ._errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    EngramError,
    InternalServerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
)

__all__ = [
    "DEFAULT_URL",
    "APIConnectionError",
    "APIError",
    "AsyncEngram",
    "AsyncPage",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "Engram",
    "EngramError",
    "InternalServerError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServiceUnavailableError",
    "SyncPage",
    "__version__",
    "types",
]
