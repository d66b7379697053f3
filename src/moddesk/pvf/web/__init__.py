"""The pvf workbench page: static ES modules under ``static/`` and the JSON routes they call."""
