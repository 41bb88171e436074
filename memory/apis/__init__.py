"""Memory HTTP API: each sub-domain's ``apis`` holds its views (one per operation);
``common`` what they share. ``memory.urls`` routes /api/v1/memory/."""
