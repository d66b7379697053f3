"""Mechanisms every moddesk system shares: errors, cursors, ledger, tasks, plans, files, HTTP, MCP."""
