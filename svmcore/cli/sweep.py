"""``svmcore sweep``: a grid of settings, run one at a time here or one per Dask worker."""

from __future__ import annotations

import argparse
import json
import sys

from svmcore.cli.common import EXIT, add_knob_flags, knob_values
from svmcore.engine import interrupts
from svmcore.engine.recovery import recover
from svmcore.spec.errors import ConfigError
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from svmcore.sweeps.frontier import tradeoff_points
from svmcore.sweeps.grid import grid_label, parse_grid
from svmcore.sweeps.sweep import start_sweep

# here --scheduler is the sweep executor's cluster; a data-parallel run's own scheduler knob is
# still reachable as --grid scheduler=ADDRESS
OWN_FLAGS = ("scheduler",)


def cmd_sweep(args, home: str) -> int:
    grid = parse_grid(args.grid, whole=args.random is None)
    if not grid:
        raise ConfigError("grid", "give at least one --grid KNOB=V1,V2")
    if args.scheduler and args.executor != "dask":
        raise ConfigError("scheduler", "--scheduler is only used with --executor dask")
    store = Store(home)
    recover(store)
    sweep = None
    try:
        with interrupts.shielded():  # a signal waits until the sweep and its runs exist, then cancels them
            sweep = start_sweep(store, knob_values(args, skip=OWN_FLAGS), grid, args.executor, args.scheduler,
                                draws=args.random, seed=args.random_seed)
        for p in sweep.points:
            if p.error:
                print(f"skipped {grid_label(p.values)}: {p.error}", file=sys.stderr)
        while not sweep.wait(0.5):
            done, total = sweep.progress()
            if sys.stderr.isatty() and not args.json:
                sys.stderr.write(f"\rsweep {sweep.sweep_id}: {done}/{total} runs finished")
                sys.stderr.flush()
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (engine.interrupts)
        if sweep is None:
            raise
        sweep.cancel()
        sweep.wait(30)
    finally:
        if sweep is not None:
            sweep.close()
    executor, points = sweep.executor, sweep.points
    records = [store.get_run(i) for i in sweep.run_ids]
    pts = tradeoff_points(records)
    result = {"sweep_id": sweep.sweep_id, "grid": grid,
              "executor": executor.describe(),
              "runs": [{"run_id": r.id, "values": r.label, "status": r.status.value, "host": r.host,
                        "peak_rss_mb": r.summary.peak_rss_mb, "peak_mb": r.summary.run_peak.mb,
                        "peak_exact": r.summary.run_peak.exact,
                        "accuracy": r.summary.accuracy,
                        "balanced_accuracy": r.summary.balanced_accuracy,
                        "samples_per_s": r.summary.samples_per_s} for r in records],
              "skipped": [{"values": p.values, "reason": p.error} for p in points if p.error],
              "frontier": [p.run_id for p in pts if p.on_frontier]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"\nsweep {sweep.sweep_id}: {len(records)} runs")
        for r in result["runs"]:
            star = "*" if r["run_id"] in result["frontier"] else " "
            # the run's peak; a data-parallel run's is all its processes, sampled (marked ~)
            peak = f"{'' if r['peak_exact'] else '~'}{r['peak_mb']:.1f}" if r["peak_mb"] else "-"
            acc = f"{r['accuracy']:.4f}" if r["accuracy"] is not None else "-"
            print(f" {star} run {r['run_id']:>4}  {r['status']:9}  peak {peak:>8} MiB  acc {acc}  on {r['host']}  "
                  f"{r['values']}")
        print(" * on the memory/accuracy frontier" + ("; ~ all the run's processes, sampled sum (data-parallel)"
                                                      if any(not r["peak_exact"] for r in result["runs"]) else ""))
    if interrupts.received():
        return EXIT[RunStatus.CANCELLED]
    return 0 if all(r.status in (RunStatus.COMPLETED, RunStatus.OOM) for r in records) else 1


def add_parser(sub) -> None:
    sw = sub.add_parser("sweep", help="run a grid of settings, one run at a time (per Dask worker with --executor dask)")
    add_knob_flags(sw, skip=OWN_FLAGS)
    sw.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    sw.add_argument("--grid", action="append", default=[], metavar="KNOB=V1,V2",
                    help="a knob and the values to try; repeat for more knobs")
    sw.add_argument("--executor", choices=["local", "dask"], default="local",
                    help="local: one run at a time on this machine (default); dask: one task per run on a "
                         "dask.distributed cluster, one run per Dask worker at a time")
    sw.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                    help="the Dask scheduler (with --executor dask); unset: a local cluster on this machine")
    sw.add_argument("--random", type=int, default=None, metavar="N",
                    help="a random search: N different combinations of the grid's values drawn at random (the grid "
                         "may then have more combinations than a sweep runs)")
    sw.add_argument("--random-seed", type=int, default=0, metavar="S", help="the draw's seed (default 0)")
    sw.add_argument("--json", action="store_true")
    sw.set_defaults(handler=cmd_sweep)
