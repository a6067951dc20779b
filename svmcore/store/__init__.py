"""Durable run history: SQLite (``sqlite``), typed records (``records``) made from rows at
one boundary (``rows``: what cannot be read is named, never raised), what in the store is
damaged (``damage``), salvage of a damaged file (``salvage``) and export of a run as plain
data (``export``).

Rule: imports only ``spec``. It knows nothing of processes or machines: callers pass
the host and the runner's identity in.
"""
