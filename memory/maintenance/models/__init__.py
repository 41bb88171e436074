"""Maintenance's tables: pending changes and change policies (``changes``), maintenance jobs
(``jobs``) and reports (``reports``). ``memory.models`` imports each for Django."""
