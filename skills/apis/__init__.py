"""The skill graph API: one module per area, one view per operation."""
