"""The router's, the memory tools' and context assembly's views (``router``, ``tools``,
``context``)."""
