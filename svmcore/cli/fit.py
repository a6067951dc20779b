"""``svmcore fit --budget MB [knobs...]``: remedy, launch under the budget as a cap,
diagnose and repeat until a run fits (``svmcore.app.fit``). Exit 0 when a run completed
within the budget, 3 when none did, 2 when an attempt failed on its input (a full disk
included), 4 when a signal cancelled it (the attempts so far kept)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from svmcore.app.headlines import change_text
from svmcore.app.fit import capped, fit
from svmcore.app.reference import remedies_reference
from svmcore.cli.common import EXIT, EXIT_BAD_INPUT, add_knob_flags, knob_values
from svmcore.cli.doctor import budget_arg
from svmcore.cli.run import execute
from svmcore.engine import interrupts
from svmcore.engine import admission
from svmcore.predict.launch import admit
from svmcore.predict.calibration import load_calibration
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store

EXIT_NO_FIT = 3


def cmd_fit(args, home: str) -> int:
    cache = os.path.join(home, "cache")
    values = knob_values(args)
    admission.admit(values, cache)  # exit 2 and nothing stored if the knobs cannot run at all
    capped(values, args.budget)  # nor under the budget as their cap
    store = Store(home)
    launched: list = []

    def launch(cfg, parent, change):
        run = execute(admit(cfg, home), home, show_progress=False, on_create=lambda run_id: store.set_lineage(run_id, parent, change))
        rec = store.get_run(run.run_id)
        if not rec.status.is_finished():  # the store could not record the outcome (a full disk): the run's own
            rec = dataclasses.replace(rec, status=run.status, summary=run.summary)
        launched.append(rec)
        if not args.json:
            peak = rec.summary.run_peak
            print(f"run {rec.id}: {rec.status.value}, {peak.label} {peak.text()}", file=sys.stderr)
        interrupts.check()  # cancelled by a signal: no further attempt
        return rec

    cal = load_calibration(home)
    if cal is None and not args.json:
        print("svmcore: warning: no calibration on this machine: forecasts are lower bounds, so more runs may "
              "be needed (svmcore calibrate)", file=sys.stderr)
    try:
        result = fit(values, args.budget, launch, cal, remedies_reference(), cache,
                     progress=None if args.json else lambda t: print(t, file=sys.stderr))
    except interrupts.Interrupted as e:
        interrupts.end_children()
        return _cancelled(e, launched, args.json)
    if args.json:
        print(json.dumps(result))
    else:
        print(("FITS: " if result["fits"] else "DOES NOT FIT: ") + result["summary"])
        for a in result["attempts"]:
            changes = "; ".join(f"{change_text(c['knobs']) or 'nothing (rerun as is)'} because {c['why']}"
                                for c in a["change"]["changes"]) or "nothing (the knobs as given)"
            print(f"  run {a['run_id']}" + (f" (after run {a['parent_run_id']})" if a["parent_run_id"] else "")
                  + f": {a['status']} at {a['peak_mb'] or 0:,.1f} MiB "
                  f"{'exact' if a['peak_exact'] else 'in all its processes, sampled'} (forecast {a['forecast_mb']:,.0f}); "
                  f"changed: {changes}")
    if result["fits"]:
        return 0
    last = launched[-1] if launched else None
    if last is not None and last.status == RunStatus.FAILED and last.summary.error and last.summary.error.bad_input:
        return EXIT_BAD_INPUT  # its input, or a full disk, stopped it, as `run` says of the same run
    return EXIT_NO_FIT


def _cancelled(e: interrupts.Interrupted, launched: list, as_json: bool) -> int:
    """A fit a signal stopped: one line (or one JSON object), the attempts so far kept in the history."""
    kept = [{"run_id": r.id, "status": r.status.value, "peak_mb": r.summary.peak_rss_mb} for r in launched]
    if as_json:
        print(json.dumps({"fits": False, "cancelled": True, "signal": e.signal_name, "attempts": kept}))
    else:
        runs = ", ".join(f"run {a['run_id']} {a['status']}"
                         + (f" (exact peak {a['peak_mb']:,.1f} MiB)" if a["peak_mb"] else "") for a in kept)
        print(f"fit cancelled by {e.signal_name} after {len(kept)} run{'s' if len(kept) != 1 else ''}"
              + (f", kept in the history: {runs}" if kept else ""))
    return EXIT[RunStatus.CANCELLED]


def add_parser(sub) -> None:
    p = sub.add_parser("fit", help="change knobs and rerun until a run fits a memory budget")
    p.add_argument("--budget", type=budget_arg, required=True, metavar="MB", help="memory budget in MiB")
    add_knob_flags(p)
    p.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the result as one JSON line")
    p.set_defaults(handler=cmd_fit)
