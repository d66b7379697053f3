"""Import local files into the workspace, export archive content, and write MOD packages.

``imports.ImportService``: prepare (frozen bytes) → preview → apply (all or nothing) → discard.
``exports.ExportService``: formats → prepare (frozen snapshot) → preview → execute (temp dir +
no-overwrite publish) → discard. ``writers`` lays out direct exports and the MOD formats.
"""
