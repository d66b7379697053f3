"""Semantic index of SAGE-engine (Red Alert 3, C&C3) mod XML, with a live query server and MCP."""
