"""``.pvf.js`` scripts: QuickJS-ng in a worker process, an isolated change set, plans to review.

``api.d.ts`` is the single source of truth for the script API; ``prelude.js`` implements it over
one host function; ``worker.py`` runs a script; ``runtime.run_script`` is the parent side;
``plan.build_plan`` turns a change set into reviewable changes with keys, diffs and dependencies;
``help.topics`` serves the documentation generated from ``api.d.ts``.
"""
