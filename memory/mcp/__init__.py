"""Memory's MCP tools (docs/mcp.md): the tiers through the router, the shared pools, and the
memory tools of agent runs, knowledge items."""

from memory.mcp.context import TOOLS as CONTEXT_TOOLS
from memory.mcp.conversations import TOOLS as CONVERSATION_TOOLS
from memory.mcp.knowledge import TOOLS as KNOWLEDGE_TOOLS
from memory.mcp.long_term import TOOLS as LONG_TERM_TOOLS
from memory.mcp.maintenance import TOOLS as MAINTENANCE_TOOLS
from memory.mcp.pools import TOOLS as POOL_TOOLS
from memory.mcp.router import TOOLS as ROUTER_TOOLS
from memory.mcp.tools import TOOLS as MEMORY_TOOLS

TOOLS = (
    *ROUTER_TOOLS,
    *LONG_TERM_TOOLS,
    *POOL_TOOLS,
    *MEMORY_TOOLS,
    *CONVERSATION_TOOLS,
    *KNOWLEDGE_TOOLS,
    *CONTEXT_TOOLS,
    *MAINTENANCE_TOOLS,
)
