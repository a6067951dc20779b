"""A sweep's runs as parallel coordinates (like Optuna's and W&B's): one axis per knob
the sweep varied, then the exact peak, the throughput and the accuracy; one line per
completed run.

Pure: run records in, plain lists out, so every answer is tested with ==.
"""

from __future__ import annotations

from svmcore.store.records import RunRecord, RunStatus

RESULTS = (("peak_rss_mb", "exact peak (MiB)"), ("samples_per_s", "samples/s"), ("accuracy", "accuracy"))


def _result(r: RunRecord, key: str):
    """A result of a run; its peak is the run's peak (a data-parallel run's: all its processes)."""
    return r.run_peak.mb if key == "peak_rss_mb" else getattr(r.result, key)


def _axis(label: str, values: list) -> dict:
    """A numeric axis as is; any other (text, on/off, missing) as one tick per value."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return {"label": label, "values": [float(v) for v in values], "tickvals": None, "ticktext": None}
    names = sorted({str(v) for v in values})
    return {"label": label, "values": [names.index(str(v)) for v in values],
            "tickvals": list(range(len(names))), "ticktext": names}


def parallel_info(records: list[RunRecord], knobs: list[str]) -> dict:
    """The axes (``knobs`` first, then the results) over the completed runs that have
    every result, the runs drawn (colour: exact peak) and those left out and why."""
    drawn, left = [], []
    for r in sorted(records, key=lambda r: r.id):
        if r.damaged:
            left.append((r.id, "damaged record"))
        elif r.status != RunStatus.COMPLETED:
            left.append((r.id, r.status.value))
        elif any(_result(r, key) is None for key, _ in RESULTS):
            left.append((r.id, "no " + next(lab for key, lab in RESULTS if _result(r, key) is None)))
        else:
            drawn.append(r)
    dims = []
    if drawn:
        dims = [_axis(k, [r.config.get(k) for r in drawn]) for k in knobs]
        sampled = not all(r.run_peak.exact for r in drawn)  # a data-parallel run's peak is a sampled sum
        dims += [_axis("peak (MiB; data-parallel: all processes, sampled)" if key == "peak_rss_mb" and sampled
                       else label, [_result(r, key) for r in drawn]) for key, label in RESULTS]
    return {"dimensions": dims, "runs": [r.id for r in drawn],
            "colour": [float(r.run_peak.mb) for r in drawn], "left_out": left}
