"""``Forecast``: the memory model's word on one run before it is launched, in one shape
for everyone who reads it (the launch warnings, the Train page, ``svmcore estimate``,
recommend, and the prediction stored beside the run's measurement). Its dict (``to_dict``)
is what the store keeps; ``from_dict`` reads it back, a forecast stored before it had
every field included."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ParallelForecast:
    """A data-parallel run's memory: each Dask worker, the run's own process (which
    coordinates) and every process at once."""

    workers: int
    per_worker_mb: float
    per_worker_parts_mb: dict
    coordinator_mb: float
    total_mb: float
    basis: str


@dataclass(frozen=True)
class Forecast:
    """Exact peaks (MiB) before a run: calibrated on this machine, or a ``lower_bound``
    (no calibration yet: the parts' sizes alone, without the floor or any overhead, and
    the train time at the reference machine's rates)."""

    predicted_peak_mb: float  # the run's own process (a data-parallel run's coordinator)
    peak_phase: str = ""
    parts: dict = field(default_factory=dict)  # the peak phase's parts (MiB); calibrated, the floor among them
    phases_mb: dict = field(default_factory=dict)  # each phase's peak
    phase_parts: dict = field(default_factory=dict)  # each phase's parts above the floor
    predicted_train_s: float | None = None  # CPU seconds of the train phase
    lower_bound: bool = False
    floor_mb: float | None = None  # what the libraries hold before any data
    floor_basis: str = ""
    width: int | None = None  # input columns, after hashing
    cap_kind: str = "none"  # the cap the run will have: none, rlimit or cgroup
    capped_mb: float | None = None  # the quantity its cap limits: a cgroup's charge leaves out library files others hold
    parallel: ParallelForecast | None = None
    narrower_mb: float | None = None  # an MLP on a wide input: the peak on ``NARROWER_BITS`` hashed columns

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> "Forecast | None":
        """A stored forecast (keys it does not know are left out), or None for none (older
        runs may hold an error in its place)."""
        if not d or d.get("predicted_peak_mb") is None:
            return None
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in d.items() if k in names}
        if values.get("parallel"):
            values["parallel"] = ParallelForecast(**values["parallel"])
        return cls(**values)
