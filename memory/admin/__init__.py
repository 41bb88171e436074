"""The memory tiers in the admin, scoped by account and role (``core.admin_base``; docs/admin.md).
Each sub-domain's ``admin`` registers its admins on import, and Django's autodiscovery imports
only this module: short-term entries and shared pools with their grants and bulletin events,
which everyone in an account reads and operators (and owners) change, always through the
services; long-term memory (contexts with their grants, entries with their history, snapshots,
the access log), which holds what agents remember: only operators (and owners) see it;
conversations, knowledge items, and maintenance (pending changes, reports, rot). ``common``
holds what they share."""

from memory.admin import home as home_admin  # the panels of the admin home
from memory.conversations import admin as conversations_admin
from memory.knowledge import admin as knowledge_admin
from memory.long_term import admin as long_term_admin
from memory.maintenance.admin import changes as changes_admin
from memory.maintenance.admin import reports as reports_admin
from memory.pools import admin as pools_admin
from memory.short_term import admin as short_term_admin

__all__ = [
    "changes_admin",
    "conversations_admin",
    "home_admin",
    "knowledge_admin",
    "long_term_admin",
    "pools_admin",
    "reports_admin",
    "short_term_admin",
]
