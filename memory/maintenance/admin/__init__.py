"""Maintenance in the admin: pending changes with their statements, reports, rot (each module
registers its admins on import; ``memory.admin`` imports them)."""
