"""`moddesk ra3 lsp`: a Language Server Protocol server over the same `ModIndex` as `watch`.

The feature modules (`navigation`, `diagnostics`, `hover`, `completion`, `symbols`) are plain
functions over `IndexData` and document text; `host` keeps the index live from editor buffers;
`server` wires both to pygls. Positions on the wire are UTF-16 code units (`positions`).
"""
