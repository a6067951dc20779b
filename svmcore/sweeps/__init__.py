"""Grids of runs: expansion of a grid (``grid``), the trade-off frontier and the best
setting under a budget (``frontier``), sweeps (``sweep``) and where their runs go
(``executors``: the local queue or a Dask cluster).

Rule: imports ``spec``, ``data``, ``store``, ``engine`` and ``predict``.
"""
