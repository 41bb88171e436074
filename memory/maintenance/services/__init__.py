"""Maintenance's writes: consolidation, cluster maintenance and rewrites, upkeep, jobs, the
rules that decide, and the review of changes (``changes``, ``change_kinds``)."""
