"""The setting expected to do best within a memory budget.

Candidates are the user's config with the memory and speed knobs varied (mode,
precision, parser, solver, batch size, hashing; the solver includes FTRL, which
changes the loss and so ranks after the user's own for accuracy; gradient checkpointing
for mlp-numpy, ranked as slower since it recomputes layers). Each is priced by the calibrated
memory model; those predicted to fit are ranked by the chosen objective:

- accuracy: settings that keep the data as it is first (no float16 rounding, no
  hashing collisions), then the faster of those;
- throughput: the fastest first (compiled parser and solver, then binary passes).

The ranking is a prior, not a measurement, and says so (``basis``). Where the run
history holds a completed run with the same knobs, its measured figures are shown
next to the prediction. ``verify`` runs the pick and reports predicted vs measured.

A forecast can fall short of the measured peak, so the pick leaves the model's own measured
margin (``margin``; docs/memory-model.md).
"""

from __future__ import annotations

import itertools

from svmcore.data.sources import Source, check_lean, check_trainable, n_test_rows, scan
from svmcore.predict.margin import forecast_margin, statement
from svmcore.predict.model import Calibration, data_shape, predict
from svmcore.spec.result import Forecast
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import ConfigError, SvmcoreError
from svmcore.spec.regularisation import regularisation
from svmcore.spec.choices import Mode
from svmcore.spec.knobs import KNOBS
from svmcore.spec.registry import LINEAR_MODELS

SPEED_RANK = {  # higher is faster, as measured in bench/results (per sample, sparse text)
    ("memory", "sklearn", "sklearn"): 2, ("memmap", "sklearn", "sklearn"): 3, ("stream", "sklearn", "sklearn"): 0,
    ("memory", "native", "sklearn"): 2, ("memmap", "native", "sklearn"): 3, ("stream", "native", "sklearn"): 1,
    ("memory", "sklearn", "native"): 5, ("memmap", "sklearn", "native"): 6, ("stream", "sklearn", "native"): 2,
    # FTRL is compiled like the native SGD; bench/results/ftrl.md measured it about as fast per sample
    ("memory", "sklearn", "ftrl"): 5, ("memmap", "sklearn", "ftrl"): 6, ("stream", "sklearn", "ftrl"): 2,
    ("memory", "native", "ftrl"): 5, ("memmap", "native", "ftrl"): 6, ("stream", "native", "ftrl"): 5,
    # the native parser and solver together; in stream mode on a svmlight file this is the lean path
    # (bench/results/compare-lean-1000000.md)
    ("memory", "native", "native"): 5, ("memmap", "native", "native"): 6, ("stream", "native", "native"): 6,
}


def candidates(base: dict) -> list[RunConfig]:
    cfg0 = validate(base)
    linear = cfg0.model in LINEAR_MODELS
    modes = (Mode.MEMORY, Mode.MEMMAP, Mode.STREAM)  # those a model cannot train in fail validation below
    hashing = [cfg0.hashing_bits] + [b for b in (20, 18, 16) if b < (cfg0.hashing_bits or (cfg0.features - 1).bit_length())]
    depth = len(cfg0.hidden_sizes)
    checkpoints = sorted({cfg0.checkpoint, 2, max(2, round(depth ** 0.5))}) \
        if cfg0.model in KNOBS["checkpoint"].applies_to and depth >= 2 else [cfg0.checkpoint]
    out, seen = [], set()
    pairs = list(itertools.product(("sklearn", "native"), ("sklearn", "native", "ftrl") if linear else (cfg0.solver,)))
    for mode, prec, (parser, solver), batch, bits, ckpt in itertools.product(
            modes, ("float64", "float32", "float16"), pairs, sorted({cfg0.batch_size, 256, 4096}), hashing,
            checkpoints):
        try:
            cfg = validate(base, mode=mode, precision=prec, parser=parser, solver=solver, batch_size=batch,
                           hashing_bits=bits, checkpoint=ckpt)
        except ConfigError:
            continue
        key = cfg.to_json()
        if key not in seen:
            seen.add(key)
            out.append(cfg)
    return out


OBJECTIVES = ("accuracy", "balanced_accuracy", "throughput")


def _budgeted(cfg: RunConfig, fc: Forecast) -> dict:
    """The forecast with ``predicted_peak_mb`` as the budget sees it. A data-parallel
    run's own figure is its coordinator's; on this machine (a LocalCluster) the budget
    must hold every process, on a cluster's machines the largest one."""
    par = fc.parallel
    if not par:
        return fc.to_dict()
    peak = par.total_mb if cfg.scheduler is None else max(par.coordinator_mb, par.per_worker_mb)
    return dict(fc.to_dict(), predicted_peak_mb=peak, coordinator_peak_mb=fc.predicted_peak_mb)


def _accuracy_cost(cfg: RunConfig, base: RunConfig) -> int:
    cost = 2 if cfg.precision == "float16" else 0
    if not cfg.shuffle:
        cost += 3  # file order can leave the model on one class (balanced accuracy near 0.5)
    if cfg.hashing_bits != base.hashing_bits:
        cost += 1 + (20 - cfg.hashing_bits) // 2
    if cfg.solver_entry.loss != base.solver_entry.loss:
        cost += 1  # another loss (logistic, not hinge) and regularisation than the user chose
    return cost


