"""The one forecast of a launch, and what to say before it: a calibrated forecast or,
before calibration, a lower bound, with the quantity the run's cap will limit; the
warnings (memory above what is available or the cap, a long train phase); and ``admit``,
the launch's admission (validated once, the data scanned once) with that forecast."""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, Mapping

from svmcore.engine.admission import Admitted
from svmcore.engine.admission import admit as admit_data
from svmcore.engine.runner import resolve_cap
from svmcore.predict.calibration import load_calibration
from svmcore.predict.floors import cap_below_floor, floor_for, library_files_mb
from svmcore.predict.model import (
    Calibration,
    Shape,
    data_shape,
    duration_text,
    features,
    group_parts,
    parts,
    predict,
    predict_train_s,
    round_or_none,
)
from svmcore.spec.choices import Model
from svmcore.spec.registry import MLP_MODELS
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.result import Forecast
from svmcore.spec.units import MiB, apart

log = logging.getLogger(__name__)

LONG_TRAIN_S = 180.0  # a forecast train phase longer than this is worth a warning


# Seconds per unit of time_features, fitted on the calibration runs of the 2-core
# development machine (svmcore 2026, scikit-learn 1.9): the time forecast of a machine
# without its own calibration, and labelled as such.
REFERENCE_TIME_COEFS = {
    "const": 0.0427, "parse_sklearn": 8.82e-07, "sample_kernel-approx": 1.19e-09,
    "sample_linear-svm": 5.66e-09, "sample_linear-svm+compiled": 5.29e-08, "sample_mlp": 2.28e-09,
    "step_kernel-approx": 1.04e-05, "step_linear-svm": 6.5e-09, "step_linear-svm+compiled": 1.57e-09,
    "step_mlp": 1.92e-08, "svm": 1.96e-08,
    "fresh_mlp": 0.0,  # (fitted before the time model priced it apart: within step_mlp there)
}


def admit(values: Mapping[str, Any] | RunConfig, home: str) -> Admitted:
    """A launch ready to run: ``engine.admission.admit`` (the knobs validated once, what
    this machine and the data can refuse; the data scanned once) with ``forecast_of`` it,
    or a ConfigError/DataError naming the problem."""
    return forecast_of(admit_data(values, os.path.join(home, "cache")), load_calibration(home))


def forecast_of(launch: Admitted, cal: Calibration | None) -> Admitted:
    """The launch with its forecast, made from its scans. A forecast the model fails to
    make is logged and left out: a run never waits for one."""
    try:
        made = forecast(launch.config, cal, data_shape(launch.config, scans=launch.scans))
    except Exception:  # its data was read already: a failure here is the model's own, say so
        log.exception("the memory model failed to price this run; it runs without a forecast")
        return launch
    return dataclasses.replace(launch, forecast=made)


def forecast(cfg: RunConfig, cal: Calibration | None, shape: Shape | None = None,
             cache_dir: str | None = None) -> Forecast:
    """The run's forecast: ``predict`` when this machine has a calibration, else
    ``lower_bound``; with the cap the run will have and the quantity that cap limits (a
    cgroup counts what is charged to the run's group: the peak less the library files that
    other processes already hold in memory), and for a wide MLP the peak on fewer columns."""
    shape = shape or data_shape(cfg, cache_dir)
    fc = predict(cfg, cal, shape) if cal is not None else lower_bound(cfg, shape)
    floor, floor_basis = floor_for(cfg, cal)
    cap_kind = resolve_cap(cfg)[0]
    charged = fc.predicted_peak_mb - (library_files_mb(cfg) if cap_kind == "cgroup" and cal is not None else 0.0)
    return dataclasses.replace(fc, floor_mb=round(floor, 1), floor_basis=floor_basis, cap_kind=cap_kind,
                               capped_mb=round(max(0.0, charged), 1), narrower_mb=narrower(cfg, cal, shape))


def lower_bound(cfg: RunConfig, shape: Shape) -> Forecast:
    """Without a calibration: each phase's parts, each byte counted once, with no floor
    and no allocator overhead (every run needs at least this much), and the train time at
    the reference machine's rates."""
    phases = {ph: group_parts({k: v / MiB for k, v in f.items() if not k.startswith("const_")})
              for ph, f in features(cfg, parts(cfg, shape)).items()}
    totals = {ph: sum(v.values()) for ph, v in phases.items()}
    peak_phase = max(totals, key=totals.get)
    rounded = {ph: {k: round(x, 1) for k, x in v.items()} for ph, v in phases.items()}
    return Forecast(predicted_peak_mb=round(totals[peak_phase], 1), peak_phase=peak_phase, parts=rounded[peak_phase],
                    phases_mb={ph: round(v, 1) for ph, v in totals.items()}, phase_parts=rounded, lower_bound=True,
                    width=shape.width,
                    predicted_train_s=round_or_none(predict_train_s(cfg, shape, REFERENCE_TIME_COEFS)))


LARGE_MODEL_MB = 1024.0  # a model and its optimiser state this big are worth a word before launch, however much is free
NARROWER_BITS = 16  # the columns an MLP's warning prices instead of a wide input


