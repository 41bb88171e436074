"""The memory tiers in the admin, scoped by account and role (``core.admin_base``; docs/admin.md),
one module per tier, each registering its admins on import: short-term entries
(``short_term``) and shared pools with their grants and bulletin events (``pools``), which
everyone in an account reads and operators (and owners) change, always through the services;
long-term memory (``long_term``: contexts with their grants, entries with their history,
snapshots, the access log), which holds what agents remember: only operators (and owners) see
it."""

from memory.admin import long_term, pools, short_term  # noqa: F401

# isort: split
# Conversations and knowledge items have their own modules (registered on import).
from memory.admin import changes, conversations, knowledge, maintenance_reports  # noqa: F401
