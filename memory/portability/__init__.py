"""memory's share of an account export (``core.portability``, docs/portability.md): its kinds
in ``services`` (``KINDS``)."""
