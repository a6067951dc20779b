"""The parent side of a run: spawn the worker, sample its memory from /proc at 50 Hz,
enforce caps (rlimit, cgroup), cancel, classify the outcome, recover after a restart,
and queue runs.

Rule: imports ``spec``, ``data`` and ``store``; never ``predict`` (a run's forecast is
handed in by its caller) and never anything above.
"""
