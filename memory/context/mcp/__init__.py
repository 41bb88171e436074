"""MCP tools: the five router tools (``router``; their kinds reach knowledge items, the memory
tools of runs, long-term search and maintenance), the memory tools (``tools``) and context
assembly (``context``)."""
