"""An MCP server over the chat memory API (`python -m chatmemory_client.mcp`): tools for an
assistant to recall and remember across conversations. Needs the `mcp` extra."""
