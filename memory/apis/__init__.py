"""Memory HTTP API: one module per tier, one view per operation."""
