"""Who manages memory in the admin: operators (and owners, who hold every role)."""

from __future__ import annotations

from core.actors import OPERATOR

MANAGE_MEMORY = frozenset({OPERATOR})
