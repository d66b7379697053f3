"""The workbench: the open archive's workspace, reading and browsing, the content index and
search, open/close/save (lifecycle), editor occupancy, history and the archive CLI.
``moddesk.pvf.service.PvfService`` assembles these parts into the one service every entry point uses.
"""