def narrower(cfg: RunConfig, cal: Calibration | None, shape: Shape) -> float | None:
    """For an MLP on more than 2^16 input columns (its first layer a weight per column and
    hidden unit): the forecast peak with ``hashing_bits`` 16, the same rows on 2^16 columns.
    None for other runs."""
    if cfg.model not in MLP_MODELS or shape.width <= 1 << NARROWER_BITS:
        return None
    try:
        fewer = validate(cfg.to_dict(), hashing_bits=NARROWER_BITS)
    except SvmcoreError:
        return None
    folded = dataclasses.replace(shape, width=1 << NARROWER_BITS)
    return (predict(fewer, cal, folded) if cal is not None else lower_bound(fewer, folded)).predicted_peak_mb


def _large_model(cfg: RunConfig, fc: Forecast, model_mb: float) -> str:
    """The warning for a model (and its optimiser state) of ``LARGE_MODEL_MB`` or more."""
    words = (f"Memory: the model and its optimiser state alone are forecast to hold {model_mb:,.0f} MiB in the "
             f"{fc.peak_phase} phase" + (" (a lower bound; calibrate for a forecast)" if fc.lower_bound else ""))
    if cfg.model in MLP_MODELS and fc.width:
        best = ", scikit-learn's copy of the best ones" if cfg.model == Model.MLP else ""
        words += (f": an MLP's first layer has a weight for each of its {fc.width:,} input columns and "
                  f"{cfg.hidden_sizes[0]:,} hidden units, kept several times over (the weights{best} and Adam's two "
                  "moments) and more during each step")
    if fc.narrower_mb is not None:
        words += (f"; with hashing_bits {NARROWER_BITS} ({1 << NARROWER_BITS:,} columns) the "
                  f"forecast peak is about {fc.narrower_mb:,.0f} MiB")
    return words + "."


def launch_warnings(cfg: RunConfig, fc: Forecast, available_bytes: int | None, cpus: int | None = None) -> list[str]:
    """One sentence per reason to think twice before launching: the forecast peak above
    the memory available now or the quantity the run's cap limits above that cap (a cap
    below the floor, what the libraries alone hold, says so instead), a train phase forecast
    longer than ``LONG_TRAIN_S``, or more threads than the ``cpus`` this machine gives the
    run. Pure."""
    out = []
    peak = fc.predicted_peak_mb
    shown = apart(peak, cfg.memory_cap_mb)[0] if cfg.memory_cap_mb is not None else f"{peak:,.0f}"
    if fc.lower_bound:
        what = (f"needs at least {shown} MiB (a lower bound: the parts' sizes alone, without the "
                "interpreter's floor or any overhead; calibrate for a forecast)")
    else:
        what = f"is forecast to peak at {shown} MiB (exact peak, calibrated memory model)"
    parts_mb = {k: v for k, v in fc.parts.items() if v and k != "floor"}
    if parts_mb:
        big = max(parts_mb, key=parts_mb.get)
        what += f", most of it {big} ({parts_mb[big]:,.0f} MiB) in the {fc.peak_phase} phase"
    if available_bytes is not None and peak * MiB > available_bytes:
        out.append(f"Memory: this run {what}; this machine has {available_bytes / MiB:,.0f} MiB available now. "
                   "It may be killed by the kernel's out-of-memory killer or slow the machine down.")
    below_floor = (cap_below_floor(cfg, fc.floor_mb, fc.floor_basis, fc.cap_kind) if fc.floor_mb is not None
                   else None)
    capped = peak if fc.capped_mb is None else fc.capped_mb
    if below_floor:
        out.append(below_floor)
    elif cfg.memory_cap_mb is not None and capped > cfg.memory_cap_mb:
        how = (f"; under a cgroup cap what counts is what the kernel charges to the run's cgroup, forecast at "
               f"{capped:,.0f} MiB (the peak less the {library_files_mb(cfg):,.0f} MiB of library files that "
               "other processes already hold in memory, charged to their groups)"
               if fc.cap_kind == "cgroup" and not fc.lower_bound else "")
        out.append(f"Memory: this run {what}{how}; its memory cap is {cfg.memory_cap_mb:,} MiB, so it will "
                   "likely end out of memory.")
    if parts_mb.get("model", 0.0) >= LARGE_MODEL_MB and not out:  # (a memory warning above names it already)
        out.append(_large_model(cfg, fc, parts_mb["model"]))
    train_s = fc.predicted_train_s
    if train_s is not None and train_s > LONG_TRAIN_S:
        basis = ("measured on a reference machine, not this one; calibrate for this machine's" if fc.lower_bound
                 else "fitted on this machine's calibration runs")
        cpu = "" if fc.lower_bound else " of CPU time"
        out.append(f"Time: training alone is forecast to take {duration_text(train_s)}{cpu} (a rough forecast from "
                   f"per-sample and per-step costs {basis}).")
    if cpus and cfg.threads > cpus:
        out.append(f"Threads: {cfg.threads} threads on {cpus} CPUs take turns on them, and threads that wait for "
                   "each other at every batch make training slower, not faster (measured on 2 CPUs: 64 threads took "
                   f"about 1 s for each batch of 64 rows). Use at most {cpus}.")
    return out
