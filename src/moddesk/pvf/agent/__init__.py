"""The agent side: the MCP tools over ``PvfService`` and the HTTP workbench (``pvf serve``) that hosts
them, the page and the event stream.
"""
