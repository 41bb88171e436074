"""Maintenance's reads: pending changes and their archives, reports, rot across stores."""
