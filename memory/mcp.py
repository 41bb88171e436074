"""Memory's MCP tools (docs/mcp.md), found by name (``core.mcp.registry``): the five router tools
(their kinds reach knowledge items, the memory tools of runs, long-term search and
maintenance), the shared pools, conversations and context assembly, each declared by its
sub-domain's ``mcp``."""

from memory.context.mcp.context import TOOLS as CONTEXT_TOOLS
from memory.context.mcp.router import TOOLS as ROUTER_TOOLS
from memory.conversations.mcp import TOOLS as CONVERSATION_TOOLS
from memory.pools.mcp import TOOLS as POOL_TOOLS

TOOLS = (*ROUTER_TOOLS, *POOL_TOOLS, *CONVERSATION_TOOLS, *CONTEXT_TOOLS)
