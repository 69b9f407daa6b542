"""`python -m chatmemory_client.mcp`: the chat memory MCP server on stdio."""

from chatmemory_client.mcp.server import main

main()
