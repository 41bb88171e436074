"""Who does what with skills among people (agents act in their own account through the API).

- Reviewers (and owners) review proposals, activate skills and edit them in the admin.
- Every role reads skills, versions, usage, profiles and conflicts.

Approving, rejecting, creating a skill from a proposal and activating a skill are for *people*
with one of these roles: an agent (or a command-line tool) is refused with 403
``reviewer_required`` whatever its key's scopes (``require_reviewer``).
"""

from __future__ import annotations

from core.actors import REVIEWER, Actor
from core.errors import PermissionDenied

REVIEW_SKILLS = frozenset({REVIEWER})
MANAGE_SKILLS = frozenset({REVIEWER})


def require_reviewer(actor: Actor, account_id: int) -> None:
    """403 ``reviewer_required`` unless a person with the reviewer (or owner) role acts."""
    if actor.user is None or not actor.has_role(account_id, REVIEW_SKILLS):
        raise PermissionDenied(
            "Only a person with the reviewer or owner role in the account may do this.",
            code="reviewer_required",
            details={"roles": ["owner", "reviewer"]},
        )
