"""Dungeon & Fighter ``Script.pvf`` workbench: formats, workspace, history, scripts, transfer, docs."""
