"""What importing costs: the worker's floor (Python and the libraries, before any data)
per library set, from this machine's calibration when there is one, else from the
reference measurement; and the warning for a memory cap below it."""

from __future__ import annotations

from svmcore.predict.model import LEAN_FLOOR_MB, Calibration, floor_key, floor_mb, tracer_mb
from svmcore.spec.config import RunConfig

# Measured on the 2-core development machine on 2026-12-01 with a 2,000-row run (the imports
# phase's exact peak): scikit-learn's path. The lean path (native parser and solver, stream mode):
# Python, numpy and the C library, measured again on 2026-12-04 once it stopped mapping OpenSSL.
REFERENCE_FLOORS_MB = {"base": 128.0, "lean": LEAN_FLOOR_MB}
REFERENCE_MEASURED = "2026-12-01 (the lean floor on 2026-12-04)"
REFERENCE_BASIS = f"measured on the reference machine on {REFERENCE_MEASURED}, not this one"
# The file-backed pages of the libraries a worker maps, which count in its RSS but not against a
# cgroup cap once another process holds them in memory (a page is charged to the group that first
# read it): the worker's RssFile at its highest RSS sample, 2026-12-06, 20,000-row runs under a
# cgroup cap: scikit-learn's path 56-58 MiB, the lean path 21.
LIBRARY_FILES_MB = {"base": 57.0, "lean": 20.0}
CALIBRATED_BASIS = "measured on this machine by its calibration"


def floor_for(cfg: RunConfig, cal: Calibration | None) -> tuple[float, str]:
    """The floor a run of ``cfg`` starts from, in MiB, and where the figure comes from."""
    if cfg.lean:
        lean, basis = lean_floor(cal)
        return lean + tracer_mb(cfg), basis
    if cal is not None and cal.floors:
        return floor_mb(cal, cfg), CALIBRATED_BASIS
    return REFERENCE_FLOORS_MB["base"] + tracer_mb(cfg), REFERENCE_BASIS


def lean_floor(cal: Calibration | None) -> tuple[float, str]:
    """The lean path's floor (MiB) and where the figure comes from: this machine's lean calibration
    runs, else the reference measurement (also for a calibration from before it measured one)."""
    if cal is not None and LEAN_KEY in cal.floors:
        return cal.floors[LEAN_KEY], CALIBRATED_BASIS
    return REFERENCE_FLOORS_MB["lean"], REFERENCE_BASIS


LEAN_KEY = "linear-svm+lean"  # the lean path trains linear-svm only


def import_costs(cal: Calibration | None) -> list[dict]:
    """One row per library set: what the worker holds before any data. From the
    calibration's floors (per model) when calibrated, else the reference measurement."""
    if cal is not None and cal.floors:
        rows = []
        for key in sorted(cal.floors):
            model, libs = key.split("+")
            rows.append({"libraries": _LIBRARIES[libs], "model": model, "floor_mb": round(cal.floors[key], 1),
                         "basis": CALIBRATED_BASIS})
        if any(k.endswith("+lean") for k in cal.floors):
            return rows
        lean = _lean_row()  # its basis differs from the rows above: say so where the table shows it
        lean["libraries"] += f" ({REFERENCE_BASIS})"
        return rows + [lean]
    return [{"libraries": _LIBRARIES["base"], "model": "any", "floor_mb": REFERENCE_FLOORS_MB["base"],
             "basis": REFERENCE_BASIS},
            _lean_row()]


def _lean_row() -> dict:
    return {"libraries": _LIBRARIES["lean"], "model": "linear-svm, stream mode",
            "floor_mb": REFERENCE_FLOORS_MB["lean"], "basis": REFERENCE_BASIS}


_LIBRARIES = {"base": "Python, numpy, scipy, scikit-learn",
              "lean": "Python, numpy and the native C library (parser and solver): the lean path"}


def library_files_mb(cfg: RunConfig) -> float:
    """What of a run's RSS the libraries' files are (``LIBRARY_FILES_MB``): charged to a
    cgroup only when no other process holds them in memory already."""
    return LIBRARY_FILES_MB[floor_key(cfg).split("+")[1]]


def libraries(cfg: RunConfig) -> str:
    """What a run of ``cfg`` imports, in words: 'Python, numpy, scipy, scikit-learn', ..."""
    return _LIBRARIES[floor_key(cfg).split("+")[1]]


def cap_below_floor(cfg: RunConfig, floor: float, basis: str, cap_kind: str | None = None) -> str | None:
    """The warning for a memory cap below the floor (None when there is no cap or it is
    above it). Under a cgroup cap (``cap_kind``, resolved) the floor is what the libraries
    charge to the run's cgroup: the floor less their files (``library_files_mb``). Pure: the
    floor and its basis come from ``floor_for``."""
    cap = cfg.memory_cap_mb
    libs = "on the lean path" if cfg.lean else "on scikit-learn's path"
    if cap_kind == "cgroup":
        files = library_files_mb(cfg)
        if cap is None or cap >= floor - files:
            return None
        return (f"Memory: its cgroup cap of {cap:,} MiB is below the {floor - files:,.0f} MiB that Python and the "
                f"libraries {libs} charge to a cgroup before reading any data (their floor of {floor:,.0f} MiB, "
                f"{basis}, less the {files:,.0f} MiB of library files that other processes already hold in memory, "
                "charged to their groups). It will almost certainly end out of memory before training.")
    if cap is None or cap >= floor:
        return None
    return (f"Memory: its memory cap of {cap:,} MiB is below the floor of {floor:,.0f} MiB, what Python and the "
            f"libraries {libs} hold before reading any data ({basis}). It will almost certainly end out of "
            "memory before training: under an rlimit cap while importing; under a cgroup cap the imports can "
            "pass (library pages already cached are charged to other groups) but the data will not fit.")
