"""``python -m moddesk`` runs the root command (the launcher scripts use this)."""

from moddesk.cli import main

main()
