"""``svmcore estimate``, ``recommend`` and ``calibrate``: the memory model from the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys

from svmcore.app.reference import reference_under_forecasts
from svmcore.cli.common import add_knob_flags, knob_values
from svmcore.cli.run import execute
from svmcore.engine import interrupts
from svmcore.engine import admission
from svmcore.predict import calibration as calib
from svmcore.predict.launch import admit, forecast_of
from svmcore.predict.model import duration_text
from svmcore.predict.recommend import recommend
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store


def calibration(home: str, force: bool = False, quiet: bool = False):
    cal = None if force else calib.load_calibration(home)
    if cal is None:
        def progress(i, n, cfg):
            if not quiet and cfg is not None:
                print(f"calibrating the memory model on this machine, once: run {i + 1}/{n}", file=sys.stderr)
        cal = calib.calibrate(home, progress)
    return cal


def cmd_predict(args, home: str) -> int:
    if args.command == "calibrate":
        cal = calibration(home, force=True, quiet=args.json)
        print(json.dumps(cal.to_dict()) if args.json else
              f"calibrated from {cal.runs} runs; floors (MiB): "
              + ", ".join(f"{k} {v:.0f}" for k, v in cal.floors.items()))
        return 0
    values = knob_values(args)
    cache_dir = os.path.join(home, "cache")
    # what a launch would refuse, estimate refuses too, before calibrating (e.g. raw text on the lean path)
    admitted = admission.admit(values, cache_dir) if args.command == "estimate" else None
    cal = calibration(home, quiet=args.json)
    if admitted is not None:
        pred = forecast_of(admitted, cal).forecast
        if pred is None:
            print("svmcore: error: the memory model failed to price this run (logged above)", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(pred.to_dict()))
        else:
            par = pred.parallel
            print(f"predicted exact peak: {pred.predicted_peak_mb:.0f} MiB, in {pred.peak_phase}"
                  + (" (the run's own process, which coordinates)" if par else ""))
            if par:
                print(f"data-parallel on {par.workers} Dask workers: {par.per_worker_mb:.0f} MiB each, "
                      f"{par.total_mb:.0f} MiB in total ({par.basis})")
            if pred.predicted_train_s is not None:
                print(f"train phase: {duration_text(pred.predicted_train_s)} of CPU time "
                      "(a rough forecast from the calibration runs' per-sample and per-step costs)")
            print("  " + ", ".join(f"{k} {v:.0f}" for k, v in pred.parts.items() if v) + " (MiB)")
            for ph, mb in pred.phases_mb.items():
                print(f"  {ph:9s} {mb:8.0f} MiB")
        return 0
    store = Store(home)
    result = recommend(values, args.budget_mb, cal, args.objective, cache_dir, store.list_runs(damaged=False),
                       reference_under_forecasts())
    code = 0 if result["fits"] else 1
    if result["fits"] and args.verify:
        run = execute(admit(result["config"], home), home, show_progress=not args.json and sys.stderr.isatty())
        interrupts.check()  # cancelled by a signal: the command ends as interrupted
        s = run.summary
        peak = s.run_peak  # a data-parallel run: all its processes
        measured = peak.mb
        result["verified"] = {
            "run_id": run.run_id, "status": run.status.value, "peak_mb": measured, "peak_exact": peak.exact,
            "peak_text": peak.text(), "peak_rss_mb": s.peak_rss_mb, "accuracy": s.accuracy,
            "samples_per_s": s.samples_per_s,
            "within_budget": bool(measured is not None and measured <= args.budget_mb),
            "prediction_error": (result["predicted_peak_mb"] / measured - 1) if measured else None}
        code = 0 if result["verified"]["within_budget"] and run.status == RunStatus.COMPLETED else 1
    if args.json:
        print(json.dumps(result))
    elif not result["fits"]:
        print(result["message"])
    else:
        print(f"best for {args.objective} within {args.budget_mb:g} MiB "
              f"(of {result['fitting']} fitting / {result['candidates']} candidates):")
        print("  " + " ".join(f"--{k.replace('_', '-')}={v}" for k, v in result["changed"].items()) or "  (as given)")
        print(f"  predicted exact peak {result['predicted_peak_mb']:.0f} MiB; {result['basis']}")
        print(f"  {result['statement']}")
        reg = result.get("regularisation")
        if reg:
            print(f"  regularisation: {reg['name']} {reg['value']:.3g} ({reg['why']})")
        if "verified" in result:
            v = result["verified"]
            print(f"  verified: run {v['run_id']} {v['status']}, {'exact ' if v['peak_exact'] else ''}peak "
                  f"{v['peak_text']} "
                  f"({'within' if v['within_budget'] else 'OVER'} budget), accuracy {v['accuracy']}")
    return code


def add_parser(sub) -> None:
    es = sub.add_parser("estimate", help="predict a run's exact peak and its parts before running it")
    add_knob_flags(es)
    es.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    es.add_argument("--json", action="store_true")
    es.set_defaults(handler=cmd_predict, writes_home=True)
    rc = sub.add_parser("recommend", help="the setting expected to do best within a memory budget")
    add_knob_flags(rc)
    rc.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    rc.add_argument("--budget-mb", dest="budget_mb", type=float, required=True, metavar="MiB")
    rc.add_argument("--objective", choices=["accuracy", "balanced_accuracy", "throughput"], default="accuracy")
    rc.add_argument("--verify", action="store_true", help="run the recommended setting and compare")
    rc.add_argument("--json", action="store_true")
    rc.set_defaults(handler=cmd_predict, writes_home=True)
    ca = sub.add_parser("calibrate", help="(re)fit the memory model on this machine: a few dozen small real runs, one "
                            "at a time, each counted as it starts (minutes, not seconds; Train shows the time left)")
    ca.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    ca.add_argument("--json", action="store_true")
    ca.set_defaults(handler=cmd_predict, writes_home=True)
