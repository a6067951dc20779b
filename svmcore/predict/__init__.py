"""Predicting a run before it runs: the memory and time model (``model``, pure
arithmetic on the config and the data's shape), its calibration on this machine
(``calibration``, real runs through the engine) and ``recommend``.

Rule: imports ``spec``, ``data``, ``store`` and ``engine``.
"""
