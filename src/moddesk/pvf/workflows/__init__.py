"""Modder workflows over whole archives: diff two archives, item tables, and their CLI."""
