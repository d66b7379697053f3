"""The ra3 index core: pure schema, parsing, model, index, query and snapshot code (no agent or editor imports)."""
