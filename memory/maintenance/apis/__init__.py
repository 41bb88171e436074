"""Maintenance's views: pending changes, runs, jobs and reports, rot."""
