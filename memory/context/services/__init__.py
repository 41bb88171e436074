"""Writes across the memory tiers: the router's (``router``), the search's recorded reads
(``search``) and the memory tools of runs (``tools``)."""
