"""What to say before a launch: the forecast stored with a run, a lower bound before
calibration, and the warnings (memory above what is available or the cap, a long
train phase)."""

from __future__ import annotations

import dataclasses
import logging
import os

from svmcore.predict.calibration import load_calibration
from svmcore.engine.runner import resolve_cap
from svmcore.predict.floors import cap_below_floor, floor_for, library_files_mb
from svmcore.predict.model import (
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
from svmcore.spec.units import MiB, apart

log = logging.getLogger(__name__)


def forecast(cfg: RunConfig, home: str) -> dict | None:
    """The compact prediction stored with a run, or None when this machine has no
    calibration yet (a run never waits for one) or the data cannot be described."""
    cal = load_calibration(home)
    if cal is None:
        return None
    try:
        pred = predict(cfg, cal, cache_dir=os.path.join(home, "cache"))
    except SvmcoreError as e:  # bad data or knobs: the worker reports them properly; a forecast is optional
        log.info("no forecast for this run: %s", e)
        return None
    except Exception:  # a bug in the model would silently remove every forecast: say so
        log.exception("the memory model failed to price this run; it runs without a forecast")
        return None
    return {k: pred[k] for k in ("predicted_peak_mb", "peak_phase", "parts", "predicted_train_s")} | {
        "phases_mb": {k: v["predicted_mb"] for k, v in pred["phases"].items()}}


LONG_TRAIN_S = 180.0  # a forecast train phase longer than this is worth a warning


# Seconds per unit of time_features, fitted on the calibration runs of the 2-core
# development machine (svmcore 2026, scikit-learn 1.9): the time forecast of a machine
# without its own calibration, and labelled as such.
REFERENCE_TIME_COEFS = {
    "const": 0.0427, "parse_numba": 0.0, "parse_sklearn": 8.82e-07, "sample_kernel-approx": 1.19e-09,
    "sample_linear-svm": 5.66e-09, "sample_linear-svm+numba": 5.29e-08, "sample_mlp": 2.28e-09,
    "step_kernel-approx": 1.04e-05, "step_linear-svm": 6.5e-09, "step_linear-svm+numba": 1.57e-09,
    "step_mlp": 1.92e-08, "svm": 1.96e-08,
    "fresh_mlp": 0.0,  # (fitted before the time model priced it apart: within step_mlp there)
}


def lower_bound(cfg: RunConfig, shape: Shape) -> dict:
    """Without a calibration: the largest phase's parts, each byte counted once, with
    no floor and no allocator overhead. Every run needs at least this much."""
    p = parts(cfg, shape)
    phases = {ph: {k: v / MiB for k, v in f.items() if not k.startswith("const_")}
              for ph, f in features(cfg, p).items()}
    peak_phase = max(phases, key=lambda ph: sum(phases[ph].values()))
    return {"peak_mb": round(sum(phases[peak_phase].values()), 1), "peak_phase": peak_phase,
            "parts": {k: round(v, 1) for k, v in group_parts(phases[peak_phase]).items()}}


def launch_forecast(cfg: RunConfig, home: str, shape: Shape | None = None) -> dict:
    """What a warning before launch needs: the calibrated forecast of the exact peak
    and of the train phase's seconds when this machine has a calibration; otherwise
    the lower bound of the peak (``lower_bound`` True) and the time at the reference
    machine's rates (``time_basis`` 'reference')."""
    shape = shape or data_shape(cfg, os.path.join(home, "cache"))
    cal = load_calibration(home)
    floor, floor_basis = floor_for(cfg, cal)
    # the cap the run will have, and what of its RSS a cgroup cap does not count
    common = {"floor_mb": floor, "floor_basis": floor_basis, "cap_kind": resolve_cap(cfg)[0],
              "library_files_mb": library_files_mb(cfg), "width": shape.width,
              "narrower": narrower(cfg, cal, shape)}
    if cal is not None:
        pred = predict(cfg, cal, shape)
        parts_mb = {k: v for k, v in pred["parts"].items() if k != "floor"}
        return {"peak_mb": pred["predicted_peak_mb"], "peak_phase": pred["peak_phase"], "lower_bound": False,
                "parts": parts_mb, "train_s": pred["predicted_train_s"], "time_basis": "calibrated", **common}
    lb = lower_bound(cfg, shape)
    return {"peak_mb": lb["peak_mb"], "peak_phase": lb["peak_phase"], "lower_bound": True, "parts": lb["parts"],
            "train_s": round_or_none(predict_train_s(cfg, shape, REFERENCE_TIME_COEFS)), "time_basis": "reference",
            **common}


LARGE_MODEL_MB = 1024.0  # a model and its optimiser state this big are worth a word before launch, however much is free
NARROWER_BITS = 16  # the columns an MLP's warning prices instead of a wide input


def narrower(cfg: RunConfig, cal, shape: Shape) -> dict | None:
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
    peak = predict(fewer, cal, folded)["predicted_peak_mb"] if cal is not None else lower_bound(fewer, folded)["peak_mb"]
    return {"hashing_bits": NARROWER_BITS, "peak_mb": round(peak, 1)}


def _large_model(cfg: RunConfig, forecast: dict, model_mb: float) -> str:
    """The warning for a model (and its optimiser state) of ``LARGE_MODEL_MB`` or more."""
    words = (f"Memory: the model and its optimiser state alone are forecast to hold {model_mb:,.0f} MiB in the "
             f"{forecast['peak_phase']} phase" + (" (a lower bound; calibrate for a forecast)"
                                                  if forecast["lower_bound"] else ""))
    if cfg.model in MLP_MODELS and forecast.get("width"):
        best = ", scikit-learn's copy of the best ones" if cfg.model == Model.MLP else ""
        words += (f": an MLP's first layer has a weight for each of its {forecast['width']:,} input columns and "
                  f"{cfg.hidden_sizes[0]:,} hidden units, kept several times over (the weights{best} and Adam's two "
                  "moments) and more during each step")
    fewer = forecast.get("narrower")
    if fewer:
        words += (f"; with hashing_bits {fewer['hashing_bits']} ({1 << fewer['hashing_bits']:,} columns) the "
                  f"forecast peak is about {fewer['peak_mb']:,.0f} MiB")
    return words + "."


def launch_warnings(cfg: RunConfig, forecast: dict, available_bytes: int | None,
                    cpus: int | None = None) -> list[str]:
    """One sentence per reason to think twice before launching: the forecast peak above
    the memory available now or above the run's memory cap (a cap below the floor, what
    the libraries alone hold, says so instead; under a cgroup cap, the forecast of what the
    run's cgroup is charged: the peak less the library files other processes hold), a train phase forecast longer than
    ``LONG_TRAIN_S``, or more threads than the ``cpus`` this machine gives the run.
    ``forecast`` is ``launch_forecast``'s. Pure."""
    out = []
    peak = forecast["peak_mb"]
    shown = apart(peak, cfg.memory_cap_mb)[0] if cfg.memory_cap_mb is not None else f"{peak:,.0f}"
    if forecast["lower_bound"]:
        what = (f"needs at least {shown} MiB (a lower bound: the parts' sizes alone, without the "
                "interpreter's floor or any overhead; calibrate for a forecast)")
    else:
        what = f"is forecast to peak at {shown} MiB (exact peak, calibrated memory model)"
    parts_mb = {k: v for k, v in (forecast.get("parts") or {}).items() if v}
    if parts_mb:
        big = max(parts_mb, key=parts_mb.get)
        what += f", most of it {big} ({parts_mb[big]:,.0f} MiB) in the {forecast['peak_phase']} phase"
    if available_bytes is not None and peak * MiB > available_bytes:
        out.append(f"Memory: this run {what}; this machine has {available_bytes / MiB:,.0f} MiB available now. "
                   "It may be killed by the kernel's out-of-memory killer or slow the machine down.")
    # a lower bound is the parts alone, without the floor and so without the library files: all of it is charged
    cgroup = (forecast.get("cap_kind") == "cgroup" and forecast.get("library_files_mb") is not None
              and not forecast["lower_bound"])
    below_floor = (cap_below_floor(cfg, forecast["floor_mb"], forecast.get("floor_basis", ""),
                                   forecast.get("cap_kind")) if forecast.get("floor_mb") is not None else None)
    # a cgroup cap limits what is charged to the run's group: its RSS less the library files others hold
    charged = max(0.0, peak - forecast["library_files_mb"]) if cgroup else peak
    if below_floor:
        out.append(below_floor)
    elif cfg.memory_cap_mb is not None and charged > cfg.memory_cap_mb:
        how = (f"; under a cgroup cap what counts is what the kernel charges to the run's cgroup, forecast at "
               f"{charged:,.0f} MiB (the peak less the {forecast['library_files_mb']:,.0f} MiB of library files that "
               "other processes already hold in memory, charged to their groups)" if cgroup else "")
        out.append(f"Memory: this run {what}{how}; its memory cap is {cfg.memory_cap_mb:,} MiB, so it will "
                   "likely end out of memory.")
    if parts_mb.get("model", 0.0) >= LARGE_MODEL_MB and not out:  # (a memory warning above names it already)
        out.append(_large_model(cfg, forecast, parts_mb["model"]))
    train_s = forecast.get("train_s")
    if train_s is not None and train_s > LONG_TRAIN_S:
        basis = ("fitted on this machine's calibration runs" if forecast["time_basis"] == "calibrated" else
                 "measured on a reference machine, not this one; calibrate for this machine's")
        cpu = " of CPU time" if forecast["time_basis"] == "calibrated" else ""
        out.append(f"Time: training alone is forecast to take {duration_text(train_s)}{cpu} (a rough forecast from "
                   f"per-sample and per-step costs {basis}).")
    if cpus and cfg.threads > cpus:
        out.append(f"Threads: {cfg.threads} threads on {cpus} CPUs take turns on them, and threads that wait for "
                   "each other at every batch make training slower, not faster (measured on 2 CPUs: 64 threads took "
                   f"about 1 s for each batch of 64 rows). Use at most {cpus}.")
    return out
