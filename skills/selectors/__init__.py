"""Every non-trivial read of the skill graph (one module per area)."""