def recommend(base: dict, budget_mb: float, cal: Calibration, objective: str = "accuracy",
              cache_dir: str | None = None, history: list | None = None,
              reference_errors: list[float] | None = None) -> dict:
    """The setting expected to do best for ``objective`` within ``budget_mb``. ``history``
    (this machine's run records) and ``reference_errors`` (the reference machine's
    measured under-forecasts) give the margin a forecast needs to fit with confidence."""
    if objective not in OBJECTIVES:
        raise ConfigError("objective", f"choose one of {', '.join(OBJECTIVES)}")
    cfg0 = validate(base)
    info = scan(Source(cfg0), cache_dir)
    shapes: dict[int, object] = {}
    priced = []
    for cfg in candidates(base):
        try:  # never recommend what admission would refuse (the lean path on a file that is not svmlight too)
            check_trainable(info, cfg)
            check_lean(cfg)
        except SvmcoreError:
            continue
        if cfg.hashing_bits not in shapes:  # one scan per width, not one per candidate
            shapes[cfg.hashing_bits] = data_shape(cfg, cache_dir)
        shape = shapes[cfg.hashing_bits]
        pr = _budgeted(cfg, predict(cfg, cal, shape))
        priced.append((cfg, pr))
    if not priced:
        check_trainable(info, cfg0)  # says why, in the data's words
        raise ConfigError("budget", "no candidate setting can train on this data")
    margin = forecast_margin(history, reference_errors, cal.fit_error)
    margin_info = {"pct": None if margin.rel is None else round(100 * margin.rel, 1), "bound": margin.bound,
                   "n": margin.n, "basis": margin.basis, "confidence": margin.confidence}
    fits = [(c, p) for c, p in priced if p["predicted_peak_mb"] <= budget_mb]
    if not fits:
        smallest = min(priced, key=lambda cp: cp[1]["predicted_peak_mb"])
        return {"budget_mb": budget_mb, "objective": objective, "fits": False,
                "message": f"no setting is predicted to fit {budget_mb:g} MiB; the smallest is "
                           f"{smallest[1]['predicted_peak_mb']:.0f} MiB",
                "smallest": {"config": _changed(smallest[0], cfg0), "prediction": smallest[1]},
                "candidates": len(priced), "margin": margin_info}

    def speed(c: RunConfig) -> int:
        return SPEED_RANK.get((c.mode, c.parser if c.mode_entry.parses_text or not c.is_builtin else "sklearn",
                               c.solver), 0) + (1 if c.batch_size >= 1024 else 0) - (1 if c.checkpoint > 1 else 0)

    if objective != "throughput":
        key = lambda cp: (_accuracy_cost(cp[0], cfg0), -speed(cp[0]), cp[1]["predicted_peak_mb"])  # noqa: E731
    else:
        key = lambda cp: (-speed(cp[0]), _accuracy_cost(cp[0], cfg0), cp[1]["predicted_peak_mb"])  # noqa: E731
    confident = [(c, p) for c, p in fits if statement(p["predicted_peak_mb"], budget_mb, margin)[0]]
    pool = sorted(confident or fits, key=key)
    best, pred = pool[0]
    sure, said = statement(pred["predicted_peak_mb"], budget_mb, margin)
    upper = margin.upper_mb(pred["predicted_peak_mb"])
    measured = None
    for rec in history or []:
        try:
            if rec.status.value == "completed" and validate(rec.config) == best:
                measured = measured_of(rec)
        except ConfigError:  # a run of a knob value since retired (numba) is not this setting
            continue
    return {
        "budget_mb": budget_mb, "objective": objective, "fits": True,
        "config": best.to_dict(), "changed": _changed(best, cfg0),
        "predicted_peak_mb": pred["predicted_peak_mb"], "prediction": pred,
        "confident": sure, "upper_mb": None if upper is None else round(upper, 1),
        "margin": margin_info, "statement": said,
        "basis": ("ranked by a prior: " + ("keeps the data exact (no float16, no hashing) and shuffled, then fastest"
                                            if objective != "throughput" else "fastest compiled path first")
                  + "; memory from the calibrated model"),
        "measured_before": measured,
        # the memory knobs varied here leave the training rows, and so an auto alpha, as they are
        "regularisation": regularisation(best, info.rows if best.test_file else info.rows - n_test_rows(info.rows),
                                         info.class_counts),
        "candidates": len(priced), "fitting": len(fits), "fitting_with_confidence": len(confident),
        "runners_up": [{"changed": _changed(c, cfg0), "predicted_peak_mb": p["predicted_peak_mb"]}
                       for c, p in pool[1:4]],
    }


def measured_of(rec) -> dict:
    """A run of the recommended setting as measured: its run peak (a data-parallel run's: all its
    processes, sampled) and scores."""
    s, peak = rec.summary, rec.summary.run_peak
    return {"run_id": rec.id, "peak_mb": peak.mb, "peak_exact": peak.exact, "accuracy": s.accuracy,
            "balanced_accuracy": s.balanced_accuracy, "samples_per_s": s.samples_per_s}


def _changed(cfg: RunConfig, base: RunConfig) -> dict:
    a, b = cfg.to_dict(), base.to_dict()
    return {k: v for k, v in a.items() if b.get(k) != v}
