"""Every write of the skill graph (one module per area)."""
