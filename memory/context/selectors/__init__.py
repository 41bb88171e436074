"""Reads across the memory tiers: the router's (``router``), one search over every tier
(``search``) and a run's counters (``runs``)."""
