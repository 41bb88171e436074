"""API key format, hashing and verification (no Django models touched here).

A key is ``eng_<prefix>_<secret>``: the prefix is stored in clear to find the row and to show
operators which key is which; the secret is 256 random bits, so a plain SHA-256 of it is a safe
at-rest form (no slow KDF needed, unlike passwords), compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

KEY_PREFIX = "eng"
# A key's own prefix (``<prefix>``): what revoking names in the URL (core.converters).
PREFIX_CHARS = 12
PREFIX = rf"[a-z0-9]{{{PREFIX_CHARS}}}"
_KEY_RE = re.compile(rf"^eng_({PREFIX})_([A-Za-z0-9_-]{{43}})$")


@dataclass(frozen=True)
class GeneratedKey:
    prefix: str
    secret: str
    hashed_secret: str

    @property
    def full_key(self) -> str:
        return f"{KEY_PREFIX}_{self.prefix}_{self.secret}"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def generate_key() -> GeneratedKey:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    prefix = "".join(secrets.choice(alphabet) for _ in range(PREFIX_CHARS))
    secret = secrets.token_urlsafe(32)
    return GeneratedKey(prefix=prefix, secret=secret, hashed_secret=hash_secret(secret))


def parse_key(raw: str) -> tuple[str, str] | None:
    """Split a presented key into (prefix, secret), or None if it is not shaped like one."""
    match = _KEY_RE.match(raw.strip())
    if match is None:
        return None
    return match.group(1), match.group(2)


def secret_matches(secret: str, hashed_secret: str) -> bool:
    return hashes_match(hash_secret(secret), hashed_secret)


def hashes_match(hashed: str, hashed_secret: str) -> bool:
    """Whether a presented secret's hash is the stored one, in constant time."""
    return hmac.compare_digest(hashed, hashed_secret)
