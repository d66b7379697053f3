"""Chinese chess: rules, notations, search engine, game service, MCP tools and a browser panel."""
