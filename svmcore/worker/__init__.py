"""The child process that trains: ``python -m svmcore.worker RUN_DIR``.

Rule: imports only ``spec`` and ``data`` (never the store or the engine: the worker
writes its own event file, the parent reads it). This package's ``__init__`` imports
nothing, so the imports phase measures the training libraries, not ours.
"""
