"""Memory's MCP tools (docs/mcp.md): the tiers through the router, and the shared pools."""

from memory.mcp.pools import TOOLS as POOL_TOOLS
from memory.mcp.router import TOOLS as ROUTER_TOOLS

TOOLS = (*ROUTER_TOOLS, *POOL_TOOLS)
