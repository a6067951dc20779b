"""Command line: ``python -m svmcore run|sweep|data|runs ...``.

Run flags are generated from the knob registry. Exit status of ``run``:
0 completed, 1 failed, 2 bad input, 3 oom, 4 cancelled.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import signal
import sys
import time

from .config import RunConfig, validate
from .errors import SvmcoreError
from .knobs import KNOBS
from .store import RunStatus, Store, StoreError

EXIT = {RunStatus.COMPLETED: 0, RunStatus.FAILED: 1, RunStatus.OOM: 3, RunStatus.CANCELLED: 4,
        RunStatus.LOST: 1}
EXIT_BAD_INPUT = 2


def default_home() -> str:
    return os.environ.get("SVMCORE_HOME") or os.path.join(os.getcwd(), ".svmcore")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, no usage dump
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def add_knob_flags(p: argparse.ArgumentParser) -> None:
    for k in KNOBS.values():
        help_text = f"{k.help} [{k.describe_allowed()}; default {k.default}]"
        if k.type is bool:
            p.add_argument(k.flag, dest=k.name, action=argparse.BooleanOptionalAction,
                           default=argparse.SUPPRESS, help=help_text)
        else:
            p.add_argument(k.flag, dest=k.name, default=argparse.SUPPRESS, metavar=k.unit.upper() or "VALUE",
                           help=help_text.replace("%", "%%"))


def knob_values(args: argparse.Namespace) -> dict:
    return {k: getattr(args, k) for k in KNOBS if hasattr(args, k)}


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="svmcore", description="SVM Memory Lab: measured training runs.")
    p.add_argument("--home", default=None, help="data folder (default $SVMCORE_HOME or ./.svmcore)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="train once in a child process and measure it")
    add_knob_flags(r)
    r.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    r.add_argument("--json", action="store_true", help="print the summary as one JSON line at the end")

    sw = sub.add_parser("sweep", help="run a grid of settings, one run at a time (per Dask worker with --executor dask)")
    add_knob_flags(sw)
    sw.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    sw.add_argument("--grid", action="append", default=[], metavar="KNOB=V1,V2",
                    help="a knob and the values to try; repeat for more knobs")
    sw.add_argument("--executor", choices=["local", "dask"], default="local",
                    help="local: one run at a time on this machine (default); dask: one task per run on a "
                         "dask.distributed cluster, one run per Dask worker at a time")
    sw.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                    help="the Dask scheduler (with --executor dask); unset: a local cluster on this machine")
    sw.add_argument("--json", action="store_true")

    es = sub.add_parser("estimate", help="predict a run's exact peak and its parts before running it")
    add_knob_flags(es)
    es.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    es.add_argument("--json", action="store_true")
    rc = sub.add_parser("recommend", help="the setting expected to do best within a memory budget")
    add_knob_flags(rc)
    rc.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    rc.add_argument("--budget-mb", dest="budget_mb", type=float, required=True, metavar="MiB")
    rc.add_argument("--objective", choices=["accuracy", "throughput"], default="accuracy")
    rc.add_argument("--verify", action="store_true", help="run the recommended setting and compare")
    rc.add_argument("--json", action="store_true")
    ca = sub.add_parser("calibrate", help="(re)fit the memory model on this machine (~2-3 minutes)")
    ca.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    ca.add_argument("--json", action="store_true")

    d = sub.add_parser("data", help="make or inspect datasets")
    dsub = d.add_subparsers(dest="data_command", required=True, parser_class=_Parser)
    mk = dsub.add_parser("make", help="write a synthetic dataset without holding it in memory")
    mk.add_argument("kind", choices=["sparse-text", "dense"])
    mk.add_argument("--rows", default="100000")
    mk.add_argument("--features", default=None)
    mk.add_argument("--nnz-per-row", dest="nnz_per_row", default="50")
    mk.add_argument("--seed", default="0")
    mk.add_argument("--out", required=True)
    mk.add_argument("--format", choices=["svmlight", "npz", "text"], default="svmlight")
    ins = dsub.add_parser("inspect", help="rows, features, nonzeros, classes and size in memory")
    ins.add_argument("dataset")
    ins.add_argument("--json", action="store_true")

    kn = sub.add_parser("knobs", help="list every knob: allowed values, default, what it trades")
    kn.add_argument("--markdown", action="store_true", help="as a Markdown table (the README's)")

    runs = sub.add_parser("runs", help="the run history")
    rsub = runs.add_subparsers(dest="runs_command", required=True, parser_class=_Parser)
    ls = rsub.add_parser("list")
    ls.add_argument("--json", action="store_true")
    show = rsub.add_parser("show")
    show.add_argument("id", type=int)
    show.add_argument("--json", action="store_true")
    ex = rsub.add_parser("export")
    ex.add_argument("id", type=int)
    ex.add_argument("--format", choices=["csv", "json"], default="json")
    de = rsub.add_parser("delete")
    de.add_argument("id", type=int)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    home = getattr(args, "home_sub", None) or args.home or default_home()
    try:
        if args.command == "run":
            return cmd_run(args, home)
        if args.command == "sweep":
            from .sweep import cmd_sweep
            return cmd_sweep(args, home)
        if args.command == "data":
            return cmd_data(args, home)
        if args.command in ("estimate", "recommend", "calibrate"):
            return cmd_predict(args, home)
        if args.command == "knobs":
            print(knobs_table(markdown=args.markdown))
            return 0
        return cmd_runs(args, home)
    except (SvmcoreError, StoreError) as e:
        print(f"svmcore: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 1


# ---------------------------------------------------------------- estimate, recommend

def calibration(home: str, force: bool = False, quiet: bool = False):
    from . import estimate
    cal = None if force else estimate.load_calibration(home)
    if cal is None:
        def progress(i, n, cfg):
            if not quiet and cfg is not None:
                print(f"calibrating the memory model on this machine, once: run {i + 1}/{n}", file=sys.stderr)
        cal = estimate.calibrate(home, progress)
    return cal


def cmd_predict(args, home: str) -> int:
    from . import estimate
    if args.command == "calibrate":
        cal = calibration(home, force=True, quiet=args.json)
        print(json.dumps(cal.to_dict()) if args.json else
              f"calibrated from {cal.runs} runs; floors (MiB): "
              + ", ".join(f"{k} {v:.0f}" for k, v in cal.floors.items()))
        return 0
    values = knob_values(args)
    cfg = validate(values)
    cal = calibration(home, quiet=args.json)
    cache_dir = os.path.join(home, "cache")
    if args.command == "estimate":
        pred = estimate.predict(cfg, cal, cache_dir=cache_dir)
        if args.json:
            print(json.dumps(pred))
        else:
            print(f"predicted exact peak: {pred['predicted_peak_mb']:.0f} MiB, in {pred['peak_phase']}")
            if pred.get("predicted_train_s") is not None:
                print(f"train phase: {estimate.duration_text(pred['predicted_train_s'])} "
                      "(a rough forecast from the calibration runs' per-sample and per-step costs)")
            print("  " + ", ".join(f"{k} {v:.0f}" for k, v in pred["parts"].items() if v) + " (MiB)")
            for ph, v in pred["phases"].items():
                print(f"  {ph:9s} {v['predicted_mb']:8.0f} MiB")
        return 0
    from .recommend import recommend
    store = Store(home)
    result = recommend(values, args.budget_mb, cal, args.objective, cache_dir, store.list_runs())
    code = 0 if result["fits"] else 1
    if result["fits"] and args.verify:
        from .datasets import preflight
        best = validate(result["config"])
        preflight(best, cache_dir)
        run = execute(best, home, show_progress=not args.json and sys.stderr.isatty())
        s = run.summary
        measured = s.get("peak_rss_mb")
        result["verified"] = {
            "run_id": run.run_id, "status": run.status.value, "peak_rss_mb": measured,
            "accuracy": s.get("accuracy"), "samples_per_s": s.get("samples_per_s"),
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
        if "verified" in result:
            v = result["verified"]
            print(f"  verified: run {v['run_id']} {v['status']}, exact peak {v['peak_rss_mb']:.0f} MiB "
                  f"({'within' if v['within_budget'] else 'OVER'} budget), accuracy {v['accuracy']}")
    return code


# ---------------------------------------------------------------- run

def _bar(run) -> str:
    snap = run.snapshot()
    progress = next((e for e in reversed(snap.events) if e["kind"] == "progress"), None)
    acc = next((e["accuracy"] for e in reversed(snap.events) if e["kind"] == "eval"), None)
    rss = snap.samples[-1].rss_bytes / 2**20 if snap.samples else 0
    peak = max((s.hwm_bytes for s in snap.samples), default=0) / 2**20
    frac = 0.0
    if progress and progress.get("total"):
        frac = min(1.0, progress["samples"] / progress["total"])
    width = 24
    filled = int(frac * width)
    parts = [f"[{'#' * filled}{'-' * (width - filled)}] {frac * 100:5.1f}%", f"{snap.phase or '...':9s}",
             f"RSS {rss:7.1f} MiB (peak {peak:7.1f})"]
    if progress:
        parts.append(f"{progress['samples']:,} samples")
    if acc is not None:
        parts.append(f"acc {acc:.3f}")
    parts.append(f"{snap.elapsed_s:6.1f}s")
    return "  ".join(parts)


def execute(cfg: RunConfig, home: str, show_progress: bool, sweep_id: int | None = None):
    """Start a run, show progress, cancel it on Ctrl-C/SIGTERM; returns the finished Run."""
    from .runner import Run, recover

    store = Store(home)
    recover(store)
    run = Run(store, cfg, sweep_id=sweep_id).start()
    previous = {}

    def on_signal(signum, frame):
        run.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, on_signal)
    try:
        while not run.is_finished():
            run.wait(0.25 if show_progress else 1.0)
            if show_progress:
                sys.stderr.write("\r" + _bar(run)[:160])
                sys.stderr.flush()
        if show_progress:
            sys.stderr.write("\r" + _bar(run)[:160] + "\n")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return run


def warn_before_launch(cfg: RunConfig, home: str) -> None:
    """Print on stderr why the run may not fit or may take long (never blocks it)."""
    from . import estimate
    from .hostinfo import available_memory_bytes

    for text in estimate.launch_warnings(cfg, estimate.launch_forecast(cfg, home), available_memory_bytes()):
        print(f"svmcore: warning: {text}", file=sys.stderr)


def describe(summary: dict) -> str:
    status = summary.get("status")
    lines = [f"run {summary.get('run_id')}: {status}"]
    if summary.get("error"):
        lines.append(f"  {summary['error'].get('type')}: {summary['error'].get('message')}"
                     + (f" (in phase {summary.get('phase')})" if summary.get("phase") else ""))

    def fmt(v, unit="", spec=".1f"):
        return "n/a" if v is None else f"{v:{spec}}{unit}"

    lines.append(f"  peak RSS {fmt(summary.get('peak_rss_mb'), ' MiB')} exact (kernel high-water mark); "
                 f"sampled max {fmt(summary.get('peak_sampled_mb'), ' MiB')} at {summary.get('sample_hz')} Hz; "
                 f"floor {fmt(summary.get('floor_mb'), ' MiB')}; cap {summary.get('cap')}")
    lines.append(f"  wall {fmt(summary.get('wall_s'), ' s')}, train {fmt(summary.get('train_s'), ' s')}, "
                 f"{fmt(summary.get('samples_per_s'), ' samples/s', ',.0f')}, "
                 f"accuracy {fmt(summary.get('accuracy'), '', '.4f')}")
    for ph in summary.get("phases") or []:
        lines.append(f"    {ph['name']:10s} {fmt(ph.get('wall_s'), ' s', '8.2f')}  peak {fmt(ph.get('peak_rss_mb'), ' MiB', '8.1f')}"
                     + ("   <- owns the peak" if ph["name"] == summary.get("peak_phase") else ""))
    return "\n".join(lines)


def cmd_run(args, home: str) -> int:
    from .datasets import preflight

    cfg = validate(knob_values(args))
    preflight(cfg, os.path.join(home, "cache"))  # what only the data can refuse: exit 2, nothing stored
    warn_before_launch(cfg, home)
    run = execute(cfg, home, show_progress=sys.stderr.isatty() and not args.json)
    summary = run.summary
    err = summary.get("error") or {}
    if run.status == RunStatus.FAILED and err.get("bad_input"):
        print(f"svmcore: error: {err.get('message')}", file=sys.stderr)
        code = EXIT_BAD_INPUT
    else:
        code = EXIT.get(run.status, 1)
    if args.json:
        print(json.dumps(summary))
    else:
        print(describe(summary))
    return code


# ---------------------------------------------------------------- data

def cmd_data(args, home: str) -> int:
    if args.data_command == "make":
        from .datasets_io import make_dataset
        rows = make_dataset(args.kind, rows=args.rows, features=args.features, nnz_per_row=args.nnz_per_row,
                            seed=args.seed, out=args.out, fmt=args.format)
        print(f"wrote {rows:,} rows to {args.out}")
        return 0
    from .datasets_io import inspect_dataset
    info = inspect_dataset(args.dataset, cache_dir=os.path.join(home, "cache"))
    if args.json:
        print(json.dumps(info))
    else:
        for k, v in info.items():
            print(f"{k:24s} {v}")
    return 0


def knobs_table(markdown: bool = True) -> str:
    rows = []
    for k in KNOBS.values():
        default = "unset" if k.default is None else k.default
        rows.append((f"`{k.flag}`", k.describe_allowed(), str(default), k.help, k.trades))
    if not markdown:
        return "\n\n".join(f"{r[0]} ({r[1]}; default {r[2]})\n  {r[3]}\n  trades: {r[4]}" for r in rows)
    out = ["| flag | allowed | default | what it does | what it trades |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- runs

def cmd_runs(args, home: str) -> int:
    from .runner import recover

    store = Store(home)
    recover(store)
    c = args.runs_command
    if c == "list":
        runs = store.list_runs()
        rows = [{"id": r.id, "status": r.status.value, "created_at": r.created_at,
                 "dataset": r.config.get("dataset"), "mode": r.config.get("mode"), "model": r.config.get("model"),
                 "peak_rss_mb": r.summary.get("peak_rss_mb"), "accuracy": r.summary.get("accuracy"),
                 "samples_per_s": r.summary.get("samples_per_s"), "wall_s": r.summary.get("wall_s"), "host": r.host}
                for r in runs]
        if args.json:
            print(json.dumps(rows))
        else:
            print(f"{'id':>5} {'status':10} {'created':19} {'dataset':14} {'mode':7} {'model':13} "
                  f"{'peak MiB':>9} {'acc':>6} {'samples/s':>11}")
            for r in rows:
                created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created_at"]))
                peak = f"{r['peak_rss_mb']:.1f}" if r["peak_rss_mb"] else "-"
                acc = f"{r['accuracy']:.3f}" if r["accuracy"] is not None else "-"
                sps = f"{r['samples_per_s']:,.0f}" if r["samples_per_s"] else "-"
                print(f"{r['id']:>5} {r['status']:10} {created:19} {str(r['dataset'])[:14]:14} {r['mode']:7} "
                      f"{r['model']:13} {peak:>9} {acc:>6} {sps:>11}")
        return 0
    rec = store.get_run(args.id)
    if rec is None:
        print(f"svmcore: error: no run with id {args.id}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if c == "delete":
        if not rec.status.is_finished():
            print(f"svmcore: error: run {args.id} is still {rec.status.value}; cancel it first", file=sys.stderr)
            return EXIT_BAD_INPUT
        store.delete_run(args.id)
        print(f"deleted run {args.id}")
        return 0
    record = run_export(store, args.id)
    if c == "show":
        if args.json:
            print(json.dumps(record))
        else:
            print(describe(rec.summary or {"run_id": rec.id, "status": rec.status.value}))
            print("  config: " + ", ".join(f"{k}={v}" for k, v in rec.config.items()))
            print(f"  {len(record['samples'])} memory samples, {len(record['events'])} events")
        return 0
    if args.format == "json":
        print(json.dumps(record))
    else:
        sys.stdout.write(samples_csv(record))
    return 0


def run_export(store: Store, run_id: int) -> dict:
    """Everything about one run as plain data: config, summary, samples, events."""
    rec = store.get_run(run_id)
    return {"id": rec.id, "status": rec.status.value, "created_at": rec.created_at, "finished_at": rec.finished_at,
            "host": rec.host, "host_cpus": rec.host_cpus, "host_memory_bytes": rec.host_memory_bytes,
            "config": rec.config, "summary": rec.summary,
            "samples": [dict(zip(("t_s", "rss_bytes", "anon_bytes", "file_bytes", "hwm_bytes"), s))
                        for s in store.samples(run_id)],
            "events": store.events(run_id)}


def samples_csv(record: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["run_id", "t_s", "rss_bytes", "anon_bytes", "file_bytes", "hwm_bytes"])
    for s in record["samples"]:
        w.writerow([record["id"], f"{s['t_s']:.4f}", s["rss_bytes"], s["anon_bytes"], s["file_bytes"], s["hwm_bytes"]])
    return buf.getvalue()
