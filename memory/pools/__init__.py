"""Shared pools (docs/memory/pools.md): JSON data that agents of an account share, read
and written by dot path, with grants, bulletin events and workflow runs. A sub-domain package of
``memory`` with its own layers (``models``, ``services``, ``data_services`` for the data's
writes, ``selectors``, ``apis``, ``admin``, ``mcp``).

Its algorithm modules:

- ``access``: who may read and write a pool;
- ``json_paths``: reading and changing nested JSON objects by dot path;
- ``leaves``: what a pool's data is searched by (its leaves: values at dot paths)."""
