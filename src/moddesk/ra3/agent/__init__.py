"""The ra3 agent side: the live query server, endpoint files, watch, MCP, enable/disable setup and the demo."""
