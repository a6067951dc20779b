"""``svmcore doctor RUN_ID``: why a run ran out of memory or went over a budget, and
which remedies act on the phase that held the peak; for any run, whether its trouble is a
transient peak, growth pass after pass or a floor (``svmcore.app.doctor``)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from svmcore.app.doctor import diagnose, text
from svmcore.app.reference import remedies_reference
from svmcore.cli.common import EXIT_BAD_INPUT, run_id_arg
from svmcore.predict.calibration import load_calibration
from svmcore.spec.knobs import KNOBS
from svmcore.store.sqlite import Store


def cmd_doctor(args, home: str) -> int:
    store = Store(home)
    rec = store.get_run(args.run_id)
    problem = (f"no run with id {args.run_id}" if rec is None else
               f"run {args.run_id} is still {rec.status.value}; diagnose it when it ends"
               if not rec.status.is_finished() else None)
    if problem:
        print(f"svmcore: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    d = diagnose(rec, args.budget, load_calibration(home), remedies_reference(), os.path.join(home, "cache"))
    print(json.dumps(d) if args.json else text(d))
    return 0


MIN_BUDGET_MB = 16  # below the lean path's floor (~30 MiB): nothing fits, and doctor says why


def budget_arg(text_: str) -> float:
    """A budget in MiB, up to the largest memory cap (``fit`` runs under the budget as its cap)."""
    most = KNOBS["memory_cap_mb"].max
    try:
        value = float(text_)
    except ValueError:
        value = float("nan")
    if not MIN_BUDGET_MB <= value <= most:
        raise argparse.ArgumentTypeError(f"a budget is a number of MiB from {MIN_BUDGET_MB} to {most:,} (the largest "
                                         f"memory cap); got {text_[:40]!r}")
    return value


def add_parser(sub) -> None:
    p = sub.add_parser("doctor", help="diagnose a run that ran out of memory or went over a budget, or grows "
                                      "pass after pass")
    p.add_argument("run_id", type=run_id_arg, help="the run to diagnose")
    p.add_argument("--budget", type=budget_arg, default=None, metavar="MB",
                   help="memory budget in MiB (default: an oom run's cap)")
    p.add_argument("--json", action="store_true", help="print the diagnosis as one JSON line")
    p.set_defaults(handler=cmd_doctor)
