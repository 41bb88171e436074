"""Every write to core data (keyword-only, typed, the acting actor, atomic, only the changed
fields saved, recorded in the audit log). Split by subject; import from here."""

from core.services.accounts import (
    ACCOUNT_UPDATABLE_FIELDS,
    account_create,
    account_delete,
    account_update,
    membership_grant,
    membership_revoke,
    membership_update,
    require_installation,
    staff_user_ensure,
)
from core.services.agents import (
    AGENT_UPDATABLE_FIELDS,
    TEAM_UPDATABLE_FIELDS,
    agent_create,
    agent_delete,
    agent_update,
    team_create,
    team_delete,
    team_update,
)
from core.services.keys import (
    api_key_create,
    api_key_delete,
    api_key_revoke,
    api_key_update,
    api_keys_prune,
)

__all__ = [
    "ACCOUNT_UPDATABLE_FIELDS",
    "AGENT_UPDATABLE_FIELDS",
    "TEAM_UPDATABLE_FIELDS",
    "account_create",
    "account_delete",
    "account_update",
    "agent_create",
    "agent_delete",
    "agent_update",
    "api_key_create",
    "api_key_delete",
    "api_key_revoke",
    "api_key_update",
    "api_keys_prune",
    "membership_grant",
    "membership_revoke",
    "membership_update",
    "require_installation",
    "staff_user_ensure",
    "team_create",
    "team_delete",
    "team_update",
]
